package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Reductions and comparisons of torch that lathe builds as composites:
// amax and amin (Max and Min with every dim named), nansum, nanmean,
// count_nonzero, isclose, allclose and equal; and softmin and glu, which
// reduce along a dim. Each runs on every device; the float ones are
// differentiable to any order.

// dimsAttrs are a reduction's dims (none for all of them) and whether to
// keep them as size 1.
type dimsAttrs struct {
	dims []int
	keep bool
}

// sumOver is x summed over a's dims.
func sumOver(x *Tensor, a dimsAttrs) *Tensor {
	if a.keep {
		return x.SumKeepDim(a.dims...)
	}
	return x.Sum(a.dims...)
}

var (
	// nansum is the sum with NaN taken as 0, whose gradient is zero at the
	// NaNs (derivatives.yaml "nansum": grad·¬isnan(x)).
	opNanSum = composite("nansum", []string{"x"}, func(in []*Tensor, a dimsAttrs) *Tensor { return nanSum(in[0], a) })
	// nanmean is nansum over the count of elements that are not NaN, as
	// torch's at::nansum(x).div(count); a 16-bit sum is divided in float32
	// and rounded once, as there.
	opNanMean = composite("nanmean", []string{"x"}, func(in []*Tensor, a dimsAttrs) *Tensor {
		x := in[0]
		s := nanSum(x, a)
		wide := Float32
		if x.t.DType == Float64 {
			wide = Float64
		}
		n := sumOver(x.IsNaN().LogicalNot().Cast(wide), a)
		return s.Cast(wide).Div(n).Cast(x.t.DType)
	})
	opCountNonzero = composite("count_nonzero", []string{"x"}, func(in []*Tensor, a dimsAttrs) *Tensor {
		return sumOver(in[0].NeScalar(0).Cast(Int64), a)
	})
)

func nanSum(x *Tensor, a dimsAttrs) *Tensor {
	if x.t.DType.IsFloat() {
		x = Where(x.IsNaN(), x.scalarLike("nansum", 0), x)
	}
	return sumOver(x, a)
}

// NanSum adds the elements of x over dims taking NaN as 0, as
// torch.nansum; no dims means all of them. Dtypes as Sum's (integers and
// bool give Int64).
func (x *Tensor) NanSum(dims ...int) *Tensor {
	return apply(opNanSum, dimsAttrs{dims: append([]int(nil), dims...)}, x)
}

// NanSumKeepDim is NanSum keeping the reduced dims as size 1.
func (x *Tensor) NanSumKeepDim(dims ...int) *Tensor {
	return apply(opNanSum, dimsAttrs{dims: append([]int(nil), dims...), keep: true}, x)
}

// NanMean is the mean of the elements of x over dims that are not NaN, as
// torch.nanmean: NaN where all are. Floats only, as torch's. The gradient
// is zero at the NaNs, also where all of a mean's elements are NaN (torch's
// is NaN there: grad/0 times 0).
func (x *Tensor) NanMean(dims ...int) *Tensor {
	return x.callReduce(opNanMean, dimsAttrs{dims: append([]int(nil), dims...)})
}

// NanMeanKeepDim is NanMean keeping the reduced dims as size 1.
func (x *Tensor) NanMeanKeepDim(dims ...int) *Tensor {
	return x.callReduce(opNanMean, dimsAttrs{dims: append([]int(nil), dims...), keep: true})
}

func (x *Tensor) callReduce(op *dispatch.Op[dimsAttrs], a dimsAttrs) *Tensor {
	if err := x.floatsOnly(op.Name); err != nil {
		return failed(err)
	}
	return apply(op, a, x)
}

// CountNonzero counts the nonzero elements of x over dims (NaN counts; -0
// does not), as torch.count_nonzero; no dims means all of them. The
// result is Int64. Every dtype.
func (x *Tensor) CountNonzero(dims ...int) *Tensor {
	return apply(opCountNonzero, dimsAttrs{dims: append([]int(nil), dims...)}, x)
}

