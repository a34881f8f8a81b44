package lathe

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Reductions. Dims may be negative (counting from the end); no dims means
// every dim, giving a 0-d tensor. The KeepDim forms keep each reduced dim as
// size 1, so that the result broadcasts against x. Reducing an empty dim
// gives the op's identity, as in PyTorch: sum 0, prod 1, mean and var nan,
// logsumexp -inf; max, min, argmax and argmin have none and return ErrShape.

func (x *Tensor) reduce(op *dispatch.Op[ops.Reduce], keep bool, correction int, dims []int) *Tensor {
	return apply(op, ops.Reduce{Dims: dims, KeepDim: keep, Correction: correction}, x)
}

// Sum adds the elements over dims. Float32 sums accumulate in float64 and
// round once (on wgpu in float32: README, WebGPU). Integer and bool x sum
// to Int64, as torch's (a bool sum counts the true values): x is cast to
// int64 first, on every device, so a uint8 or int32 sum cannot wrap; the
// cast is a temporary of 8 bytes per element.
func (x *Tensor) Sum(dims ...int) *Tensor { return x.wideReduce(ops.Sum, false, dims) }

// SumKeepDim is Sum keeping the reduced dims as size 1.
func (x *Tensor) SumKeepDim(dims ...int) *Tensor { return x.wideReduce(ops.Sum, true, dims) }

// Prod multiplies the elements over dims, accumulating as Sum does;
// integer and bool x give Int64 as Sum's do (an int64 product wraps).
func (x *Tensor) Prod(dims ...int) *Tensor { return x.wideReduce(ops.Prod, false, dims) }

// ProdKeepDim is Prod keeping the reduced dims as size 1.
func (x *Tensor) ProdKeepDim(dims ...int) *Tensor { return x.wideReduce(ops.Prod, true, dims) }

// wideReduce is a sum or product of x, int64 where x holds integers or
// bools (asInt64).
func (x *Tensor) wideReduce(op *dispatch.Op[ops.Reduce], keep bool, dims []int) *Tensor {
	w := x.asInt64(op.Name)
	out := w.reduce(op, keep, 0, dims)
	if w != x {
		w.Release() // the cast, which nothing else holds: integers have no graph
	}
	return out
}

// asInt64 is x cast to Int64 where it holds integers or bools, the dtype
// of torch's sums, products and running sums of them; any other x, and a
// nil, failed or released one (for the op to report), is x itself.
func (x *Tensor) asInt64(op string) *Tensor {
	if x == nil || x.err != nil || x.t == nil || x.t.Released() {
		return x
	}
	if dt := x.t.DType; dt == Int64 || dt != Bool && !dt.IsInt() {
		return x
	}
	return x.promoteTo(op, "x", Int64)
}

// Mean is the average over dims, Sum divided by the count; floats only.
func (x *Tensor) Mean(dims ...int) *Tensor { return x.reduce(ops.Mean, false, 0, dims) }

// MeanKeepDim is Mean keeping the reduced dims as size 1.
func (x *Tensor) MeanKeepDim(dims ...int) *Tensor { return x.reduce(ops.Mean, true, 0, dims) }

// Max is the largest element over dims (torch.amax); a NaN makes it NaN.
func (x *Tensor) Max(dims ...int) *Tensor { return x.reduce(ops.Max, false, 0, dims) }

// MaxKeepDim is Max keeping the reduced dims as size 1.
func (x *Tensor) MaxKeepDim(dims ...int) *Tensor { return x.reduce(ops.Max, true, 0, dims) }

// Min is the smallest element over dims (torch.amin); a NaN makes it NaN.
func (x *Tensor) Min(dims ...int) *Tensor { return x.reduce(ops.Min, false, 0, dims) }

// MinKeepDim is Min keeping the reduced dims as size 1.
func (x *Tensor) MinKeepDim(dims ...int) *Tensor { return x.reduce(ops.Min, true, 0, dims) }

// LogSumExp is log Σ exp(x) over dims, computed shifted by the maximum so
// that it neither overflows nor underflows; floats only.
func (x *Tensor) LogSumExp(dims ...int) *Tensor { return x.reduce(ops.LogSumExp, false, 0, dims) }

// LogSumExpKeepDim is LogSumExp keeping the reduced dims as size 1.
func (x *Tensor) LogSumExpKeepDim(dims ...int) *Tensor { return x.reduce(ops.LogSumExp, true, 0, dims) }

func correction(unbiased bool) int {
	if unbiased {
		return 1
	}
	return 0
}

// Var is the variance over dims: the mean squared deviation from the mean,
// divided by N-1 when unbiased (PyTorch's default) and N otherwise; N-1 = 0
// gives nan or inf, as in PyTorch. Computed in two passes in float64;
// floats only.
func (x *Tensor) Var(unbiased bool, dims ...int) *Tensor {
	return x.reduce(ops.Var, false, correction(unbiased), dims)
}

// VarKeepDim is Var keeping the reduced dims as size 1.
func (x *Tensor) VarKeepDim(unbiased bool, dims ...int) *Tensor {
	return x.reduce(ops.Var, true, correction(unbiased), dims)
}

// Std is the square root of Var.
func (x *Tensor) Std(unbiased bool, dims ...int) *Tensor {
	return x.reduce(ops.Std, false, correction(unbiased), dims)
}

// StdKeepDim is Std keeping the reduced dims as size 1.
func (x *Tensor) StdKeepDim(unbiased bool, dims ...int) *Tensor {
	return x.reduce(ops.Std, true, correction(unbiased), dims)
}

// ArgMax is the index of the largest element, as an Int64 on every
// device (PyTorch's index dtype): with no dim, into the flattened tensor (a 0-d
// result); with one dim, along it. Ties give the
// first index; NaN counts as larger than any number, so the first NaN wins,
// as in PyTorch. More than one dim is ErrValue.
func (x *Tensor) ArgMax(dims ...int) *Tensor { return x.reduce(ops.ArgMax, false, 0, dims) }

// ArgMaxKeepDim is ArgMax along dim, keeping it as size 1.
func (x *Tensor) ArgMaxKeepDim(dim int) *Tensor { return x.reduce(ops.ArgMax, true, 0, []int{dim}) }

// ArgMin is ArgMax's counterpart for the smallest element (NaN again counts
// as the extreme, so the first NaN wins).
func (x *Tensor) ArgMin(dims ...int) *Tensor { return x.reduce(ops.ArgMin, false, 0, dims) }

// ArgMinKeepDim is ArgMin along dim, keeping it as size 1.
func (x *Tensor) ArgMinKeepDim(dim int) *Tensor { return x.reduce(ops.ArgMin, true, 0, []int{dim}) }

// CumSum is the running sum along dim, of x's shape. Floats accumulate in
// float64 (on wgpu, whose shaders have no 64-bit floats, float32
// accumulates in float32, as its sums do) and keep their dtype; integer
// and bool x give Int64, as torch's, cast as Sum's are.
func (x *Tensor) CumSum(dim int) *Tensor {
	w := x.asInt64("cumsum")
	out := apply(ops.CumSum, ops.Scan{Dim: dim}, w)
	if w != x {
		w.Release()
	}
	return out
}
