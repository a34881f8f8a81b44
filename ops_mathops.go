package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Everyday elementwise functions of torch that lathe builds as composites
// of its own ops, so that each runs on every device and float dtype,
// differentiable to any order: log2, log10, exp2, trunc, frac, logit,
// xlogy, hypot, logaddexp, logaddexp2, copysign, heaviside, fmax, fmin,
// sinc, deg2rad, rad2deg, softshrink, hardshrink and tanhshrink. Each
// follows torch 1.13's cpu formula; float16 and bfloat16 are computed in
// float32 and rounded once, as torch's kernels do (inFloat32), except
// where the result is exact in any float dtype (trunc, frac, fmax, fmin,
// copysign, heaviside).
//
// Dtypes: the unary functions of floats take float tensors only, as
// lathe's Log and Exp do (torch would promote an integer tensor to
// float32: cast it first). The binary ones promote their arguments as
// Div does (two integer tensors give float32), except fmax and fmin,
// which promote as Maximum and take every dtype, and heaviside, which
// needs one dtype for both, as torch's.

// mathAttrs are the number attributes of the composites here (logit's
// eps, the shrinks' lambda); the others take none.
type mathAttrs struct{ a float64 }

// unaryMath registers a composite of one float tensor computed by f, in
// float32 for the 16-bit dtypes when wide is set.
func unaryMath(name string, wide bool, f func(x *Tensor, a mathAttrs) *Tensor) *dispatch.Op[mathAttrs] {
	return composite(name, []string{"x"}, func(in []*Tensor, a mathAttrs) *Tensor {
		if !wide {
			return f(in[0], a)
		}
		return inFloat32(in, func(in []*Tensor) *Tensor { return f(in[0], a) })
	})
}

// binaryMath registers a composite of two tensors that the caller has
// promoted to one dtype (mathPair), computed by f, in float32 for the
// 16-bit dtypes when wide is set.
func binaryMath(name string, args []string, wide bool, f func(x, y *Tensor) *Tensor) *dispatch.Op[dispatch.DType] {
	return composite(name, args, func(in []*Tensor, dt dispatch.DType) *Tensor {
		x, y := in[0].Cast(dt), in[1].Cast(dt)
		if !wide {
			return f(x, y)
		}
		return inFloat32([]*Tensor{x, y}, func(in []*Tensor) *Tensor { return f(in[0], in[1]) })
	})
}

// floatsOnly refuses an x that op cannot take: a failed one, or one whose
// dtype is not a float.
func (x *Tensor) floatsOnly(op string) error {
	if err := x.check(op); err != nil {
		return err
	}
	return x.isFloat(op, "x")
}

// floatsOnlyArg is floatsOnly for x as op's argument arg.
func (x *Tensor) floatsOnlyArg(op, arg string) error {
	if err := x.CheckArg(op, arg); err != nil {
		return err
	}
	return x.isFloat(op, arg)
}

func (x *Tensor) isFloat(op, arg string) error {
	if !x.t.DType.IsFloat() {
		return errorf(op, ErrDType, arg, "is "+x.t.DType.String()+" but "+op+" takes floats (lathe's float functions do not promote integers, as torch's do)",
			"cast it with .Cast(lathe.Float32) first")
	}
	return nil
}

// callUnary is op on a float x.
func (x *Tensor) callUnary(op *dispatch.Op[mathAttrs], a mathAttrs) *Tensor {
	if err := x.floatsOnly(op.Name); err != nil {
		return failed(err)
	}
	return apply(op, a, x)
}

// mathPair checks op's two arguments (x and the one named arg) and
// returns the dtype op computes in: as promote promotes them (ops.Div:
// integers to float32; ops.Maximum: any dtype), or x's dtype, which y
// must share, where promote is nil. Their shapes must broadcast: the
// error names op's argument, not that of an op inside it.
func mathPair(op, arg string, x, y *Tensor, promote *dispatch.Op[dispatch.None]) (DType, error) {
	if err := x.check(op); err != nil {
		return 0, err
	}
	if err := y.CheckArg(op, arg); err != nil {
		return 0, err
	}
	if _, ok := ops.BroadcastShapes(x.t.Shape, y.t.Shape); !ok {
		e := errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(y.t.Shape)+", which does not broadcast with x's "+
			dispatch.FormatShape(x.t.Shape), "make each dimension equal or 1, e.g. with Reshape or Unsqueeze")
		e.Expected, e.Found = dispatch.FormatShape(x.t.Shape), dispatch.FormatShape(y.t.Shape)
		return 0, e
	}
	if promote == nil {
		if y.t.DType != x.t.DType {
			return 0, errorf(op, ErrDType, arg, "is "+y.t.DType.String()+" but x is "+x.t.DType.String()+" ("+op+" does not promote, as torch's)",
				"cast it with .Cast("+x.t.DType.GoString()+")")
		}
		return x.t.DType, nil
	}
	dt, err := ops.BinaryDType(promote, dispatch.OperandOf(x.t), dispatch.OperandOf(y.t))
	if err != nil {
		return 0, located(err, op)
	}
	return dt, nil
}

