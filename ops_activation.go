package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Activations as composites of ops every backend has, so that each runs on
// every device and float dtype (float16 and bfloat16 too, computed in
// float32 and rounded once, as torch's kernels compute them: inFloat32),
// differentiable to any order. Each follows
// torch 1.13's forward formula and its gradient convention at the kinks,
// which derivatives.yaml's backward functions fix and which a composite
// would otherwise get from where and clamp's rules:
//
//   - elu, selu, celu (elu_backward): the negative branch takes x ≤ 0, so
//     the gradient at 0 is alpha·scale·input_scale; NaN's is NaN.
//   - hardtanh and relu6 (hardtanh_backward), hardsigmoid: the gradient is
//     zero at the bounds and at NaN, the value's own there (x at a bound,
//     -0 kept); the where that picks x takes only the open interval.
//   - hardswish: x·clamp(x+3, 0, 6)/6 as torch writes it below 3, whose
//     clamp's gradient passes at -3 (-0.5, as hardswish_backward), and x
//     from 3 on (gradient 1 at 3).
//
// Where torch 1.13's cpu kernels disagree between their vectorised loop
// and their scalar tail (the gradient at NaN of elu, hardtanh and relu6,
// hardswish's at 3), lathe follows the vectorised loop, which computes all
// but the last few elements of a tensor.
//   - threshold (threshold_backward): x ≤ threshold takes the value and a
//     zero gradient, NaN keeps x and its gradient.
//   - hardtanh, relu6 and threshold pass x on through x.piecewise(), so that
//     their gradient, differentiated again, gives x zeros, as torch's
//     backward functions do (clamp's and where's do not depend on x there,
//     as torch's).
//   - logsigmoid is -softplus(-x), linear only past 40, where softplus's
//     float64 error is below an ulp: stable at both ends (0 and x), with
//     gradient sigmoid(-x) as log_sigmoid_backward.

// eluAttrs are elu's parameters, as torch's elu(x, alpha, scale,
// input_scale): scale·x for x > 0, else alpha·scale·(exp(x·input_scale)-1).
type eluAttrs struct{ alpha, scale, inputScale float64 }

var opELU = composite("elu", []string{"x"}, func(in []*Tensor, a eluAttrs) *Tensor {
	return inFloat32(in, func(in []*Tensor) *Tensor { return elu(in[0], a) })
})

func elu(x *Tensor, a eluAttrs) *Tensor {
	pos := x.GtScalar(0)
	// The negative branch sees 0 where x > 0, so that its exp cannot
	// overflow there and send 0·Inf back as the gradient; NaN goes to it
	// (x > 0 is false), which makes its value and gradient NaN, as torch's.
	neg := Where(pos, x.scalarLike("elu", 0), x)
	if a.inputScale != 1 {
		neg = neg.MulScalar(a.inputScale)
	}
	neg = neg.Expm1().MulScalar(a.alpha * a.scale)
	p := x
	if a.scale != 1 {
		p = x.MulScalar(a.scale)
	}
	return Where(pos, p, neg)
}

// ELU is x for x > 0 and alpha·(exp(x)-1) otherwise, as
// torch.nn.functional.elu (torch's default alpha is 1). Floats only; a NaN
// alpha is ErrValue.
func (x *Tensor) ELU(alpha float64) *Tensor {
	return x.elu("elu", eluAttrs{alpha: alpha, scale: 1, inputScale: 1})
}

// SELU is scale·ELU(x, alpha) with torch's constants (alpha ≈ 1.6733,
// scale ≈ 1.0507), as torch.nn.functional.selu. Floats only.
func (x *Tensor) SELU() *Tensor {
	const alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
	return x.elu("selu", eluAttrs{alpha: alpha, scale: scale, inputScale: 1})
}

// CELU is max(0, x) + min(0, alpha·(exp(x/alpha)-1)), as
// torch.nn.functional.celu (torch's default alpha is 1). Floats only; an
// alpha of 0 or NaN is ErrValue.
func (x *Tensor) CELU(alpha float64) *Tensor {
	if alpha == 0 {
		return failed(errorf("celu", ErrValue, "alpha", "is 0, and celu divides by it", "use a nonzero alpha (torch's default is 1)"))
	}
	return x.elu("celu", eluAttrs{alpha: alpha, scale: 1, inputScale: 1 / alpha})
}

