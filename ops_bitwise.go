package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// Integer functions of torch as composites of lathe's integer arithmetic
// (which wraps, as torch's C does), so that each runs on every device and
// integer dtype: bitwise and, or, xor and not, the shifts, gcd, lcm,
// floor_divide and logical_xor.
//
// No backend has bit operations, so and is taken bit by bit: bit k of x
// times 2ᵏ is x mod 2ᵏ⁺¹ - x mod 2ᵏ (Remainder, which has the divisor's
// sign, gives the low bits of a two's-complement x), and and is the
// smaller of two such terms (the larger for the sign bit, whose term is 0
// or the least integer); or is x + y - and, xor x + y - 2·and. That is
// about six ops a bit, 200 for int32 and 400 for int64: correct on every
// device, but far slower than torch's one instruction. An exact integer
// quotient comes from a float32 estimate rounded and corrected (exactDiv),
// since no backend divides integers. Int8 and uint8 are computed in int32
// and cast back, as C promotes them.

// bitwiseAttrs say which function a bitwise op computes and in which
// dtype its arguments meet.
type bitwiseAttrs struct {
	fn int
	dt DType
}

const (
	bitAndFn = iota
	bitOrFn
	bitXorFn
	shiftLeftFn
	shiftRightFn
	gcdFn
	lcmFn
)

// wideInt is the dtype an integer dtype is computed in: int32 for the
// 8-bit ones, itself otherwise.
func wideInt(dt DType) DType {
	if dt == Int8 || dt == Uint8 {
		return Int32
	}
	return dt
}

// intBits is the number of bits of an integer dtype.
func intBits(dt DType) int {
	switch dt {
	case Int8, Uint8:
		return 8
	case Int64:
		return 64
	}
	return 32
}

// lowBits is x mod 2ᵏ, x's low k bits as a number ≥ 0, in x's dtype
// (wide), whose bits are w: 2ʷ⁻¹ is past its range, so x mod 2ʷ⁻¹ is x
// with the sign bit's weight, the least integer, taken away.
func lowBits(x *Tensor, k, w int) *Tensor {
	if k == 0 {
		return x.MulScalar(0)
	}
	if k == w-1 {
		least := -math.Ldexp(1, w-1)
		return Where(x.LtScalar(0), x.SubScalar(least), x)
	}
	return x.RemainderScalar(math.Ldexp(1, k))
}

// bitAnd is x & y for x and y of the integer dtype dt computed in the
// wide dtype of their values (wideInt), releasing each bit's tensors as it
// goes (integers have no gradient).
func bitAnd(x, y *Tensor, dt DType) *Tensor {
	n := intBits(dt)
	w := intBits(x.t.DType)
	signed := dt != Uint8
	top := n
	if signed {
		top = n - 1
	}
	acc := x.Mul(y).MulScalar(0) // the broadcast shape
	rx, ry := lowBits(x, 0, w), lowBits(y, 0, w)
	for k := 0; k < top; k++ {
		nx, ny := lowBits(x, k+1, w), lowBits(y, k+1, w)
		dx, dy := nx.Sub(rx), ny.Sub(ry)
		m := dx.Minimum(dy)
		next := acc.Add(m)
		releaseAll([]*Tensor{dx, dy, m, acc, rx, ry})
		acc, rx, ry = next, nx, ny
	}
	if signed { // the sign bit's term is 0 or the least integer
		dx, dy := x.Sub(rx), y.Sub(ry)
		m := dx.Maximum(dy)
		next := acc.Add(m)
		releaseAll([]*Tensor{dx, dy, m, acc})
		acc = next
	}
	releaseAll([]*Tensor{rx, ry})
	return acc
}

// exactDiv is n/y for integer tensors where y divides n (and is not 0):
// a float32 estimate, clamped to a quarter of the range so that its cast
// is defined, then corrected by the estimate of the remaining quotient,
// the integer arithmetic wrapping as it may. Each step takes the error
// from about 2⁻²² of the quotient to 2⁻²² of that: two steps finish
// int32, four int64.
func exactDiv(n, y *Tensor) *Tensor {
	if n.err != nil {
		return n
	}
	dt := n.t.DType
	lim := math.Ldexp(1, intBits(dt)-2)
	yf := y.Cast(Float32)
	est := func(v *Tensor) *Tensor {
		return v.Cast(Float32).Div(yf).Round().Clamp(-lim, lim).Cast(dt)
	}
	q := est(n)
	steps := 2
	if dt == Int64 {
		steps = 4
	}
	for range steps {
		e := n.Sub(q.Mul(y))
		q = q.Add(est(e))
	}
	return q
}