// callBinary is op on x and y promoted by promote (mathPair).
func (x *Tensor) callBinary(op *dispatch.Op[dispatch.DType], y *Tensor, promote *dispatch.Op[dispatch.None]) *Tensor {
	dt, err := mathPair(op.Name, op.ArgName(1), x, y, promote)
	if err != nil {
		return failed(err)
	}
	return apply(op, dt, x, y)
}

// exactLog is log(x)/ln(base) for base 2 or 10, made exact where x is a
// power of the base: log(1000)/ln(10) is 2.9999999999999996 in float64,
// whose floor is 2, where torch's log10 gives 3. Where base^round(y) is x,
// the value is round(y) with y's gradient (y + (round(y) - y), the
// difference taken from y detached).
func exactLog(op string, x *Tensor, base float64) *Tensor {
	y := x.Log().MulScalar(1 / math.Log(base))
	yd := y.joined(y.Detach())
	r := yd.Round()
	exact := x.scalarLike(op, base).Pow(r).Eq(x).LogicalAnd(yd.IsFinite())
	return y.Add(Where(exact, r.Sub(yd), x.scalarLike(op, 0)))
}

// opmathConst is c as torch's kernels hold it for dtype dt: float32 for
// float32 and the 16-bit dtypes (their opmath type), float64 for float64.
func opmathConst(dt DType, c float64) float64 {
	if dt == Float64 {
		return c
	}
	return float64(float32(c))
}

var (
	opLog2  = unaryMath("log2", true, func(x *Tensor, _ mathAttrs) *Tensor { return exactLog("log2", x, 2) })
	opLog10 = unaryMath("log10", true, func(x *Tensor, _ mathAttrs) *Tensor { return exactLog("log10", x, 10) })
	// exp2 is 2^x by pow, exact at integers as torch's; its gradient is
	// pow's, 2^x·ln 2.
	opExp2  = unaryMath("exp2", true, func(x *Tensor, _ mathAttrs) *Tensor { return x.scalarLike("exp2", 2).Pow(x) })
	opTrunc = unaryMath("trunc", false, func(x *Tensor, _ mathAttrs) *Tensor {
		if !x.t.DType.IsFloat() {
			return x
		}
		return Where(x.LtScalar(0), x.Ceil(), x.Floor())
	})
	// frac is x - trunc(x), exact in every float dtype, with gradient 1
	// (derivatives.yaml "frac": grad); ±Inf gives NaN, as torch's.
	opFrac = unaryMath("frac", false, func(x *Tensor, _ mathAttrs) *Tensor {
		return x.Sub(Where(x.LtScalar(0), x.Ceil(), x.Floor()))
	})
	// logit is log(z/(1-z)), z = x clamped to [eps, 1-eps] where eps ≥ 0
	// (NaN kept), whose gradient is zero outside that interval
	// (logit_backward).
	opLogit = unaryMath("logit", true, func(x *Tensor, a mathAttrs) *Tensor {
		z := x
		if a.a >= 0 {
			lo, hi := x.scalarLike("logit", a.a), x.scalarLike("logit", 1-a.a)
			z = Where(x.Lt(lo), lo, Where(x.Gt(hi), hi, x))
		}
		return z.Div(z.MulScalar(-1).AddScalar(1)).Log()
	})
	// sinc is sin(πx)/(πx), 1 at 0 (its gradient there 0, as torch's),
	// with π in the opmath type, as torch's kernel holds it.
	opSinc = unaryMath("sinc", true, func(x *Tensor, _ mathAttrs) *Tensor {
		zero := x.EqScalar(0)
		one := x.scalarLike("sinc", 1)
		px := Where(zero, one, x).MulScalar(opmathConst(x.t.DType, math.Pi))
		return Where(zero, one, px.Sin().Div(px))
	})
	opDeg2Rad = unaryMath("deg2rad", true, func(x *Tensor, _ mathAttrs) *Tensor {
		return x.MulScalar(opmathConst(x.t.DType, math.Pi/180))
	})
	opRad2Deg = unaryMath("rad2deg", true, func(x *Tensor, _ mathAttrs) *Tensor {
		return x.MulScalar(opmathConst(x.t.DType, 180/math.Pi))
	})
	// softshrink is x-λ above λ, x+λ below -λ and 0 between, NaN giving 0
	// as torch 1.13's cpu kernel (the comparisons are false).
	opSoftshrink = unaryMath("softshrink", true, func(x *Tensor, a mathAttrs) *Tensor {
		zero := x.scalarLike("softshrink", 0)
		xp := x.piecewise() // the gradient, differentiated again, gives x zeros, as torch's softshrink_backward
		return Where(x.GtScalar(a.a), xp.SubScalar(a.a), Where(x.LtScalar(-a.a), xp.AddScalar(a.a), zero))
	})
	// hardshrink is 0 on [-λ, λ] and x elsewhere (NaN kept).
	opHardshrink = unaryMath("hardshrink", false, func(x *Tensor, a mathAttrs) *Tensor {
		inside := x.GeScalar(-a.a).LogicalAnd(x.LeScalar(a.a))
		return Where(inside, x.scalarLike("hardshrink", 0), x.piecewise())
	})
	opTanhshrink = unaryMath("tanhshrink", true, func(x *Tensor, _ mathAttrs) *Tensor { return x.Sub(x.Tanh()) })
)

