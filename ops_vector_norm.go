package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Vector norms (torch.linalg.vector_norm). The norm is a composite op built
// from abs, pow, sum, max, min and where, so that every backend runs it with
// kernels it already has and autodiff differentiates it, to any order, with
// the rules of those ops. Where the plain formula's derivative is 0·∞ (a
// zero element under |x|^p with p < 1, or a zero norm under S^(1/p)) the
// composite takes the value through a where whose other branch is a safe
// input, so that the gradient there is 0, as PyTorch's norm_backward
// (FunctionsManual.cpp) masks it with masked_fill_(norm == 0, 0) and
// masked_fill_(self == 0, 0).

// vectorNormAttrs are the attributes of vector_norm.
type vectorNormAttrs struct {
	p    float64
	dims []int
	keep bool
}

var opVectorNorm = composite("vector_norm", []string{"x"}, func(in []*Tensor, a vectorNormAttrs) *Tensor {
	return inFloat32(in, func(in []*Tensor) *Tensor { return vectorNorm(in[0], a) })
})

// Norm is the vector p-norm of x over dims (every dim when none is given;
// negative dims count from the end), as torch.linalg.vector_norm:
//
//	p = 2          √(Σ x²), also the Frobenius norm over the dims
//	p = 1          Σ |x|
//	p = +Inf       max |x| (math.Inf(1))
//	p = -Inf       min |x| (math.Inf(-1))
//	p = 0          the count of nonzero elements
//	other p        (Σ |x|^p)^(1/p), negative p included
//
// x must be a float tensor (ErrDType otherwise, as PyTorch). An empty
// reduction gives 0, except for p < 0 and ±Inf, which have no identity and
// give ErrShape. Like PyTorch, the 2-norm does not rescale: squares past the
// dtype's range give +Inf (1e30 in float32).
//
// Gradients follow PyTorch's norm_backward: 0 at a zero norm, ties of the
// ±Inf norms share the gradient evenly, and p = 0 has gradient 0. Where x
// holds NaN, the ±Inf norms' gradients over given dims are NaN over the
// group (PyTorch gives 0).
func (x *Tensor) Norm(p float64, dims ...int) *Tensor { return x.vectorNorm(p, false, dims) }

// NormKeepDim is Norm keeping each reduced dim as size 1, so that the result
// broadcasts against x (torch.linalg.vector_norm with keepdim=True).
func (x *Tensor) NormKeepDim(p float64, dims ...int) *Tensor { return x.vectorNorm(p, true, dims) }

func (x *Tensor) vectorNorm(p float64, keep bool, dims []int) *Tensor {
	const op = "vector_norm"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if !x.t.DType.IsFloat() {
		return failed(errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but the op takes a float dtype",
			"cast it with .Cast(lathe.Float32)"))
	}
	if math.IsNaN(p) {
		return failed(errorf(op, ErrValue, "p", "is NaN", "give a number, or math.Inf(1) for the max norm"))
	}
	reduced, _, err := ops.ReduceShape(x.t, ops.Reduce{Dims: dims, KeepDim: keep})
	if err != nil {
		return relabel(failed(err), op)
	}
	if p < 0 {
		// -Inf too, before min's own error names min.
		for _, d := range reduced {
			if x.t.Shape[d] == 0 {
				return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" and dim "+
					strconv.Itoa(d)+" is empty, but the "+strconv.FormatFloat(p, 'g', -1, 64)+" norm has no identity",
					"reduce only non-empty dims, or use p ≥ 0"))
			}
		}
	}
	// An empty reduction under +Inf is max's error, named for the norm.
	return relabel(apply(opVectorNorm, vectorNormAttrs{p: p, dims: dims, keep: keep}, x), op)
}

// vectorNorm is the body of the composite.
func vectorNorm(x *Tensor, a vectorNormAttrs) *Tensor {
	const op = "vector_norm"
	p := a.p
	sum := func(t *Tensor) *Tensor { return t.reduce(ops.Sum, a.keep, 0, a.dims) }
	switch {
	case p == 0:
		// 1 where x is not 0 (NaN included), else sign(x) = 0, whose
		// gradient is 0: the count stays connected to x, so that its
		// gradient is zeros (PyTorch's) rather than none.
		return sum(Where(x.NeScalar(0), x.scalarLike(op, 1), x.Sign()))
	case p == 1:
		return sum(x.Abs())
	case math.IsInf(p, 1):
		return x.Abs().reduce(ops.Max, a.keep, 0, a.dims)
	case math.IsInf(p, -1):
		return x.Abs().reduce(ops.Min, a.keep, 0, a.dims)
	case p == 2:
		// x·x rather than x², whose gradient g·(2x) is 0·∞ = NaN where 2x
		// overflows (|x| past half the dtype's range, a norm of +Inf):
		// x·x's is g·x + x·g, 0 there as PyTorch's x·(g/norm) is.
		return rootSafe(op, sum(x.Mul(x)), 2)
	}
	// |x|^p, with 0^p (0, or +Inf for p < 0) where x is 0 taken from a
	// constant, so that |x|^(p-1)·sign(x) is never 0·∞.
	zero := x.EqScalar(0)
	one := x.scalarLike(op, 1)
	safe := Where(zero, one, x).Abs()
	pw := Where(zero, x.scalarLike(op, math.Pow(0, p)), safe.PowScalar(p))
	return rootSafe(op, sum(pw), p)
}

// rootSafe is s^(1/p) for s ≥ 0, with 0^(1/p) and a zero gradient where s
// is 0: 0, or +Inf for p < 0, where every |x|^p is 0 (x infinite, or a
// power that underflows), as PyTorch's pow(0, 1/p) gives.
func rootSafe(op string, s *Tensor, p float64) *Tensor {
	if s.err != nil {
		return s // the sum's error (a result too large to allocate)
	}
	zero := s.EqScalar(0)
	safe := Where(zero, s.scalarLike(op, 1), s)
	var r *Tensor
	if p == 2 {
		r = safe.Sqrt()
	} else {
		r = safe.PowScalar(1 / p)
	}
	return Where(zero, s.scalarLike(op, math.Pow(0, 1/p)), r)
}