// truncDiv is x/y rounded toward zero, as C's integer division; y has no
// zeros.
func truncDiv(x, y *Tensor) *Tensor {
	return exactDiv(x.Sub(x.FMod(y)), y)
}

// floorDivInt is x/y rounded down, as Python's //; y has no zeros.
func floorDivInt(x, y *Tensor) *Tensor {
	r := x.FMod(y)
	q := exactDiv(x.Sub(r), y)
	if q.err != nil {
		return q
	}
	off := r.NeScalar(0).LogicalAnd(r.LtScalar(0).Ne(y.LtScalar(0)))
	return q.Sub(off.Cast(q.t.DType))
}

// gcdInt is torch's calc_gcd: Euclid's algorithm on |x| and |y| with C's
// %, run until every pair is done (checked every eight steps).
func gcdInt(x, y *Tensor) *Tensor {
	const op = "gcd"
	a, b := x.Abs(), y.Abs()
	if a.err != nil || b.err != nil {
		return a.Add(b) // the error
	}
	if !equalShapes(a.t.Shape, b.t.Shape) {
		z := a.Mul(b).MulScalar(0)
		a, b = a.Add(z), b.Add(z)
	}
	zero, one := a.scalarLike(op, 0), a.scalarLike(op, 1)
	for i := 0; ; i++ {
		if i%8 == 0 {
			if i > 200 || a.t == nil {
				break // 93 steps finish any int64 pair
			}
			left := a.NeScalar(0).Any()
			v, err := left.Bools()
			left.Release()
			if err != nil || !v[0] {
				break
			}
		}
		nz := a.NeScalar(0)
		na := Where(nz, b.FMod(Where(nz, a, one)), zero)
		nb := Where(nz, a, b)
		a, b = na, nb
	}
	return b
}

var opBitwise = composite("bitwise", []string{"x", "y"}, func(in []*Tensor, a bitwiseAttrs) *Tensor {
	x, y := in[0].Cast(a.dt), in[1].Cast(a.dt)
	if a.dt == Bool {
		switch a.fn {
		case bitAndFn:
			return x.LogicalAnd(y)
		case bitOrFn:
			return x.LogicalOr(y)
		}
		return x.Ne(y)
	}
	wide := wideInt(a.dt)
	x, y = x.Cast(wide), y.Cast(wide)
	if x.err != nil || y.err != nil {
		return x.Add(y) // the error
	}
	var out *Tensor
	switch a.fn {
	case bitAndFn:
		out = bitAnd(x, y, a.dt)
	case bitOrFn:
		out = x.Add(y).Sub(bitAnd(x, y, a.dt))
	case bitXorFn:
		out = x.Add(y).Sub(bitAnd(x, y, a.dt).MulScalar(2))
	case shiftLeftFn, shiftRightFn:
		out = shift(x, y, a.fn == shiftLeftFn)
	case gcdFn:
		out = gcdInt(x, y)
	case lcmFn:
		g := gcdInt(x, y)
		nz := g.NeScalar(0)
		gs := Where(nz, g, g.scalarLike("lcm", 1))
		out = Where(nz, truncDiv(x, gs).Mul(y).Abs(), g.scalarLike("lcm", 0))
	}
	return out.Cast(a.dt)
})

// shift is torch 1.13's cpu shift of x by s, computed in x's wide dtype:
// C's shift, whose count the machine takes mod the width of the promoted
// operand (32, or 64 for int64): 1 << 33 is 2 and 1 << -1 is the least
// int32.
func shift(x, s *Tensor, left bool) *Tensor {
	w := intBits(x.t.DType)
	c := s.RemainderScalar(float64(w))
	last := c.EqScalar(float64(w - 1))
	p := c.scalarLike("bitwise_shift", 2).Pow(c.MinimumScalar(float64(w - 2)))
	if left {
		v := x.Mul(p)
		return Where(last, v.MulScalar(2), v)
	}
	v := floorDivInt(x, p)
	sign := x.LtScalar(0).Cast(x.t.DType).Neg()
	return Where(last, sign, v)
}

