package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Elementwise ops. Binary ops broadcast as NumPy does and promote dtypes
// as PyTorch's torch.result_type (dispatch.ResultType): an int32 and a
// float32 tensor add in float32, a float32 and a float64 one in float64,
// while a 0-d tensor or a Go scalar lifts only across categories (bool <
// integer < float): a float32 tensor plus a 0-d float64 is float32, an
// int32 tensor plus 2.5 is float32. The operands are cast to that dtype
// before the kernel, and the casts are recorded, so each input's gradient
// comes back in its own dtype. Comparisons compute in that dtype and give
// Bool.

// Neg is -x.
func (x *Tensor) Neg() *Tensor { return unary(ops.Neg, x) }

// Abs is |x|.
func (x *Tensor) Abs() *Tensor { return unary(ops.Abs, x) }

// Sign is -1, 0 or 1 by the sign of x (NaN stays NaN).
func (x *Tensor) Sign() *Tensor { return unary(ops.Sign, x) }

// Square is x·x.
func (x *Tensor) Square() *Tensor { return unary(ops.Square, x) }

// ReLU is max(x, 0) (NaN stays NaN). Its gradient is 0 where x ≤ 0 and 1
// elsewhere, NaN included, as torch's threshold_backward.
func (x *Tensor) ReLU() *Tensor { return unary(ops.ReLU, x) }

// Floor rounds x down to an integer.
func (x *Tensor) Floor() *Tensor { return unary(ops.Floor, x) }

// Ceil rounds x up to an integer.
func (x *Tensor) Ceil() *Tensor { return unary(ops.Ceil, x) }

// Round rounds x to the nearest integer, half to even, as torch.round.
func (x *Tensor) Round() *Tensor { return unary(ops.Round, x) } // half to even, as torch.round

// Exp is eˣ.
func (x *Tensor) Exp() *Tensor { return unary(ops.Exp, x) }

// Log is the natural logarithm (NaN below 0, -Inf at 0).
func (x *Tensor) Log() *Tensor { return unary(ops.Log, x) }

// Log1p is log(1 + x), accurate for x near 0.
func (x *Tensor) Log1p() *Tensor { return unary(ops.Log1p, x) }

// Expm1 is eˣ - 1, accurate for x near 0.
func (x *Tensor) Expm1() *Tensor { return unary(ops.Expm1, x) }

// Sqrt is √x (NaN below 0).
func (x *Tensor) Sqrt() *Tensor { return unary(ops.Sqrt, x) }

// Rsqrt is 1/√x.
func (x *Tensor) Rsqrt() *Tensor { return unary(ops.Rsqrt, x) }

// Reciprocal is 1/x.
func (x *Tensor) Reciprocal() *Tensor { return unary(ops.Reciprocal, x) }

// Sin is the sine of x, in radians.
func (x *Tensor) Sin() *Tensor { return unary(ops.Sin, x) }

// Cos is the cosine of x, in radians.
func (x *Tensor) Cos() *Tensor { return unary(ops.Cos, x) }

// Tanh is the hyperbolic tangent.
func (x *Tensor) Tanh() *Tensor { return unary(ops.Tanh, x) }

// Sigmoid is 1/(1 + e⁻ˣ).
func (x *Tensor) Sigmoid() *Tensor { return unary(ops.Sigmoid, x) }

// SiLU is x·sigmoid(x) (swish).
func (x *Tensor) SiLU() *Tensor { return unary(ops.SiLU, x) }

// Erf is the error function, 2/√π ∫₀ˣ e^(-t²) dt.
func (x *Tensor) Erf() *Tensor { return unary(ops.Erf, x) }

// Tan is the tangent of x, in radians.
func (x *Tensor) Tan() *Tensor { return unary(ops.Tan, x) }

// Asin is the arcsine of x, in [-π/2, π/2]; NaN where |x| > 1.
func (x *Tensor) Asin() *Tensor { return unary(ops.Asin, x) }

// Acos is the arccosine of x, in [0, π]; NaN where |x| > 1.
func (x *Tensor) Acos() *Tensor { return unary(ops.Acos, x) }

// Atan is the arctangent of x, in [-π/2, π/2].
func (x *Tensor) Atan() *Tensor { return unary(ops.Atan, x) }

// Sinh is the hyperbolic sine.
func (x *Tensor) Sinh() *Tensor { return unary(ops.Sinh, x) }

// Cosh is the hyperbolic cosine.
func (x *Tensor) Cosh() *Tensor { return unary(ops.Cosh, x) }

