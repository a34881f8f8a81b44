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
	at := scatterAt{out: addressOf(out), src: addressOf(src), index: addressOf(index), dt: src.DType, ikind: index.DType}
	return scatterLines(out.Device, name, at, w, n, ostep, sstep, istep, size)
}

// scatterAt is where a scatter's operands are and what they hold: out,
// src (of dtype dt) and the index (of dtype ikind, int32 or int64).
type scatterAt struct {
	out, src, index uint64
	dt, ikind       dispatch.DType
}

// scatterLines launches scatter or scatter_add (name) over the lines of w
// (operands out, src and the index, each line n places along the dim, where
// they step by ostep, sstep and istep; size is out's length there): one
// thread per line, walking it, or for long lines that are few, with the
// index sorted first (scatterSorted).
func scatterLines(dev dispatch.Device, name string, at scatterAt, w layout.Walk, n, ostep, sstep, istep, size int) error {
	l, err := layoutOf(w)
	if err != nil {
		return err
	}
	nlines := dispatch.Numel(w.Shape)
	if n >= scatterSortedFrom && nlines < scatterSortedLines && nlines*n <= scatterSortedMost {
		return scatterSorted(dev, name, at, w, l, nlines, n, ostep, sstep, istep, size)
	}
	g, b := grid1(nlines)
	return enqueue(dev, "index", name+"_"+suffix(at.dt), g, b, 0,
		at.out, at.src, at.index, int64(nlines), cBytes(&l),
		int64(n), int64(ostep), int64(sstep), int64(istep), int64(size), int32(at.ikind))
}

// A scatter sorts its lines' indices first (scatterSorted) where they are
// at least scatterSortedFrom long and fewer than scatterSortedLines, the
// threads that would keep a GPU busy walking them one a line, and hold at
// most scatterSortedMost places in all: sorting takes scratch memory of
// 8 bytes a place, and 32 more for a line past argsort's 1,024-element block.
const (
	scatterSortedFrom  = 32
	scatterSortedLines = 1 << 16
	scatterSortedMost  = 1 << 24
)

// scatterSorted is scatterLines' launch for long lines: argsort orders each
// line's n index values stably (one row for an index that is the same on
// every line, as index_select's backward's, so embedding's; a row per line
// otherwise, as max_pool_backward's planes), and scatter_sorted_ or
// scatter_add_sorted_<dtype> gives each run of one value, on each line, a
// thread that writes its element in the run's order, so that the values
// are scattered side by side where a line's thread walked all n places in
// turn, with the same bits.
func scatterSorted(dev dispatch.Device, name string, at scatterAt, w layout.Walk, l cLayout, nlines, n, ostep, sstep, istep, size int) error {
	sorted := 1 // rows of the index sorted: one if it is the same on every line
	outer := layout.Walk{Strides: make([][]int, 2)}
	if slices.ContainsFunc(w.Strides[2], func(s int) bool { return s != 0 }) {
		sorted = nlines
		outer.Shape, outer.Strides[1] = w.Shape, w.Strides[2]
		for _, s := range dispatch.ContiguousStrides(w.Shape) {
			outer.Strides[0] = append(outer.Strides[0], s*n) // perm's row of each line
		}
	}
	r, err := rows(outer, layout.Walk{Shape: []int{n}, Strides: [][]int{{1}, {istep}}})
	if err != nil {
		return err
	}
	perm, free, err := borrow(dev, sorted*n*8)
	if err != nil {
		return err
	}
	defer free() // the allocator reuses it only after the queued kernels
	if err := argsortAt(dev, at.ikind, perm, at.index, r, sorted, n, false); err != nil {
		return err
	}
	pstride := 0
	if sorted > 1 {
		pstride = n
	}
	g, b := grid1(n * nlines)
	return enqueue(dev, "index", name+"_sorted_"+suffix(at.dt), g, b, 0,
		at.out, at.src, at.index, perm, int64(pstride), int64(nlines), cBytes(&l),
		int64(n), int64(ostep), int64(sstep), int64(istep), int64(size), int32(at.ikind))
}