// Log2 is the base-2 logarithm of x, as torch.log2: exact where x is a
// power of 2 (NaN below 0, -Inf at 0). Floats only.
func (x *Tensor) Log2() *Tensor { return x.callUnary(opLog2, mathAttrs{}) }

// Log10 is the base-10 logarithm of x, as torch.log10: exact where x is a
// power of 10 that the dtype holds. Floats only.
func (x *Tensor) Log10() *Tensor { return x.callUnary(opLog10, mathAttrs{}) }

// Exp2 is 2ˣ, as torch.exp2: exact at integers. Floats only.
func (x *Tensor) Exp2() *Tensor { return x.callUnary(opExp2, mathAttrs{}) }

// Trunc rounds x toward zero, as torch.trunc (-0.5 gives -0); its
// gradient is zero. An integer x is returned as it is; bool is ErrDType,
// as torch's.
func (x *Tensor) Trunc() *Tensor {
	const op = "trunc"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if x.t.DType == Bool {
		return failed(errorf(op, ErrDType, "x", "is bool, which trunc does not take (torch has no trunc for bool)",
			"cast it with .Cast(lathe.Int32) first"))
	}
	return apply(opTrunc, mathAttrs{}, x)
}

// Frac is the fractional part x - trunc(x), with x's sign, as torch.frac;
// ±Inf gives NaN. Its gradient is 1. Floats only (torch has no integer
// frac).
func (x *Tensor) Frac() *Tensor { return x.callUnary(opFrac, mathAttrs{}) }

// Logit is log(x/(1-x)), the inverse of Sigmoid, as torch.logit(x):
// -Inf at 0, +Inf at 1, NaN outside [0, 1]. Floats only.
func (x *Tensor) Logit() *Tensor { return x.callUnary(opLogit, mathAttrs{a: -1}) }

// LogitEps is Logit of x clamped to [eps, 1-eps], as torch.logit(x, eps),
// whose gradient is zero outside that interval. A negative eps clamps
// nothing, as torch's. An eps above 0.5 (an empty interval, where torch
// 1.13's vectorised and scalar loops give values of opposite signs) or NaN
// is ErrValue.
func (x *Tensor) LogitEps(eps float64) *Tensor {
	if math.IsNaN(eps) || eps > 0.5 {
		return failed(errorf("logit", ErrValue, "eps", "is "+ftoa(eps)+", which leaves no interval [eps, 1-eps] to clamp to",
			"use an eps in [0, 0.5] such as 1e-6, or Logit for none"))
	}
	return x.callUnary(opLogit, mathAttrs{a: eps})
}

// Sinc is the normalised sinc function sin(πx)/(πx), 1 at 0, as
// torch.sinc. Floats only.
func (x *Tensor) Sinc() *Tensor { return x.callUnary(opSinc, mathAttrs{}) }

// Deg2Rad converts degrees to radians, x·π/180, as torch.deg2rad. Floats
// only.
func (x *Tensor) Deg2Rad() *Tensor { return x.callUnary(opDeg2Rad, mathAttrs{}) }

// Rad2Deg converts radians to degrees, x·180/π, as torch.rad2deg. Floats
// only.
func (x *Tensor) Rad2Deg() *Tensor { return x.callUnary(opRad2Deg, mathAttrs{}) }