func (x *Tensor) elu(op string, a eluAttrs) *Tensor {
	if err := x.floatActivation(op); err != nil {
		return failed(err)
	}
	if math.IsNaN(a.alpha) {
		return failed(errorf(op, ErrValue, "alpha", "is NaN", "use a number (torch's default is 1)"))
	}
	return relabel(apply(opELU, a, x), op)
}

// floatActivation refuses an x that op cannot take: a failed one, or one
// whose dtype is not a float, as torch's kernels are float only.
func (x *Tensor) floatActivation(op string) error {
	if err := x.check(op); err != nil {
		return err
	}
	if !x.t.DType.IsFloat() {
		return errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but "+op+" takes floats (torch has no "+op+" for it)",
			"cast it with .Cast(lathe.Float32) first")
	}
	return nil
}

// numberActivation refuses a failed x or a bool one, a NaN bound, and a
// bound that x's integer dtype cannot hold: a fraction too, even a
// threshold's, which torch truncates (threshold -0.5 replaces 0).
func (x *Tensor) numberActivation(op string, names []string, vals ...float64) error {
	if err := x.check(op); err != nil {
		return err
	}
	if x.t.DType == Bool {
		return errorf(op, ErrDType, "x", "is bool but "+op+" takes numbers (torch has no "+op+" for bool)",
			"cast it with .Cast(lathe.Float32) first")
	}
	for i, v := range vals {
		arg := names[i]
		if arg != "value" && math.IsNaN(v) {
			return errorf(op, ErrValue, arg, "is NaN", "use a number")
		}
		if x.t.DType.IsInt() {
			if err := ops.CheckScalar(x.t.DType, v, arg); err != nil {
				return located(err, op)
			}
		}
	}
	return nil
}

// clampAttrs are hardtanh's bounds.
type clampAttrs struct{ lo, hi float64 }

var opHardtanh = composite("hardtanh", []string{"x"}, func(in []*Tensor, a clampAttrs) *Tensor {
	x := in[0]
	const op = "hardtanh"
	// Outside the open interval the value is a bound, or x itself at a
	// bound or NaN, with no gradient (x detached).
	xd := x.joined(x.Detach())
	out := Where(x.LtScalar(a.lo), x.scalarLike(op, a.lo), Where(x.GtScalar(a.hi), x.scalarLike(op, a.hi), xd))
	return Where(x.GtScalar(a.lo).LogicalAnd(x.LtScalar(a.hi)), x.piecewise(), out)
})

// piecewise is x on the path through which a piecewise-linear op passes it
// on (ops.Piecewise): its gradient, differentiated again, gives x zeros.
func (x *Tensor) piecewise() *Tensor { return apply(ops.Piecewise, none, x) }

// Hardtanh is x clamped to [lo, hi], as torch.nn.functional.hardtanh
// (torch's defaults are -1 and 1), with torch's gradient: 1 strictly
// inside, 0 at the bounds, outside and at NaN. Integers too (bounds that
// the dtype holds), not bool. lo above hi, or a NaN bound, is ErrValue
// (torch computes hi there).
func (x *Tensor) Hardtanh(lo, hi float64) *Tensor { return x.hardtanh("hardtanh", lo, hi) }

// ReLU6 is Hardtanh(0, 6), as torch.nn.functional.relu6: its gradient is 0
// at 0 and at 6.
func (x *Tensor) ReLU6() *Tensor { return x.hardtanh("relu6", 0, 6) }

func (x *Tensor) hardtanh(op string, lo, hi float64) *Tensor {
	if err := x.numberActivation(op, []string{"min_val", "max_val"}, lo, hi); err != nil {
		return failed(err)
	}
	if lo > hi {
		return failed(errorf(op, ErrValue, "min_val", "is "+ftoa(lo)+", above max_val "+ftoa(hi), "give min_val ≤ max_val"))
	}
	return relabel(apply(opHardtanh, clampAttrs{lo: lo, hi: hi}, x), op)
}

var opHardsigmoid = composite("hardsigmoid", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	return inFloat32(in, func(in []*Tensor) *Tensor { return hardsigmoid(in[0]) })
})

