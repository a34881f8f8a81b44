package lathe

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Integer functions of torch: bitwise and, or, xor and not, the shifts,
// gcd, lcm, floor_divide and logical_xor. And, or, xor, the shifts, gcd
// and integer floor division are kernels on every backend (dispatch/ops'
// integer ops, for int32 and int64; int8 and uint8 compute in int32 and
// are cast back, as C promotes them); bool's and, or and xor are the
// logical ops; not, lcm and float floor division are composites of them.

// wideInt is the dtype an integer dtype is computed in: int32 for the
// 8-bit ones, itself otherwise.
func wideInt(dt DType) DType {
	if dt == Int8 || dt == Uint8 {
		return Int32
	}
	return dt
}

var opLcm = composite("lcm", []string{"x", "y"}, func(in []*Tensor, dt DType) *Tensor {
	wide := wideInt(dt) // torch's lcm computes in C's promoted int
	x, y := in[0].Cast(wide), in[1].Cast(wide)
	g := binary(ops.Gcd, x, y)
	nz := g.NeScalar(0)
	divisor := Where(nz, g, g.scalarLike("lcm", 1)) // g divides x: the quotient is exact
	return Where(nz, binary(ops.FloorDivide, x, divisor).Mul(y).Abs(), g.scalarLike("lcm", 0)).Cast(dt)
})

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

// callInt is x op y for one of the integer kernels: the arguments are
// checked and promoted (intPair), and two bools take logical, bool's form
// of and, or and xor, where bools is true.
func (x *Tensor) callInt(op *dispatch.Op[dispatch.None], y *Tensor, bools bool, logical func(x, y *Tensor) *Tensor) *Tensor {
	dt, err := intPair(op.Name, "y", x, y, bools)
	if err != nil {
		return failed(err)
	}
	if dt == Bool {
		return relabel(logical(x, y), op.Name)
	}
	return promoted(op, dt, x, y)
}

// BitwiseAnd is x & y, broadcast, as torch.bitwise_and: integers and bool
// (logical and), promoted as a binary op's; floats are ErrDType.
func (x *Tensor) BitwiseAnd(y *Tensor) *Tensor {
	return x.callInt(ops.BitwiseAnd, y, true, (*Tensor).LogicalAnd)
}

// BitwiseOr is x | y, as torch.bitwise_or; otherwise as BitwiseAnd.
func (x *Tensor) BitwiseOr(y *Tensor) *Tensor {
	return x.callInt(ops.BitwiseOr, y, true, (*Tensor).LogicalOr)
}

// BitwiseXor is x ^ y, as torch.bitwise_xor; otherwise as BitwiseAnd.
func (x *Tensor) BitwiseXor(y *Tensor) *Tensor {
	return x.callInt(ops.BitwiseXor, y, true, (*Tensor).Ne)
}

// BitwiseLeftShift is x << y, as torch.bitwise_left_shift: integers only
// (bool and floats are ErrDType, as torch's cpu), promoted. As torch
// 1.13's cpu (C's shift on x86), the count is taken mod 32 (mod 64 for
// int64) and int8 and uint8 shift as int32 and are cast back: an int32
// shifted by 33 is shifted by 1, by -1 by 31, and an int8 by 8 is 0.
func (x *Tensor) BitwiseLeftShift(y *Tensor) *Tensor {
	return x.callInt(ops.ShiftLeft, y, false, nil)
}

// BitwiseRightShift is x >> y, arithmetic (the sign kept), as
// torch.bitwise_right_shift; the count as BitwiseLeftShift's.
func (x *Tensor) BitwiseRightShift(y *Tensor) *Tensor {
	return x.callInt(ops.ShiftRight, y, false, nil)
}

// Gcd is the greatest common divisor of |x| and |y|, as torch.gcd: gcd(0,
// 0) is 0, and, as torch's (whose |least integer| wraps), a least integer
// can give a negative result. Integers only.
func (x *Tensor) Gcd(y *Tensor) *Tensor { return x.callInt(ops.Gcd, y, false, nil) }

// Lcm is the least common multiple |x/gcd·y|, 0 where gcd is 0, as
// torch.lcm (wrapping where it overflows). Integers only.
func (x *Tensor) Lcm(y *Tensor) *Tensor {
	dt, err := intPair("lcm", "y", x, y, false)
	if err != nil {
		return failed(err)
	}
	return apply(opLcm, dt, x, y)
}

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

// opFloorDivideFloat is floor_divide of floats (the integers' is a
// kernel, ops.FloorDivide), computed in float32 for the 16-bit ones.
var opFloorDivideFloat = compositeVariant("floor_divide", "float", []string{"x", "y"}, func(in []*Tensor, dt DType) *Tensor {
	return inFloat32([]*Tensor{in[0].Cast(dt), in[1].Cast(dt)}, func(in []*Tensor) *Tensor { return floorDivFloat(in[0], in[1]) })
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
	switch {
	case dt == Bool:
		return failed(errorf(op, ErrDType, "x", "and y are bool, which floor_divide does not take (as torch's)", "cast them with .Cast(lathe.Int32) first"))
	case !dt.IsFloat():
		return promoted(ops.FloorDivide, dt, x, y) // a zero y is dispatch's ErrValue
	}
	return apply(opFloorDivideFloat, dt, x, y)
}