// intPair checks a binary integer op's arguments and gives the dtype they
// promote to, refusing floats (and bool where bools is false).
func intPair(op, arg string, x, y *Tensor, bools bool) (DType, error) {
	if _, err := mathPair(op, arg, x, y, nil); err != nil && !isDTypeErr(err) {
		return 0, err
	}
	dt := dispatch.ResultType(dispatch.OperandOf(x.t), dispatch.OperandOf(y.t))
	for i, t := range []*Tensor{x, y} {
		name := []string{"x", arg}[i]
		if t.t.DType.IsFloat() {
			return 0, errorf(op, ErrDType, name, "is "+t.t.DType.String()+" but "+op+" takes integers"+map[bool]string{true: " and bool", false: ""}[bools]+
				" (as torch's)", "cast it with .Cast(lathe.Int64) first")
		}
		if t.t.DType == Bool && !bools && dt == Bool {
			return 0, errorf(op, ErrDType, name, "is bool, which "+op+" does not take (as torch's)", "cast it with .Cast(lathe.Int32) first")
		}
	}
	return dt, nil
}

// isDTypeErr reports whether err is mathPair's refusal of unlike dtypes,
// which the integer ops promote instead.
func isDTypeErr(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == ErrDType
}

func (x *Tensor) callBitwise(op string, y *Tensor, fn int, bools bool) *Tensor {
	dt, err := intPair(op, "y", x, y, bools)
	if err != nil {
		return failed(err)
	}
	return relabel(apply(opBitwise, bitwiseAttrs{fn: fn, dt: dt}, x, y), op)
}

// BitwiseAnd is x & y, broadcast, as torch.bitwise_and: integers and bool
// (logical and), promoted as a binary op's; floats are ErrDType.
func (x *Tensor) BitwiseAnd(y *Tensor) *Tensor {
	return x.callBitwise("bitwise_and", y, bitAndFn, true)
}

// BitwiseOr is x | y, as torch.bitwise_or; otherwise as BitwiseAnd.
func (x *Tensor) BitwiseOr(y *Tensor) *Tensor { return x.callBitwise("bitwise_or", y, bitOrFn, true) }

// BitwiseXor is x ^ y, as torch.bitwise_xor; otherwise as BitwiseAnd.
func (x *Tensor) BitwiseXor(y *Tensor) *Tensor {
	return x.callBitwise("bitwise_xor", y, bitXorFn, true)
}

// BitwiseLeftShift is x << y, as torch.bitwise_left_shift: integers only
// (bool and floats are ErrDType, as torch's cpu), promoted. As torch
// 1.13's cpu (C's shift on x86), the count is taken mod 32 (mod 64 for
// int64) and int8 and uint8 shift as int32 and are cast back: an int32
// shifted by 33 is shifted by 1, by -1 by 31, and an int8 by 8 is 0.
func (x *Tensor) BitwiseLeftShift(y *Tensor) *Tensor {
	return x.callBitwise("bitwise_left_shift", y, shiftLeftFn, false)
}

// BitwiseRightShift is x >> y, arithmetic (the sign kept), as
// torch.bitwise_right_shift; the count as BitwiseLeftShift's.
func (x *Tensor) BitwiseRightShift(y *Tensor) *Tensor {
	return x.callBitwise("bitwise_right_shift", y, shiftRightFn, false)
}

// Gcd is the greatest common divisor of |x| and |y|, as torch.gcd: gcd(0,
// 0) is 0, and, as torch's (whose |least integer| wraps), a least integer
// can give a negative result. Integers only.
func (x *Tensor) Gcd(y *Tensor) *Tensor { return x.callBitwise("gcd", y, gcdFn, false) }

// Lcm is the least common multiple |x/gcd·y|, 0 where gcd is 0, as
// torch.lcm (wrapping where it overflows). Integers only.
func (x *Tensor) Lcm(y *Tensor) *Tensor { return x.callBitwise("lcm", y, lcmFn, false) }

var opBitwiseNot = composite("bitwise_not", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	x := in[0]
	switch x.t.DType {
	case Bool:
		return x.LogicalNot()
	case Uint8:
		return x.Cast(Int32).Neg().AddScalar(255).Cast(Uint8)
	case Int8:
		return x.Cast(Int32).Neg().SubScalar(1).Cast(Int8)
	}
	return x.Neg().SubScalar(1)
})