func hardsigmoid(x *Tensor) *Tensor {
	lin := x.AddScalar(3).DivScalar(6)
	// Outside (-3, 3), and at NaN, the clamped value with no gradient.
	out := lin.Clamp(0, 1)
	out = out.joined(out.Detach())
	return Where(x.GtScalar(-3).LogicalAnd(x.LtScalar(3)), lin, out)
}

// Hardsigmoid is clamp(x+3, 0, 6)/6, as torch.nn.functional.hardsigmoid,
// with gradient 1/6 strictly inside (-3, 3) and 0 elsewhere. Floats only.
func (x *Tensor) Hardsigmoid() *Tensor {
	if err := x.floatActivation("hardsigmoid"); err != nil {
		return failed(err)
	}
	return apply(opHardsigmoid, none, x)
}

var opHardswish = composite("hardswish", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	return inFloat32(in, func(in []*Tensor) *Tensor {
		x := in[0]
		return Where(x.GeScalar(3), x, x.Mul(x.AddScalar(3).Clamp(0, 6)).DivScalar(6))
	})
})

// Hardswish is x·clamp(x+3, 0, 6)/6, as torch.nn.functional.hardswish (NaN
// at -Inf, as torch's -Inf·0), with the gradient of torch's vectorised cpu
// loop: x/3 + 1/2 on [-3, 3), 0 below, 1 from 3 on, NaN at NaN. (Its
// scalar loop and cuda give 1.5 at 3 and 1 at NaN.) Floats only.
func (x *Tensor) Hardswish() *Tensor {
	if err := x.floatActivation("hardswish"); err != nil {
		return failed(err)
	}
	return apply(opHardswish, none, x)
}

var opMish = composite("mish", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	return inFloat32(in, func(in []*Tensor) *Tensor {
		x := in[0]
		return x.Mul(x.Softplus().Tanh())
	})
})

// Mish is x·tanh(softplus(x)), as torch.nn.functional.mish. Floats only.
func (x *Tensor) Mish() *Tensor {
	if err := x.floatActivation("mish"); err != nil {
		return failed(err)
	}
	return apply(opMish, none, x)
}

var opSoftsign = composite("softsign", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	x := in[0]
	return x.Div(x.Abs().AddScalar(1))
})

// Softsign is x/(1+|x|), as torch.nn.functional.softsign: an integer x
// divides into float32, as torch's; bool is ErrDType.
func (x *Tensor) Softsign() *Tensor {
	if err := x.check("softsign"); err != nil {
		return failed(err)
	}
	if x.t.DType == Bool {
		return failed(errorf("softsign", ErrDType, "x", "is bool but softsign takes numbers (torch has no abs for bool)",
			"cast it with .Cast(lathe.Float32) first"))
	}
	return apply(opSoftsign, none, x)
}

var opLogSigmoid = composite("logsigmoid", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	return inFloat32(in, func(in []*Tensor) *Tensor { return in[0].Neg().SoftplusWith(1, 40).Neg() })
})

// LogSigmoid is log(sigmoid(x)) = -softplus(-x), as
// torch.nn.functional.logsigmoid, accurate for large |x| of either sign.
// Floats only.
func (x *Tensor) LogSigmoid() *Tensor {
	if err := x.floatActivation("logsigmoid"); err != nil {
		return failed(err)
	}
	return apply(opLogSigmoid, none, x)
}

// thresholdAttrs are threshold's parameters.
type thresholdAttrs struct{ threshold, value float64 }

var opThreshold = composite("threshold", []string{"x"}, func(in []*Tensor, a thresholdAttrs) *Tensor {
	x := in[0]
	return Where(x.LeScalar(a.threshold), x.scalarLike("threshold", a.value), x.piecewise())
})

// Threshold is value where x ≤ threshold and x elsewhere (NaN stays), as
// torch.nn.functional.threshold; the gradient is zero where the value was
// put. Integers too (a value the dtype holds), not bool; a NaN threshold
// is ErrValue.
func (x *Tensor) Threshold(threshold, value float64) *Tensor {
	const op = "threshold"
	if err := x.numberActivation(op, []string{"threshold", "value"}, threshold, value); err != nil {
		return failed(err)
	}
	return apply(opThreshold, thresholdAttrs{threshold: threshold, value: value}, x)
}
