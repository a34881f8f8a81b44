package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// View ops: the result shares x's storage (no data moves), so they are cheap
// and work on any layout, including views of views. Reshape and Flatten copy
// only when x's strides cannot be viewed in the new shape.

// Reshape returns x with the given sizes (one may be -1, inferred from the
// rest). It is a view when x's strides allow one, as torch.Tensor.view
// would take, and otherwise a contiguous copy of x in the new shape.
func (x *Tensor) Reshape(shape ...int) *Tensor {
	return apply(ops.Reshape, ops.ViewShape{Shape: append([]int(nil), shape...)}, x)
}

// View is Reshape that never copies: an ErrShape error where x's strides
// cannot be laid out in the new shape (a transposed matrix flattened, say).
func (x *Tensor) View(shape ...int) *Tensor {
	return apply(ops.View, ops.ViewShape{Shape: append([]int(nil), shape...)}, x)
}

// Flatten returns x with dims start to end (both included, either may be
// negative) made one, a view where the strides allow, as torch.flatten.
// With no dims it flattens all, to a 1-D tensor (a 0-d x gives one
// element); Flatten(1, -1) keeps the batch dim, as nn.Flatten. Other than
// none or two dims is an ErrValue.
func (x *Tensor) Flatten(dims ...int) *Tensor {
	a := ops.FlattenDims{Start: 0, End: -1}
	switch len(dims) {
	case 0:
	case 2:
		a = ops.FlattenDims{Start: dims[0], End: dims[1]}
	default:
		return failed(errorf("flatten", ErrValue, "dims", "has "+strconv.Itoa(len(dims))+" dims", "pass none (flatten all) or two: start and end"))
	}
	return apply(ops.Flatten, a, x)
}

// Permute reorders x's dims: dim i of the result is dim dims[i] of x.
func (x *Tensor) Permute(dims ...int) *Tensor {
	return apply(ops.Permute, ops.PermuteDims{Dims: append([]int(nil), dims...)}, x)
}

// Transpose swaps dims d0 and d1.
func (x *Tensor) Transpose(d0, d1 int) *Tensor {
	return apply(ops.Transpose, ops.TransposeDims{Dim0: d0, Dim1: d1}, x)
}

// MT is the transpose of the last two dims (torch's Tensor.mT); x must have
// rank at least 2.
func (x *Tensor) MT() *Tensor { return apply(ops.MT, none, x) }

// Squeeze removes size-1 dims: with no dims every one, else those named
// that have size 1 (a named dim of another size stays, as in torch).
func (x *Tensor) Squeeze(dims ...int) *Tensor {
	return apply(ops.Squeeze, ops.SqueezeDims{Dims: append([]int(nil), dims...)}, x)
}

// Unsqueeze inserts a size-1 dim at dim, in [-rank-1, rank].
func (x *Tensor) Unsqueeze(dim int) *Tensor {
	return apply(ops.Unsqueeze, ops.UnsqueezeDim{Dim: dim}, x)
}

// Expand repeats size-1 dims to the sizes given (stride 0, no copy); -1
// keeps a size, and new leading dims may be added.
func (x *Tensor) Expand(shape ...int) *Tensor {
	return apply(ops.Expand, ops.ViewShape{Shape: append([]int(nil), shape...)}, x)
}

// BroadcastTo expands x to shape by NumPy's rule, as torch.broadcast_to.
func (x *Tensor) BroadcastTo(shape ...int) *Tensor {
	return apply(ops.BroadcastTo, ops.ViewShape{Shape: append([]int(nil), shape...)}, x)
}

// Narrow keeps length elements of dim from start (negative start counts
// from the end); start+length must not pass the dim's size.
func (x *Tensor) Narrow(dim, start, length int) *Tensor {
	return apply(ops.Narrow, ops.NarrowRange{Dim: dim, Start: start, Length: length}, x)
}

// Slice is Python's x[start:stop:step] along dim: negative start and stop
// count from the end and out-of-range ones are clamped; step is at least 1.
func (x *Tensor) Slice(dim, start, stop, step int) *Tensor {
	return apply(ops.Slice, ops.SliceRange{Dim: dim, Start: start, Stop: stop, Step: step}, x)
}