// BitwiseNot is ~x, as torch.bitwise_not: -x-1 for signed integers, 255-x
// for uint8, logical not for bool; floats are ErrDType.
func (x *Tensor) BitwiseNot() *Tensor {
	const op = "bitwise_not"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if x.t.DType.IsFloat() {
		return failed(errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but bitwise_not takes integers and bool (as torch's)", "cast it with .Cast(lathe.Int64) first"))
	}
	return apply(opBitwiseNot, none, x)
}

var opLogicalXor = composite("logical_xor", []string{"x", "y"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	return in[0].NeScalar(0).Ne(in[1].NeScalar(0))
})

// LogicalXor is true where exactly one of x and y is nonzero (NaN counts),
// as torch.logical_xor; the dtypes may differ, and the result is Bool.
func (x *Tensor) LogicalXor(y *Tensor) *Tensor {
	const op = "logical_xor"
	if _, err := mathPair(op, "y", x, y, nil); err != nil && !isDTypeErr(err) {
		return failed(err)
	}
	return apply(opLogicalXor, none, x, y)
}

var opFloorDivide = composite("floor_divide", []string{"x", "y"}, func(in []*Tensor, dt DType) *Tensor {
	x, y := in[0].Cast(dt), in[1].Cast(dt)
	if !dt.IsFloat() {
		wide := wideInt(dt)
		return floorDivInt(x.Cast(wide), y.Cast(wide)).Cast(dt)
	}
	return inFloat32([]*Tensor{x, y}, func(in []*Tensor) *Tensor { return floorDivFloat(in[0], in[1]) })
})

// floorDivFloat is torch's div_floor_floating: a/b where b is 0, else the
// quotient of a - fmod(a, b), one less where the remainder's sign is not
// b's, rounded to the nearest integer, and a zero quotient with a/b's
// sign. It is computed from a and b detached: torch's floor_divide is not
// differentiable.
func floorDivFloat(a, b *Tensor) *Tensor {
	const op = "floor_divide"
	a, b = detached(a), detached(b)
	zero := a.scalarLike(op, 0)
	mod := a.FMod(b)
	div := a.Sub(mod).Div(b)
	off := mod.NeScalar(0).LogicalAnd(b.LtScalar(0).Ne(mod.LtScalar(0)))
	div = Where(off, div.SubScalar(1), div)
	fl := div.Floor()
	fl = Where(div.Sub(fl).GtScalar(0.5), fl.AddScalar(1), fl)
	q := a.Div(b)
	fl = Where(div.NeScalar(0), fl, zero.Copysign(q))
	return Where(b.EqScalar(0), q, fl)
}

// FloorDivide is x/y rounded down, as torch.floor_divide in torch 1.13
// (which rounds down, despite 1.12's deprecation note) and Python's //:
// broadcast, promoted as Sub's (two integers stay integer). An integer y
// of 0 is ErrValue (torch's ZeroDivisionError); a float one gives ±Inf or
// NaN. Bool is ErrDType. The result has no gradient: torch's floor_divide
// is not differentiable.
func (x *Tensor) FloorDivide(y *Tensor) *Tensor {
	const op = "floor_divide"
	if _, err := mathPair(op, "y", x, y, nil); err != nil && !isDTypeErr(err) {
		return failed(err)
	}
	dt := dispatch.ResultType(dispatch.OperandOf(x.t), dispatch.OperandOf(y.t))
	if dt == Bool {
		return failed(errorf(op, ErrDType, "x", "and y are bool, which floor_divide does not take (as torch's)", "cast them with .Cast(lathe.Int32) first"))
	}
	if !dt.IsFloat() {
		zs := y.EqScalar(0)
		z := zs.Any()
		v, err := z.Bools()
		releaseAll([]*Tensor{zs, z})
		if err != nil {
			return failed(located(err, op))
		}
		if v[0] {
			return failed(errorf(op, ErrValue, "y", "has a zero, which an integer division cannot take (torch's ZeroDivisionError)",
				"divide by nonzero integers, or cast to a float dtype for ±Inf"))
		}
	}
	return apply(opFloorDivide, dt, x, y)
}