// Asinh is the inverse hyperbolic sine.
func (x *Tensor) Asinh() *Tensor { return unary(ops.Asinh, x) }

// Acosh is the inverse hyperbolic cosine; NaN below 1.
func (x *Tensor) Acosh() *Tensor { return unary(ops.Acosh, x) }

// Atanh is the inverse hyperbolic tangent: ±Inf at ±1, NaN where |x| > 1.
func (x *Tensor) Atanh() *Tensor { return unary(ops.Atanh, x) }

// GELU is x·Φ(x) with Φ the standard normal CDF (PyTorch's approximate="none").
func (x *Tensor) GELU() *Tensor { return unary(ops.GELU, x) }

// GELUTanh is GELU's tanh approximation (PyTorch's approximate="tanh").
func (x *Tensor) GELUTanh() *Tensor { return unary(ops.GELUTanh, x) }

// Softplus is log(1+exp(x)), linear above 20 (PyTorch's beta=1, threshold=20).
func (x *Tensor) Softplus() *Tensor { return x.SoftplusWith(1, 20) }

// SoftplusWith is torch.nn.functional.softplus(x, beta, threshold):
// log(1 + exp(beta·x))/beta, and x where beta·x > threshold.
func (x *Tensor) SoftplusWith(beta, threshold float64) *Tensor {
	if beta == 0 || math.IsNaN(beta) || math.IsNaN(threshold) {
		return failed(errorf("softplus", ErrValue, "", "needs a nonzero beta and a threshold, got beta="+ftoa(beta)+" threshold="+ftoa(threshold), ""))
	}
	return apply(ops.Softplus, ops.Params{A: beta, B: threshold}, x)
}

// LeakyReLU is x for x > 0 and slope·x otherwise (PyTorch's default slope is 0.01).
func (x *Tensor) LeakyReLU(slope float64) *Tensor {
	return apply(ops.LeakyReLU, ops.Params{A: slope}, x)
}

// Clamp limits x to [lo, hi]; pass math.Inf(-1) or math.Inf(1) for no bound.
// NaN stays NaN. The result's dtype is torch's for the finite bounds: an
// integer x with a fractional bound gives Float32 (int32 [1, 2] clamped to
// [1.5, 3] is [1.5, 2]), a bool x Int64, otherwise x's dtype.
func (x *Tensor) Clamp(lo, hi float64) *Tensor {
	if math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
		return failed(errorf("clamp", ErrValue, "", "needs lo ≤ hi, got lo="+ftoa(lo)+" hi="+ftoa(hi), ""))
	}
	if x != nil && x.err == nil && x.t != nil && !x.t.DType.IsFloat() {
		dt := x.t.DType
		for _, v := range []float64{lo, hi} {
			if !math.IsInf(v, 0) && clampDType(x, v) != x.t.DType && dt != Float32 {
				dt = clampDType(x, v)
			}
		}
		if dt != x.t.DType {
			return relabel(Compose(func(a []*Tensor) *Tensor { return a[0].Cast(dt).Clamp(lo, hi) }, x), "clamp")
		}
	}
	return apply(ops.Clamp, ops.Params{A: lo, B: hi}, x)
}

// LogicalNot is true where x is zero (false).
func (x *Tensor) LogicalNot() *Tensor { return apply(ops.LogicalNot, none, x) }

// Add is x + y, broadcast.
func (x *Tensor) Add(y *Tensor) *Tensor { return binary(ops.Add, x, y) }

// Sub is x - y, broadcast.
func (x *Tensor) Sub(y *Tensor) *Tensor { return binary(ops.Sub, x, y) }

// Mul is x·y, broadcast.
func (x *Tensor) Mul(y *Tensor) *Tensor { return binary(ops.Mul, x, y) }

// AddScaled is x + α·y, broadcast, with the product and the sum rounded
// once (torch.add(x, y, alpha=α), whose vectorised loop fuses them):
// an optimizer's update, p.AddScaled(d, -lr), in one pass. x and y
// promote as Add's operands do, to a float dtype; integers are an
// ErrDType.
func (x *Tensor) AddScaled(y *Tensor, alpha float64) *Tensor {
	const op = "add_scaled"
	if promotable(x, y) {
		dt, err := ops.BinaryDType(ops.Add, dispatch.OperandOf(x.t), dispatch.OperandOf(y.t))
		if err != nil {
			return failed(located(err, op))
		}
		if dt.IsFloat() {
			x0, y0 := x, y
			if x = x.promoteTo(op, "lhs", dt); x.err != nil {
				return x
			}
			if y = y.promoteTo(op, "rhs", dt); y.err != nil {
				if x != x0 {
					x.Release()
				}
				return y
			}
			out := apply(ops.AddScaled, ops.Scale{Alpha: alpha}, x, y)
			for _, c := range [2][2]*Tensor{{x, x0}, {y, y0}} {
				if c[0] != c[1] {
					ReleaseWithGraph(out, c[0]) // promotion's own cast
				}
			}
			return out
		}
	}
	return apply(ops.AddScaled, ops.Scale{Alpha: alpha}, x, y)
}