// Amax is the largest element of x over dims, as torch.amax: no dims means
// all of them. A NaN makes it NaN. The gradient is split evenly among the
// elements equal to the result, and a NaN result gives NaN to its whole
// group, as torch's (Max with no dims sends it to the NaNs alone, as
// torch.max()). Every dtype but bool as Max; bool gives whether any
// element is true (all, for Amin), as torch's.
func (x *Tensor) Amax(dims ...int) *Tensor { return x.extreme("amax", ops.Max, false, dims) }

// AmaxKeepDim is Amax keeping the reduced dims as size 1.
func (x *Tensor) AmaxKeepDim(dims ...int) *Tensor { return x.extreme("amax", ops.Max, true, dims) }

// Amin is the smallest element of x over dims, as torch.amin; otherwise
// as Amax.
func (x *Tensor) Amin(dims ...int) *Tensor { return x.extreme("amin", ops.Min, false, dims) }

// AminKeepDim is Amin keeping the reduced dims as size 1.
func (x *Tensor) AminKeepDim(dims ...int) *Tensor { return x.extreme("amin", ops.Min, true, dims) }

// extreme is max or min over dims, every dim named where dims is empty, so
// that the gradient is amax's (ops.Max's rule with dims).
func (x *Tensor) extreme(op string, r *dispatch.Op[ops.Reduce], keep bool, dims []int) *Tensor {
	if err := x.check(op); err != nil {
		return failed(err)
	}
	dims = append([]int(nil), dims...)
	if len(dims) == 0 {
		for d := range x.t.Rank() {
			dims = append(dims, d)
		}
	}
	if x.t.DType == Bool { // any or all, as torch's amax and amin of bool
		return relabel(Compose(func(a []*Tensor) *Tensor { return a[0].Cast(Int32).reduce(r, keep, 0, dims).Cast(Bool) }, x), op)
	}
	return relabel(x.reduce(r, keep, 0, dims), op)
}

// closeAttrs are isclose's tolerances.
type closeAttrs struct {
	rtol, atol float64
	equalNaN   bool
}

// isclose is torch's: x = y (infinities included), or both NaN where
// equalNaN, or |x - y| finite and at most atol + |rtol·y|, the error
// computed in float32 for integers and bool (torch's default dtype).
var opIsClose = composite("isclose", []string{"x", "y"}, func(in []*Tensor, a closeAttrs) *Tensor {
	x, y := in[0], in[1]
	close := x.Eq(y)
	if x.t.DType.IsFloat() && a.equalNaN {
		close = close.LogicalOr(x.Ne(x).LogicalAnd(y.Ne(y)))
	}
	if a.rtol == 0 && a.atol == 0 {
		return close
	}
	if !x.t.DType.IsFloat() {
		x, y = x.Cast(Float32), y.Cast(Float32)
	}
	allowed := y.MulScalar(a.rtol).Abs().AddScalar(a.atol)
	actual := x.Sub(y).Abs()
	return close.LogicalOr(actual.IsFinite().LogicalAnd(actual.Le(allowed)))
})

// IsClose is true where x and y are close, as torch.isclose(x, y, rtol,
// atol, equal_nan): equal (infinities of one sign included), or
// |x - y| ≤ atol + rtol·|y|, and both NaN where equalNaN (torch's defaults
// are rtol 1e-5, atol 1e-8, equal_nan false). Broadcast; y must have x's
// dtype, as torch's; a negative or NaN rtol or atol is ErrValue. The
// result is Bool.
func (x *Tensor) IsClose(y *Tensor, rtol, atol float64, equalNaN bool) *Tensor {
	const op = "isclose"
	for _, t := range []struct {
		name string
		v    float64
	}{{"rtol", rtol}, {"atol", atol}} {
		if !(t.v >= 0) {
			return failed(errorf(op, ErrValue, t.name, "is "+ftoa(t.v)+" but must be 0 or more, as torch's",
				"use a tolerance ≥ 0 (torch's defaults are rtol 1e-5, atol 1e-8)"))
		}
	}
	if _, err := mathPair(op, "y", x, y, nil); err != nil {
		return failed(err)
	}
	return apply(opIsClose, closeAttrs{rtol: rtol, atol: atol, equalNaN: equalNaN}, x, y)
}

