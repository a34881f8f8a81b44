//go:build cgo

package wgpu

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Indexing kernels (index.wgsl). Index tensors are int32 or int64 (the
// kernels read either, indexData), and one_hot gives int64, as on every
// device.
//
// A bad index is dispatch's value check (checks.go): queued on the device
// before the op, reported with the next read-back. Whatever the index
// holds, the kernels read and write only their own buffers: WebGPU bounds
// every access.

func init() {
	registerMove(ops.IndexSelect, allTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
		x, index := in[0], in[1]
		op := ops.IndexSelect.Name
		if x.Rank() == 0 {
			// torch keeps a 0-d x 0-d; every index must still be 0.
			return copyInto(op, out, x)
		}
		d := a.Of(x)
		// out[.., i, ..] = x[.., index[i], ..]: the index is read along d only.
		along := make([]int, x.Rank())
		if index.Rank() == 1 {
			along[d] = index.Strides[0]
		}
		return gatherInto(op, out, x, index, d, view{index.Offset, along})
	})
	registerMove(ops.Gather, allTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
		x, index := in[0], in[1]
		op := ops.Gather.Name
		if x.Rank() == 0 {
			return copyInto(op, out, x)
		}
		return gatherInto(op, out, x, index, a.Of(x), viewOf(index))
	})
	registerMove(ops.Scatter, allTypes, scatterKernel(ops.Scatter.Name, false))
	register(ops.ScatterAdd, allTypes, scatterKernel(ops.ScatterAdd.Name, true))
	// x holds classes, int32 or int64; out is int64.
	register(ops.OneHot, dispatch.Indices, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.OneHotClasses) error {
		x, classes, op := in[0], a.NumClasses, ops.OneHot.Name
		n := out.Numel()
		if n == 0 {
			return nil
		}
		// x is read once per class: stride 0 along the new last dim.
		params, err := walkParams(out.Shape, []view{{x.Offset, append(slices.Clone(x.Strides), 0)}}, classes)
		if err != nil {
			return err
		}
		data := indexData(out, x, 2)
		sh, err := shaderFor("one_hot/"+data.I, "one_hot", data)
		if err != nil {
			return err
		}
		return launch(op, sh, grid(n), params, out, x)
	})
}

// indexKernel is what the index kernels' templates see (index.wgsl): the
// element words .T of out, the index's WGSL type .I and its binding, and
// scatter's and scatter_add_atomic's fields.
type indexKernel struct {
	T, I         string
	IndexBinding int
	Combine      string
	Float, Int64 bool
	A, Op        string
}

func indexData(out, index *dispatch.Tensor, binding int) indexKernel {
	return indexKernel{T: wordType(out.DType), I: wgslType(index.DType), IndexBinding: binding}
}

// gatherInto writes out[i] = x[... index[at(i)] ... along d], for out of
// the index's shape (gather) or x's shape with the index's length at d
// (index_select, whose iview repeats the index off d).
func gatherInto(op string, out, x, index *dispatch.Tensor, d int, iview view) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	xs := slices.Clone(x.Strides)
	step := xs[d]
	xs[d] = 0
	params, err := walkParams(out.Shape, []view{{x.Offset, xs}, iview}, step)
	if err != nil {
		return err
	}
	data := indexData(out, index, 3)
	sh, err := shaderFor("gather/"+data.T+"/"+data.I, "gather", data)
	if err != nil {
		return err
	}
	return launch(op, sh, grid(n), params, out, x, index)
}

// scatterKernel is scatter's kernel, or scatter_add's where add is set: out
// starts as a copy of x, then src's elements go where the index says.
func scatterKernel(op string, add bool) dispatch.Kernel[ops.IndexDim] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
		x, index, src := in[0], in[1], in[2]
		d := a.Of(x)
		if err := copyInto(op, out, x); err != nil {
			return err
		}
		if index.Numel() == 0 {
			return nil
		}
		if add && !walkLines(index, d) {
			return scatterAddAtomic(out, src, index, d)
		}
		return scatterLines(op, add, out, src, index, d)
	}
}

// walkLines says whether scatter_add walks the index's lines along d, one
// invocation each, which is deterministic (the cpu's order of sums) and as
// parallel as the device where there are many lines or each is short. Few
// long lines (an embedding's backward: one per column, as long as the
// batch) would leave the device to a few invocations; they go to the
// atomic kernel instead, which sums float32 in an order of the hardware's
// (as PyTorch's CUDA scatter_add does). scatter itself always walks lines,
// so that its last write is the cpu's.
func walkLines(index *dispatch.Tensor, d int) bool {
	const manyLines, shortLine = 4096, 16
	if index.Rank() == 0 {
		return true
	}
	length := index.Shape[d]
	return index.Numel()/length >= manyLines || length <= shortLine
}

// dropDim is s without its element d.
func dropDim(s []int, d int) []int { return append(slices.Clone(s[:d]), s[d+1:]...) }

// scatterLines launches the scatter shader with one item per line of the
// index along d.
func scatterLines(op string, add bool, out, src, index *dispatch.Tensor, d int) error {
	data := indexData(out, index, 3)
	data.T = wgslType(out.DType)
	switch {
	case add && out.DType == dispatch.Bool:
		data.Combine = "old | v" // torch's bool add
	case add && out.DType == dispatch.Int64:
		data.Combine = "i64_add(old, v)"
	case add:
		data.Combine = "old + v"
	default:
		data.Combine = "v"
	}
	sh, err := shaderFor("scatter/"+op+"/"+data.T+"/"+data.I, "scatter", data)
	if err != nil {
		return err
	}
	lines, length := []int{}, 1
	views := []view{{out.Offset, nil}, {src.Offset, nil}, {index.Offset, nil}}
	steps := []int{0, 0, 0}
	if index.Rank() > 0 {
		lines, length = dropDim(index.Shape, d), index.Shape[d]
		for k, t := range []*dispatch.Tensor{out, src, index} {
			views[k].strides = dropDim(t.Strides, d)
			steps[k] = t.Strides[d]
		}
	}
	params, err := walkParams(lines, views, length, steps[0], steps[1], steps[2])
	if err != nil {
		return err
	}
	return launch(op, sh, grid(dispatch.Numel(lines)), params, out, src, index)
}

// scatterAddAtomic launches scatter_add_atomic with one item per element
// of the index (of rank 1 or more).
func scatterAddAtomic(out, src, index *dispatch.Tensor, d int) error {
	data := indexData(out, index, 3)
	data.Float, data.Int64 = out.DType == dispatch.Float32, out.DType == dispatch.Int64
	data.A, data.Op = "u32", "atomicOr"
	if out.DType == dispatch.Int32 {
		data.A, data.Op = "i32", "atomicAdd"
	}
	sh, err := shaderFor("scatter_add_atomic/"+out.DType.String()+"/"+data.I, "scatter_add_atomic", data)
	if err != nil {
		return err
	}
	os := slices.Clone(out.Strides)
	step := os[d]
	os[d] = 0
	params, err := walkParams(index.Shape, []view{{out.Offset, os}, viewOf(src), viewOf(index)}, step)
	if err != nil {
		return err
	}
	return launch("scatter_add", sh, grid(index.Numel()), params, out, src, index)
}