// Div is x / y, broadcast: true division, as torch.div, so integers
// divide in float32 (DefaultFloat).
func (x *Tensor) Div(y *Tensor) *Tensor { return binary(ops.Div, x, y) }

// Pow is xʸ, broadcast; an integer power refuses a negative exponent.
func (x *Tensor) Pow(y *Tensor) *Tensor { return binary(ops.Pow, x, y) }

// Maximum is the larger of x and y, broadcast; a NaN in either gives NaN.
func (x *Tensor) Maximum(y *Tensor) *Tensor { return binary(ops.Maximum, x, y) }

// Minimum is the smaller of x and y, broadcast; a NaN in either gives NaN.
func (x *Tensor) Minimum(y *Tensor) *Tensor { return binary(ops.Minimum, x, y) }

// Atan2 is atan(x/y) in the quadrant that the signs of both give, as
// torch.atan2(x, y), broadcast.
func (x *Tensor) Atan2(y *Tensor) *Tensor { return binary(ops.Atan2, x, y) }

// Remainder is x - floor(x/y)·y with the sign of y, as torch.remainder
// (Python's %), broadcast: a float y of 0 gives NaN, an integer one is an
// ErrValue (torch's ZeroDivisionError).
func (x *Tensor) Remainder(y *Tensor) *Tensor { return binary(ops.Remainder, x, y) }

// FMod is x - trunc(x/y)·y with the sign of x, as torch.fmod (C's fmod),
// broadcast: a float y of 0 gives NaN, an integer one is an ErrValue.
func (x *Tensor) FMod(y *Tensor) *Tensor { return binary(ops.FMod, x, y) }

// Eq is x == y, broadcast, as Bool.
func (x *Tensor) Eq(y *Tensor) *Tensor { return binary(ops.Eq, x, y) }

// Ne is x != y, broadcast, as Bool.
func (x *Tensor) Ne(y *Tensor) *Tensor { return binary(ops.Ne, x, y) }

// Lt is x < y, broadcast, as Bool.
func (x *Tensor) Lt(y *Tensor) *Tensor { return binary(ops.Lt, x, y) }

// Le is x ≤ y, broadcast, as Bool.
func (x *Tensor) Le(y *Tensor) *Tensor { return binary(ops.Le, x, y) }

// Gt is x > y, broadcast, as Bool.
func (x *Tensor) Gt(y *Tensor) *Tensor { return binary(ops.Gt, x, y) }

// Ge is x ≥ y, broadcast, as Bool.
func (x *Tensor) Ge(y *Tensor) *Tensor { return binary(ops.Ge, x, y) }

// LogicalAnd is x && y as Bool, with any nonzero value true; the dtypes
// may differ.
func (x *Tensor) LogicalAnd(y *Tensor) *Tensor { return apply(ops.LogicalAnd, none, x, y) }

// LogicalOr is x || y as Bool, with any nonzero value true; the dtypes may
// differ.
func (x *Tensor) LogicalOr(y *Tensor) *Tensor { return apply(ops.LogicalOr, none, x, y) }

// Where picks x where cond is true and y elsewhere, broadcasting all three;
// x and y promote as a binary op's operands.
func Where(cond, x, y *Tensor) *Tensor { return promoted(ops.Where, dispatch.InvalidDType, cond, x, y) }

// Scalar forms: s is a Go number, an integer where it has no fraction (2)
// and a float otherwise (2.5, NaN, ±Inf) (ops.ScalarOperand), and promotes
// as torch's Python scalars: it does not lift x within x's category (a
// float32 x stays float32, an int32 x plus 1 stays int32) but does across
// (an int32 x plus 2.5 is float32, a bool x plus 2 is int64). An integer
// that the result's dtype cannot hold is an ErrValue (3e9 for int32),
// where torch would wrap it; a float result rounds s to its dtype, as
// torch does. Comparisons are exact whatever the scalar, as torch's: an
// int32 tensor is below 3e9 and never equal to 1.5.