// AllClose reports whether every element of x is close to y's, as
// torch.allclose: IsClose's rule, broadcast; an error where IsClose's
// arguments are at fault.
func (x *Tensor) AllClose(y *Tensor, rtol, atol float64, equalNaN bool) (bool, error) {
	c := x.IsClose(y, rtol, atol, equalNaN)
	defer c.Release()
	return allTrue(c, "allclose")
}

// Equal reports whether x and y have the same shape and elements, as
// torch.equal: NaN equals nothing, and dtypes are compared by value (an
// int32 1 equals a float32 1). A nil, released or failed tensor, or one on
// another device, is an error.
func (x *Tensor) Equal(y *Tensor) (bool, error) {
	const op = "equal"
	if err := x.check(op); err != nil {
		return false, err
	}
	if err := y.CheckArg(op, "y"); err != nil {
		return false, err
	}
	if x.t.Device != y.t.Device {
		return false, errorf(op, ErrDevice, "y", "is on "+y.t.Device.String()+" but x is on "+x.t.Device.String(),
			"move it with y.To("+x.t.Device.GoString()+")")
	}
	if !equalShapes(x.t.Shape, y.t.Shape) {
		return false, nil
	}
	e := x.Eq(y)
	defer e.Release()
	return allTrue(e, op)
}

func equalShapes(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// allTrue reports whether every element of the Bool tensor c is true.
func allTrue(c *Tensor, op string) (bool, error) {
	if err := c.Err(); err != nil {
		return false, relabel(c, op).Err()
	}
	a := c.All()
	defer a.Release()
	v, err := a.Bools()
	if err != nil {
		return false, err
	}
	return v[0], nil
}

var (
	opSoftmin = composite("softmin", []string{"x"}, func(in []*Tensor, dim int) *Tensor { return in[0].Neg().Softmax(dim) })
	// glu is a·sigmoid(b) for the halves a and b of x along dim.
	opGLU = composite("glu", []string{"x"}, func(in []*Tensor, dim int) *Tensor {
		return inFloat32(in, func(in []*Tensor) *Tensor {
			x := in[0]
			h := x.t.Shape[dim] / 2
			return x.Narrow(dim, 0, h).Mul(x.Narrow(dim, h, h).Sigmoid())
		})
	})
)

// Softmin is softmax(-x) along dim, as torch.nn.functional.softmin.
// Floats only.
func (x *Tensor) Softmin(dim int) *Tensor {
	if err := x.floatsOnly("softmin"); err != nil {
		return failed(err)
	}
	return apply(opSoftmin, dim, x)
}

// GLU is the gated linear unit a·sigmoid(b), a and b the first and second
// halves of x along dim, as torch.nn.functional.glu (torch's default dim
// is -1). Floats only; a dim out of range is ErrIndex, a 0-d x or an odd
// size along dim ErrShape.
func (x *Tensor) GLU(dim int) *Tensor {
	const op = "glu"
	if err := x.floatsOnly(op); err != nil {
		return failed(err)
	}
	if x.t.Rank() == 0 {
		return failed(errorf(op, ErrShape, "x", "is 0-d, which glu cannot halve (as torch's)", "give a tensor of rank 1 or more"))
	}
	d, err := sortDim(op, dim, x.t.Rank())
	if err != nil {
		return failed(err)
	}
	if n := x.t.Shape[d]; n%2 != 0 {
		return failed(errorf(op, ErrShape, "x", "has size "+strconv.Itoa(n)+" along dim "+strconv.Itoa(dim)+" (shape "+dispatch.FormatShape(x.t.Shape)+
			"), which glu cannot halve", "give an even size along dim, or choose another dim"))
	}
	return apply(opGLU, d, x)
}
