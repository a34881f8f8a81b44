package cuda

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Indexing (kernels/cuda/index.cu): index_select and gather are one gather
// kernel, scatter and scatter_add one line-per-thread scatter, and one_hot.
//
// Index values are dispatch's value checks (checks.go); the kernels skip
// (or read 0 at) an index out of range, so a bad one never touches memory.

func init() {
	// index_select, gather and scatter move a 16-bit float's bits in its own
	// dtype (index.cu's u16 instantiations), a signalling NaN's too, where
	// float32 temporaries quieted it; scatter_add computes through them.
	moves := func(op *dispatch.Op[ops.IndexDim], k dispatch.Kernel[ops.IndexDim]) {
		kernelHalves(op, dtypes, native(k), k)
	}
	moves(ops.IndexSelect, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
		x, index := in[0], in[1]
		if x.Rank() == 0 {
			// torch keeps a 0-d x 0-d, reading its one element; every
			// index must still be 0.
			return named("index_select", gatherKernel(out, x, index, layout.Walk{Strides: make([][]int, 3)}, 0, 1))
		}
		d := a.Of(x)
		xs := slices.Clone(x.Strides)
		xs[d] = 0
		is := make([]int, x.Rank())
		if index.Rank() == 1 {
			is[d] = index.Strides[0]
		}
		w := layout.Walk{Shape: out.Shape, Strides: [][]int{out.Strides, xs, is}}
		return named("index_select", gatherKernel(out, x, index, w, x.Strides[d], x.Shape[d]))
	})
	moves(ops.Gather, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
		x, index := in[0], in[1]
		xs, step, size := make([]int, index.Rank()), 0, 1
		d := 0
		if x.Rank() > 0 {
			d = a.Of(x)
			copy(xs, x.Strides)
			step, size = xs[d], x.Shape[d]
			xs[d] = 0
		}
		w := layout.Walk{Shape: out.Shape, Strides: [][]int{out.Strides, xs, index.Strides}}
		return named("gather", gatherKernel(out, x, index, w, step, size))
	})
	for _, op := range []*dispatch.Op[ops.IndexDim]{ops.Scatter, ops.ScatterAdd} {
		name := op.Name
		k := func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
			return named(name, scatterKernel(out, in[0], in[1], in[2], name, a))
		}
		if op == ops.Scatter {
			moves(op, k)
		} else {
			kernel(op, dtypes, k)
		}
	}
	kernel(ops.OneHot, dispatch.Ints, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.OneHotClasses) error {
		index := in[0]
		classes := a.NumClasses
		n := out.Numel()
		if n == 0 {
			return nil
		}
		l, err := layoutOf(layout.Walk{Shape: index.Shape, Strides: [][]int{dispatch.ContiguousStrides(index.Shape), index.Strides}})
		if err != nil {
			return named("one_hot", err)
		}
		g, b := grid1(n)
		return named("one_hot", enqueue(out.Device, "index", "one_hot", g, b, 0,
			addressOf(out), addressOf(index), int64(n), cBytes(&l), int64(classes), int32(index.DType)))
	})
}

// gatherKernel launches gather_<dtype>: out[i] = x[off1 + idx[off2]*step]
// over w (operands out, x with the indexed dim's stride 0, the index).
func gatherKernel(out, x, index *dispatch.Tensor, w layout.Walk, step, size int) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	l, err := layoutOf(w)
	if err != nil {
		return err
	}
	g, b := grid1(n)
	return enqueue(out.Device, "index", "gather_"+suffix(x.DType), g, b, 0,
		addressOf(out), addressOf(x), addressOf(index), int64(n), cBytes(&l), int64(step), int64(size), int32(index.DType))
}

// scatterKernel copies x into out, then launches scatter_<dtype> or
// scatter_add_<dtype> with one thread per line of the index along the dim.
func scatterKernel(out, x, index, src *dispatch.Tensor, name string, a ops.IndexDim) error {
	d, size := 0, 1
	if x.Rank() > 0 {
		d = a.Of(x)
		size = x.Shape[d]
	}
	if err := copyInto(out.Device, viewOf(out), viewOf(x)); err != nil {
		return err
	}
	if index.Numel() == 0 {
		return nil
	}
	// The lines: the index's dims but the scattered one, walked by out, src
	// and the index; along the line each steps by its stride on the dim. A
	// 0-d index is one line of one element, written at out's element 0 as
	// on the cpu.
	w := layout.Walk{Strides: make([][]int, 3)}
	n, ostep, sstep, istep, size := 1, 0, 0, 0, 1
	if index.Rank() > 0 {
		d := a.Of(x)
		if x.Rank() > 0 {
			size = x.Shape[d]
		}
		n, ostep, sstep, istep = index.Shape[d], out.Strides[d], src.Strides[d], index.Strides[d]
		for k := range index.Shape {
			if k == d {
				continue
			}
			w.Shape = append(w.Shape, index.Shape[k])
			w.Strides[0] = append(w.Strides[0], out.Strides[k])
			w.Strides[1] = append(w.Strides[1], src.Strides[k])
			w.Strides[2] = append(w.Strides[2], index.Strides[k])
		}
	}
	l, err := layoutOf(w)
	if err != nil {
		return err
	}
	nlines := dispatch.Numel(w.Shape)
	if n >= scatterSortedFrom && !slices.ContainsFunc(w.Strides[2], func(s int) bool { return s != 0 }) {
		return scatterSorted(out, src, index, name, l, nlines, n, ostep, sstep, istep, size)
	}
	g, b := grid1(nlines)
	return enqueue(out.Device, "index", name+"_"+suffix(x.DType), g, b, 0,
		addressOf(out), addressOf(src), addressOf(index), int64(nlines), cBytes(&l),
		int64(n), int64(ostep), int64(sstep), int64(istep), int64(size), int32(index.DType))
}

// scatterSortedFrom is the index length along the dim from which a scatter
// whose index is the same on every line sorts it first (scatterSorted).
const scatterSortedFrom = 32

// scatterSorted is scatterKernel's launch for an index that is the same on
// every line: argsort orders its n values stably, and scatter_sorted_ or
// scatter_add_sorted_<dtype> gives each run of one value, on each line, a
// thread, so that the distinct values are scattered side by side where
// each line's thread walked all n in turn, with the same result.
func scatterSorted(out, src, index *dispatch.Tensor, name string, l cLayout, nlines, n, ostep, sstep, istep, size int) error {
	values, err := index.CheckedView([]int{n}, []int{istep}, index.Offset)
	if err != nil {
		return err
	}
	buf, err := allocate(out.Device, dispatch.Int64, n)
	if err != nil {
		return err
	}
	perm := dispatch.NewTensor(out.Device, dispatch.Int64, []int{n}, buf)
	defer perm.Release() // its memory goes to later work on the stream only
	r, _, _, err := alongRows(perm, values, 0)
	if err == nil {
		err = argsort(perm, values, r, 1, n, false)
	}
	if err != nil {
		return err
	}
	g, b := grid1(n * nlines)
	return enqueue(out.Device, "index", name+"_sorted_"+suffix(src.DType), g, b, 0,
		addressOf(out), addressOf(src), addressOf(index), addressOf(perm), int64(nlines), cBytes(&l),
		int64(n), int64(ostep), int64(sstep), int64(istep), int64(size), int32(index.DType))
}