// Softshrink is x-lambda above lambda, x+lambda below -lambda and 0
// between, as torch.nn.functional.softshrink (torch's default lambda is
// 0.5); NaN gives 0, as torch 1.13's cpu kernel. Floats only; a negative
// or NaN lambda is ErrValue.
func (x *Tensor) Softshrink(lambda float64) *Tensor {
	if !(lambda >= 0) {
		return failed(errorf("softshrink", ErrValue, "lambd", "is "+ftoa(lambda)+" but must be 0 or more, as torch's",
			"use a lambda ≥ 0 (torch's default is 0.5)"))
	}
	return x.callUnary(opSoftshrink, mathAttrs{a: lambda})
}

// Hardshrink is 0 where -lambda ≤ x ≤ lambda and x elsewhere, as
// torch.nn.functional.hardshrink (torch's default lambda is 0.5). Floats
// only; a NaN lambda is ErrValue.
func (x *Tensor) Hardshrink(lambda float64) *Tensor {
	if math.IsNaN(lambda) {
		return failed(errorf("hardshrink", ErrValue, "lambd", "is NaN", "use a number (torch's default is 0.5)"))
	}
	return x.callUnary(opHardshrink, mathAttrs{a: lambda})
}

// Tanhshrink is x - tanh(x), as torch.nn.functional.tanhshrink. Floats
// only.
func (x *Tensor) Tanhshrink() *Tensor { return x.callUnary(opTanhshrink, mathAttrs{}) }

var (
	// xlogy is x·log(y), 0 where x is 0 and NaN where y is NaN, as torch's
	// kernel; its gradients are torch 1.13's log(y) and x/y
	// (derivatives.yaml "xlogy"), but for 0 where x is 0 and log(y) is not
	// a number (y ≤ 0 or +Inf), whose product with x would be NaN.
	opXlogy = binaryMath("xlogy", []string{"x", "y"}, true, func(x, y *Tensor) *Tensor {
		l := y.Log()
		off := x.EqScalar(0).LogicalAnd(l.IsFinite().LogicalNot()).LogicalAnd(y.IsNaN().LogicalNot())
		l = Where(off, y.scalarLike("xlogy", 0), l)
		return x.Mul(l).AddScalar(0) // -0 (0 times a negative log) is +0, as torch's
	})
	// hypot is m·√((x/m)² + (y/m)²) with m = max(|x|, |y|) taken as a
	// constant, so that neither square overflows nor underflows and the
	// gradients are torch's x/r and y/r (NaN at the origin, as torch's);
	// an infinite argument gives +Inf, NaN or not the other, as C's hypot.
	opHypot = binaryMath("hypot", []string{"x", "y"}, true, func(x, y *Tensor) *Tensor {
		const op = "hypot"
		xd, yd := x.joined(x.Detach()), y.joined(y.Detach())
		m := xd.Abs().Maximum(yd.Abs())
		m = Where(m.EqScalar(0).LogicalOr(m.IsFinite().LogicalNot()), m.scalarLike(op, 1), m)
		xs, ys := x.Div(m), y.Div(m)
		r := xs.Mul(xs).Add(ys.Mul(ys)).Sqrt().Mul(m)
		inf := x.IsInf().LogicalOr(y.IsInf())
		return Where(inf, r.scalarLike(op, math.Inf(1)), r)
	})
	opLogAddExp = binaryMath("logaddexp", []string{"x", "y"}, true, func(x, y *Tensor) *Tensor {
		return logAddExp("logaddexp", x, y, false)
	})
	opLogAddExp2 = binaryMath("logaddexp2", []string{"x", "y"}, true, func(x, y *Tensor) *Tensor {
		return logAddExp("logaddexp2", x, y, true)
	})
	// copysign is |x| with y's sign, -0 counting as negative; its gradient
	// is x's sign times y's where x ≠ 0 (copysign_tensor_self_backward),
	// none to y.
	opCopysign = binaryMath("copysign", []string{"x", "y"}, false, func(x, y *Tensor) *Tensor {
		neg := y.LtScalar(0).LogicalOr(y.Reciprocal().LtScalar(0))
		a := x.Abs()
		return Where(neg, a.Neg(), a)
	})
	// heaviside is values where x is 0, else 1 where x > 0 and 0 below
	// (and for NaN), in x's dtype; values' gradient goes through where
	// (torch has none).
	opHeaviside = binaryMath("heaviside", []string{"x", "values"}, false, func(x, v *Tensor) *Tensor {
		step := x.GtScalar(0).Cast(x.t.DType)
		return Where(x.EqScalar(0), v, step)
	})
	// fmax and fmin take the other argument where one is NaN; the gradient
	// goes to x where x ≥ y (x ≤ y), or y is NaN, else to y, ties not
	// split (derivatives.yaml "fmax", "fmin").
	opFmax = binaryMath("fmax", []string{"x", "y"}, false, func(x, y *Tensor) *Tensor {
		return Where(x.Ge(y).LogicalOr(y.Ne(y)), x, y)
	})
	opFmin = binaryMath("fmin", []string{"x", "y"}, false, func(x, y *Tensor) *Tensor {
		return Where(x.Le(y).LogicalOr(y.Ne(y)), x, y)
	})
)