// AddScalar is x + s.
func (x *Tensor) AddScalar(s float64) *Tensor { return x.withScalar(ops.Add, s) }

// SubScalar is x - s.
func (x *Tensor) SubScalar(s float64) *Tensor { return x.withScalar(ops.Sub, s) }

// MulScalar is x·s.
func (x *Tensor) MulScalar(s float64) *Tensor { return x.withScalar(ops.Mul, s) }

// DivScalar is x / s.
func (x *Tensor) DivScalar(s float64) *Tensor { return x.withScalar(ops.Div, s) }

// PowScalar is xˢ.
func (x *Tensor) PowScalar(s float64) *Tensor { return x.withScalar(ops.Pow, s) }

// MaximumScalar is max(x, s).
func (x *Tensor) MaximumScalar(s float64) *Tensor { return x.withScalar(ops.Maximum, s) }

// MinimumScalar is min(x, s).
func (x *Tensor) MinimumScalar(s float64) *Tensor { return x.withScalar(ops.Minimum, s) }

// RemainderScalar is x.Remainder(s): the sign of s.
func (x *Tensor) RemainderScalar(s float64) *Tensor { return x.withScalar(ops.Remainder, s) }

// FModScalar is x.FMod(s): the sign of x.
func (x *Tensor) FModScalar(s float64) *Tensor { return x.withScalar(ops.FMod, s) }

// EqScalar is x == s, as Bool.
func (x *Tensor) EqScalar(s float64) *Tensor { return x.withScalar(ops.Eq, s) }

// NeScalar is x != s, as Bool.
func (x *Tensor) NeScalar(s float64) *Tensor { return x.withScalar(ops.Ne, s) }

// LtScalar is x < s, as Bool.
func (x *Tensor) LtScalar(s float64) *Tensor { return x.withScalar(ops.Lt, s) }

// LeScalar is x ≤ s, as Bool.
func (x *Tensor) LeScalar(s float64) *Tensor { return x.withScalar(ops.Le, s) }

// GtScalar is x > s, as Bool.
func (x *Tensor) GtScalar(s float64) *Tensor { return x.withScalar(ops.Gt, s) }

// GeScalar is x ≥ s, as Bool.
func (x *Tensor) GeScalar(s float64) *Tensor { return x.withScalar(ops.Ge, s) }

func (x *Tensor) withScalar(op *dispatch.Op[dispatch.None], s float64) *Tensor {
	if err := x.check(op.Name); err != nil {
		return failed(err)
	}
	self := x
	// with applies op to x and s as a 0-d tensor, and gives back that
	// tensor and x's cast, if one was made, with the result's graph (at
	// once where it is not recorded): left to the collector, a step of an
	// optimizer's scalar ops held a block per op on a device until then.
	with := func(s float64) *Tensor {
		sc := x.scalarLike(op.Name, s)
		out := apply(op, none, x, sc)
		if x != self {
			ReleaseWithGraph(out, sc, x)
		} else {
			ReleaseWithGraph(out, sc)
		}
		return out
	}
	switch op {
	case ops.Eq, ops.Ne, ops.Lt, ops.Le, ops.Gt, ops.Ge:
		if x.t.DType == Bool && op != ops.Eq && op != ops.Ne {
			// false < true as 0 < 1, as torch's; exact, as every comparison below
			if x = x.promoteTo(op.Name, "self", Int32); x.err != nil {
				return x
			}
		}
		bound, all, constant := ops.CompareScalar(op, x.t.DType, s)
		if constant {
			if x != self {
				x.Release() // a bool's cast: no gradient reaches it
			}
			return full(op.Name, x.t.Device, Bool, b2f(all), x.t.Shape)
		}
		return with(bound)
	}
	dt, err := ops.BinaryDType(op, dispatch.OperandOf(x.t), ops.ScalarOperand(s))
	if err != nil {
		return failed(located(err, op.Name))
	}
	if err := ops.CheckOperand(op, dt, s, "scalar"); err != nil {
		return failed(located(err, op.Name))
	}
	x = x.promoteTo(op.Name, "self", dt)
	if x.err != nil {
		return x
	}
	return with(s)
}

// scalarLike makes a 0-d tensor of x's dtype and device holding s, which
// that dtype holds (the caller has checked) or, a float one, rounds. A
// failed x gives its error.
func (x *Tensor) scalarLike(op string, s float64) *Tensor {
	if x.err != nil {
		return failed(x.err)
	}
	return x.joined(upload(op, x.t.Device, ops.ScalarData(x.t.DType, s), x.t.DType, []int{}))
}

