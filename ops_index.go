package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Indexing ops. Index tensors are Int32 or Int64; an index outside
// [0, size) is an ErrIndex error that names the value and the range
// (negative indices do not wrap, as in torch's index_select and gather).

// IndexSelect picks the entries of dim named by index (1-D or 0-d): the
// result has x's shape with that dim's size len(index).
func (x *Tensor) IndexSelect(dim int, index *Tensor) *Tensor {
	return apply(ops.IndexSelect, ops.IndexDim{Dim: dim}, x, index)
}

// Gather reads along dim: out[i][j][k] = x[index[i][j][k]][j][k] for dim 0,
// and so on. index has x's rank and no larger size than x off dim; the
// result has index's shape.
func (x *Tensor) Gather(dim int, index *Tensor) *Tensor {
	return apply(ops.Gather, ops.IndexDim{Dim: dim}, x, index)
}

// Scatter returns a copy of x with src written along dim where index says:
// out[index[i][j][k]][j][k] = src[i][j][k] for dim 0. index has x's rank,
// no larger size than src in any dim nor than x off dim. Where index repeats
// a position, the last write in index's row-major order wins (torch leaves
// it unspecified).
func (x *Tensor) Scatter(dim int, index, src *Tensor) *Tensor {
	return apply(ops.Scatter, ops.IndexDim{Dim: dim}, x, index, src)
}

// ScatterAdd is Scatter that adds src to x's values instead of overwriting
// them; repeated positions accumulate (Bool adds as logical or).
func (x *Tensor) ScatterAdd(dim int, index, src *Tensor) *Tensor {
	return apply(ops.ScatterAdd, ops.IndexDim{Dim: dim}, x, index, src)
}

// MaskedFill returns x with value where mask (Bool, broadcasting with x)
// is true. As in torch, the result has the broadcast shape of x and mask.
func (x *Tensor) MaskedFill(mask *Tensor, value float64) *Tensor {
	return apply(ops.MaskedFill, ops.FillValue{Value: value}, x, mask)
}

// OneHot turns a tensor of class indices (Int32 or Int64) into a tensor of
// Int64 (on every device, as PyTorch) with a new last dim of numClasses, 1 at each class and 0 elsewhere.
// numClasses -1 means the largest class + 1, as torch.nn.functional.one_hot.
func (x *Tensor) OneHot(numClasses int) *Tensor {
	if err := x.check("one_hot"); err != nil {
		return failed(err)
	}
	if numClasses == -1 && x.t.DType.IsInt() {
		if x.t.Numel() == 0 {
			return failed(errorf("one_hot", ErrValue, "x", "is empty, so the number of classes cannot be inferred",
				"pass numClasses explicitly"))
		}
		data, err := x.host("one_hot")
		if err != nil {
			return failed(err)
		}
		var top int64
		switch d := data.(type) {
		case []int32:
			top = int64(maxOf(d))
		case []int64:
			top = maxOf(d)
		}
		if top == math.MaxInt64 {
			return failed(errorf("one_hot", ErrShape, "x", "holds class "+strconv.FormatInt(top, 10)+", so its max + 1 classes are more than an int counts",
				"pass numClasses explicitly"))
		}
		numClasses = int(max(top+1, 0)) // a negative class then fails in the kernel
	}
	return apply(ops.OneHot, ops.OneHotClasses{NumClasses: numClasses}, x)
}

func maxOf[T int32 | int64](d []T) T {
	m := d[0]
	for _, v := range d[1:] {
		m = max(m, v)
	}
	return m
}

// Embedding looks up rows of weight ([num_embeddings, embedding_dim]) by
// indices of any shape, as torch.nn.functional.embedding: the result has
// shape indices.shape + [embedding_dim].
func Embedding(indices, weight *Tensor) *Tensor {
	return apply(ops.Embedding, none, indices, weight)
}