// logAddExp is log(eˣ + eʸ) (base 2 where two is set), with torch's
// value m + log1p(exp(-|x-y|)) for m = max(x, y), and x where x = y = ±Inf.
// It is written as m + log1p(exp(a)) with a = y-x where x ≥ y and x-y
// elsewhere, so that each side is smooth through a tie, where the
// gradients are ½ each and the second derivatives ¼ (|x-y| has none).
// At a tie of infinities the result is (x+y)/2, with gradients ½ each,
// and a, NaN there, is 0, so that no NaN reaches the gradient (torch's
// is NaN): logcumsumexp's -Inf elements add nothing to it.
func logAddExp(op string, x, y *Tensor, two bool) *Tensor {
	ge := x.Ge(y)
	d := y.Sub(x)
	infTie := x.Eq(y).LogicalAnd(x.IsInf())
	a := Where(infTie, d.scalarLike(op, 0), Where(ge, d, d.Neg()))
	var t *Tensor
	if two {
		t = a.MulScalar(math.Ln2).Exp().Log1p().MulScalar(1 / math.Ln2)
	} else {
		t = a.Exp().Log1p()
	}
	out := Where(ge, x, y).Add(t)
	return Where(infTie, x.Add(y).MulScalar(0.5), out)
}

// Xlogy is x·log(y), 0 where x is 0 (even where y is 0 or Inf) and NaN
// where y is NaN, as torch.xlogy; broadcast, integers promoted to
// float32. Where x is 0 and y is 0, negative or +Inf, both gradients are 0
// (torch's are ±Inf or NaN).
func (x *Tensor) Xlogy(y *Tensor) *Tensor { return x.callBinary(opXlogy, y, ops.Div) }

// Hypot is √(x² + y²) without overflow or underflow on the way, as
// torch.hypot; broadcast, integers promoted to float32. Float16 works
// (computed in float32), where torch 1.13's cpu has no kernel.
func (x *Tensor) Hypot(y *Tensor) *Tensor { return x.callBinary(opHypot, y, ops.Div) }

// LogAddExp is log(eˣ + eʸ), computed stably, as torch.logaddexp;
// broadcast, integers promoted to float32. Where x and y are the same
// infinity the gradient is ½ each, not torch's NaN.
func (x *Tensor) LogAddExp(y *Tensor) *Tensor { return x.callBinary(opLogAddExp, y, ops.Div) }

// LogAddExp2 is log₂(2ˣ + 2ʸ), computed stably, as torch.logaddexp2;
// broadcast, integers promoted to float32.
func (x *Tensor) LogAddExp2(y *Tensor) *Tensor { return x.callBinary(opLogAddExp2, y, ops.Div) }

// Copysign is |x| with the sign of y, as torch.copysign; -0 is negative.
// Broadcast, integers promoted to float32. Unlike torch, a NaN y counts as
// positive whatever its sign bit (lathe has no op that reads it).
func (x *Tensor) Copysign(y *Tensor) *Tensor { return x.callBinary(opCopysign, y, ops.Div) }

// Heaviside is the step function of x, with values where x is 0, as
// torch.heaviside(x, values): 1 where x > 0, 0 where x < 0 or NaN.
// Broadcast; values must have x's dtype, as torch's. Values' gradient
// flows where x is 0 (torch has no gradient for heaviside).
func (x *Tensor) Heaviside(values *Tensor) *Tensor { return x.callBinary(opHeaviside, values, nil) }

// Fmax is the larger of x and y, the other where one is NaN (NaN where
// both are), as torch.fmax; broadcast and promoted as Maximum, every
// dtype.
func (x *Tensor) Fmax(y *Tensor) *Tensor { return x.callBinary(opFmax, y, ops.Maximum) }

// Fmin is the smaller of x and y, the other where one is NaN, as
// torch.fmin; otherwise as Fmax.
func (x *Tensor) Fmin(y *Tensor) *Tensor { return x.callBinary(opFmin, y, ops.Maximum) }