// binary runs a binary op on x and y cast to the dtype it computes in
// (ops.BinaryDType).
func binary(op *dispatch.Op[dispatch.None], x, y *Tensor) *Tensor {
	if !promotable(x, y) {
		return apply(op, none, x, y) // apply and dispatch report the fault
	}
	dt, err := ops.BinaryDType(op, dispatch.OperandOf(x.t), dispatch.OperandOf(y.t))
	if err != nil {
		return failed(located(err, op.Name))
	}
	if dt == Bool && boolByInt32(op) {
		out := promoted(op, Int32, x, y)
		if out.err == nil && out.t.DType != Bool {
			b := apply(ops.Cast, ops.CastTo{DType: Bool}, out)
			out.Release() // an int32 result, on no graph
			out = b
		}
		return out
	}
	return promoted(op, dt, x, y)
}

// boolByInt32 reports whether op, which has no bool kernel, takes two
// bools as torch does by computing in int32: add is or, mul and, maximum
// or, minimum and (nonzero is true), and the comparisons order false
// before true.
func boolByInt32(op *dispatch.Op[dispatch.None]) bool {
	switch op {
	case ops.Add, ops.Mul, ops.Maximum, ops.Minimum, ops.Lt, ops.Le, ops.Gt, ops.Ge:
		return true
	}
	return false
}

// promoted runs op on args, the last two cast to dt (where's x and y to
// their result type when dt is InvalidDType; the logical ops' as they
// are).
func promoted(op *dispatch.Op[dispatch.None], dt DType, args ...*Tensor) *Tensor {
	if !promotable(args...) {
		return apply(op, none, args...)
	}
	pair := args[len(args)-2:]
	if op == ops.Where {
		dt = dispatch.ResultType(dispatch.OperandOf(pair[0].t), dispatch.OperandOf(pair[1].t))
	}
	var casts []*Tensor
	if dt.Valid() {
		names := op.Args[len(op.Args)-2:]
		for i, a := range pair {
			if pair[i] = a.promoteTo(op.Name, names[i], dt); pair[i].err != nil {
				releaseAll(casts)
				return pair[i]
			}
			if pair[i] != a {
				casts = append(casts, pair[i])
			}
		}
	}
	out := apply(op, none, args...)
	// The casts are promotion's own: nothing else holds them once the
	// graph that saved them is freed (a bfloat16 product times a float32
	// state under Autocast left one to the collector at every op).
	ReleaseWithGraph(out, casts...)
	return out
}

// releaseAll releases ts.
func releaseAll(ts []*Tensor) {
	for _, t := range ts {
		t.Release()
	}
}

// promotable reports whether args are live tensors on one device, whose
// dtypes promotion may look at; otherwise the op's own checks say what is
// wrong before any cast runs.
func promotable(args ...*Tensor) bool {
	for _, a := range args {
		if a == nil || a.err != nil || a.t == nil || a.t.Released() || a.t.Device != args[0].t.Device {
			return false
		}
	}
	return true
}

// promoteTo casts x, the argument arg of op, to dt, recorded as any cast
// is; a device without dt (float64 on wgpu) fails naming op. A failed x
// (a step of a composite that failed) comes back as it is.
func (x *Tensor) promoteTo(op, arg string, dt DType) *Tensor {
	if x.err != nil {
		return x
	}
	if x.t.DType == dt {
		return x
	}
	t, err := dispatch.Call(ops.Cast, ops.CastTo{DType: dt}, x.t)
	if err != nil {
		e := *located(err, "cast")
		e.Op, e.Arg = op, arg
		e.Detail = "promotes to " + dt.String() + " (from " + x.t.DType.String() + "), and the cast " + e.Detail
		return failed(&e)
	}
	// In a composite's body the cast is one of its intermediates, as an
	// op's result is (the cast runs below apply, which joins those).
	return x.joined(wrap(t))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// fullLike makes a tensor of x's dtype and device with the given shape.
func (x *Tensor) fullLike(op string, v float64, shape []int) *Tensor {
	return x.joined(full(op, x.t.Device, x.t.DType, v, shape))
}

// joined makes t, a constant that a composite's body made from x, one of
// the body's intermediates where x is, so that it goes with the body's
// result as the body's op results do, not to the collector. (An op's
// result joins in call; a constant is made without one.)
func (x *Tensor) joined(t *Tensor) *Tensor {
	if x.made != nil && t.t != nil {
		t.made = x.made
		x.made.add(t)
	}
	return t
}
