package cpu

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/layout"
)

// Indexing kernels. Index tensors (Int32 or Int64, any layout) are first
// read into a row-major []int64 and checked against the size they index, so
// that a bad index is an error before anything is written, and the loops
// below need one index type only.

func init() {
	registerNative(ops.IndexSelect, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
		x, index := in[0], in[1]
		if x.Rank() == 0 {
			// torch keeps a 0-d x 0-d; every index must still be 0.
			castInto(out, x)
			return nil
		}
		d := a.Of(x)
		idx := indexValues(index)
		src, done := rowMajor(x)
		defer done()
		return withIndexKernels(x.DType, func(k indexKernels) { k.indexSelect(out, src, idx, d) })
	})
	registerNative(ops.Gather, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
		x, index := in[0], in[1]
		d := a.Of(x)
		idx := indexValues(index)
		return withIndexKernels(x.DType, func(k indexKernels) { k.gather(out, x, idx, d) })
	})
	scatter := func(add bool) dispatch.Kernel[ops.IndexDim] {
		return func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
			x, index, src := in[0], in[1], in[2]
			d := a.Of(x)
			castInto(out, x) // out-of-place: start from a copy of x
			if add && scatterAddSlices(out, src, index, d) {
				return nil
			}
			idx := indexValues(index)
			return withIndexKernels(x.DType, func(k indexKernels) { k.scatter(out, src, idx, index.Shape, d, add) })
		}
	}
	registerNative(ops.Scatter, dispatch.AllTypes, scatter(false))
	register(ops.ScatterAdd, scatter(true)) // adds: the narrow dtypes widen

	register(ops.OneHot, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.OneHotClasses) error {
		nc := a.NumClasses
		idx := indexValues(in[0])
		o := elems[int64](out)[out.Offset : out.Offset+out.Numel()]
		clear(o)
		for p, v := range idx {
			o[p*nc+int(v)] = 1
		}
		return nil
	})
}

// indexValues reads an index tensor in row-major order as int64s, for
// loops that need one index type: a contiguous Int64 tensor's own
// elements, without a copy. dispatch has checked the values (the op's
// ValueChecks, through CheckValues).
func indexValues(t *dispatch.Tensor) []int64 {
	if t.DType == dispatch.Int64 && t.IsContiguous() {
		return span[int64](t) // read, never written, while the kernel runs
	}
	idx := make([]int64, 0, t.Numel())
	if t.DType == dispatch.Int32 {
		walk(t, func(v int32) { idx = append(idx, int64(v)) })
	} else {
		walk(t, func(v int64) { idx = append(idx, v) })
	}
	return idx
}

// CheckValues is dispatch's value check on the host, at once: the first
// value of t in row-major order that c refuses is c's error.
func (backend) CheckValues(t *dispatch.Tensor, c *dispatch.ValueCheck) error {
	t = distinct(t)
	defer t.Release()
	if t.DType == dispatch.Int64 && t.IsContiguous() {
		// A loop over the values (a pooling's indices, a gather's), where
		// walk made a call per element.
		for _, x := range span[int64](t) {
			if c.Bad(x) {
				return c.Error(x)
			}
		}
		return nil
	}
	bad, v := false, int64(0)
	find := func(x int64) {
		if !bad && c.Bad(x) {
			bad, v = true, x
		}
	}
	switch t.DType {
	case dispatch.Int32:
		walk(t, func(x int32) { find(int64(x)) })
	case dispatch.Int8: // pow's exponent
		walk(t, func(x int8) { find(int64(x)) })
	case dispatch.Uint8:
		walk(t, func(x uint8) { find(int64(x)) })
	default:
		walk(t, find)
	}
	if bad {
		return c.Error(v)
	}
	return nil
}

// distinct is a view of t with each expanded dim (stride 0) of size 1: the
// values t holds, each once, in the row-major order of their first place
// in t, so that a check of an expanded index (index_select's backward
// expands one index per slice over the slice) reads each value once.
func distinct(t *dispatch.Tensor) *dispatch.Tensor {
	shape := slices.Clone(t.Shape)
	for d, st := range t.Strides {
		if st == 0 && shape[d] > 0 {
			shape[d] = 1
		}
	}
	return t.View(shape, slices.Clone(t.Strides), t.Offset)
}

// scatterAddSlices is scatter_add where the index varies along d alone,
// expanded over the other dims (index_select's and so embedding's
// backward: one index per slice), and the slices of out and src off d are
// each one contiguous run: for each i along d in order, src's slice i is
// added to out's slice idx[i], the run shared out between the cores. The
// general walk moved d innermost, striding through src and out an element
// at a time, with the expanded index read whole: embedding's backward of
// 4096 rows of 256 took 24 times torch's time. Each element of out gets
// its adds in the order of i, as the general walk gives them. It reports
// false for another layout.
func scatterAddSlices(out, src, index *dispatch.Tensor, d int) bool {
	if index.Rank() == 0 || index.Rank() != src.Rank() || index.Rank() != out.Rank() {
		return false
	}
	var others []int
	var so, ss []int
	for k := range index.Shape {
		if k == d {
			continue
		}
		if index.Strides[k] != 0 && index.Shape[k] != 1 || index.Shape[k] != src.Shape[k] || index.Shape[k] != out.Shape[k] {
			return false
		}
		others, so, ss = append(others, index.Shape[k]), append(so, out.Strides[k]), append(ss, src.Strides[k])
	}
	w := layout.Walk{Shape: others, Strides: [][]int{so, ss}}.Collapse()
	// A slice's elements: Collapse gives [1] (or [0]) for none to walk. A
	// src run of stride 0 is one value over the slice (the gradient of a
	// sum, expanded).
	var run int
	switch {
	case w.Rank() == 1 && (w.Shape[0] <= 1 || w.Strides[0][0] == 1 && w.Strides[1][0] <= 1 && w.Strides[1][0] >= 0):
		run = w.Shape[0]
	default:
		return false
	}
	srcStep := 1
	if run > 1 {
		srcStep = w.Strides[1][0]
	}
	n := index.Shape[d]
	if n == 0 || run == 0 {
		return true
	}
	idx := make([]int64, n)
	at, step := index.Offset, index.Strides[d]
	if index.DType == dispatch.Int64 {
		v := elems[int64](index)
		for i := range idx {
			idx[i] = v[at+i*step]
		}
	} else {
		v := elems[int32](index)
		for i := range idx {
			idx[i] = int64(v[at+i*step])
		}
	}
	switch out.DType {
	case dispatch.Float32:
		addSlices[float32](out, src, idx, d, run, srcStep)
	case dispatch.Float64:
		addSlices[float64](out, src, idx, d, run, srcStep)
	case dispatch.Int32:
		addSlices[int32](out, src, idx, d, run, srcStep)
	case dispatch.Int64:
		addSlices[int64](out, src, idx, d, run, srcStep)
	default:
		return false
	}
	return true
}

// addSlices adds src's slice i (a run of run values from src's offset +
// i·its stride along d, step apart: 1, or 0 for one value) to out's slice
// idx[i], for each i in order.
func addSlices[T number](out, src *dispatch.Tensor, idx []int64, d, run, step int) {
	o, s := elems[T](out), elems[T](src)
	if run == 1 && step == 1 { // a 1-D scatter_add (bincount's): an add per index, without a slice's bounds
		ob, os, sb, ss := out.Offset, out.Strides[d], src.Offset, src.Strides[d]
		for i, at := range idx {
			o[ob+int(at)*os] += s[sb+i*ss]
		}
		return
	}
	parallel(run, len(idx), func(lo, hi int) {
		for i, at := range idx {
			dst := o[out.Offset+int(at)*out.Strides[d]+lo : out.Offset+int(at)*out.Strides[d]+hi]
			if step == 0 {
				v := s[src.Offset+i*src.Strides[d]]
				for j := range dst {
					dst[j] += v
				}
				continue
			}
			add := s[src.Offset+i*src.Strides[d]+lo:][:len(dst)]
			for j, v := range add {
				dst[j] += v
			}
		}
	})
}

// rowMajor returns t itself if it is row-major, else a row-major copy,
// with what releases that copy when the kernel is done (nothing for t):
// an expanded gradient, the usual input of a pooling backward, would
// otherwise leave its copy for the garbage collector at every step.
func rowMajor(t *dispatch.Tensor) (*dispatch.Tensor, func()) {
	if t.IsContiguous() {
		return t, func() {}
	}
	c := dispatch.NewTensor(t.Device, t.DType, slices.Clone(t.Shape), newBuffer(t.DType, t.Numel())) // an expanded t's copy may be refused
	castInto(c, t)
	return c, c.Release
}

// indexKernels holds the generic indexing loops instantiated for one
// dtype, so that the registrations above pick a dtype in one switch.
type indexKernels struct {
	indexSelect func(out, x *dispatch.Tensor, idx []int64, d int)
	gather      func(out, x *dispatch.Tensor, idx []int64, d int)
	scatter     func(out, src *dispatch.Tensor, idx []int64, ishape []int, d int, add bool)
}

func newIndexKernels[T any](plus func(a, b T) T) indexKernels {
	return indexKernels{
		indexSelect: selectBlocks[T],
		gather:      gatherAlong[T],
		scatter: func(out, src *dispatch.Tensor, idx []int64, ishape []int, d int, add bool) {
			set := func(_, v T) T { return v }
			if add {
				set = plus
			}
			scatterAlong(out, src, idx, ishape, d, set)
		},
	}
}

var (
	indexF32  = newIndexKernels(func(a, b float32) float32 { return a + b })
	indexF64  = newIndexKernels(func(a, b float64) float64 { return a + b })
	indexI32  = newIndexKernels(func(a, b int32) int32 { return a + b })
	indexI64  = newIndexKernels(func(a, b int64) int64 { return a + b })
	indexBool = newIndexKernels(func(a, b bool) bool { return a || b }) // torch's bool add
	// The narrow dtypes are moved, never added: scatter_add reaches its
	// kernel widened (register, dispatch.ViaCompute).
	indexF16  = newIndexKernels[half.Float16](nil)
	indexBF16 = newIndexKernels[half.BFloat16](nil)
	indexI8   = newIndexKernels[int8](nil)
	indexU8   = newIndexKernels[uint8](nil)
)

func withIndexKernels(dt dispatch.DType, run func(indexKernels)) error {
	switch dt {
	case dispatch.Float32:
		run(indexF32)
	case dispatch.Float64:
		run(indexF64)
	case dispatch.Int32:
		run(indexI32)
	case dispatch.Int64:
		run(indexI64)
	case dispatch.Bool:
		run(indexBool)
	case dispatch.Float16:
		run(indexF16)
	case dispatch.BFloat16:
		run(indexBF16)
	case dispatch.Int8:
		run(indexI8)
	case dispatch.Uint8:
		run(indexU8)
	default:
		return dispatch.Unsupported(dispatch.Device{Kind: kind}, "", dt)
	}
	return nil
}

// selectBlocks copies whole blocks: x (contiguous) is [outer, size, inner],
// out is [outer, len(idx), inner], and out[o, i, :] = x[o, idx[i], :].
func selectBlocks[T any](out, x *dispatch.Tensor, idx []int64, d int) {
	o, a := elems[T](out)[out.Offset:], elems[T](x)[x.Offset:]
	inner := dispatch.Numel(x.Shape[d+1:])
	size, n := x.Shape[d], len(idx)
	outer := dispatch.Numel(x.Shape[:d])
	parallel(outer*n, inner, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			oi, i := t/n, t%n
			src := (oi*size + int(idx[i])) * inner
			copy(o[t*inner:(t+1)*inner], a[src:src+inner])
		}
	})
}

// gatherAlong walks out (the index's shape) with x's strides, except along d,
// where the step is idx·stride. idx and out are both row-major over the
// index's shape, so an element's position in out is its position in idx.
func gatherAlong[T any](out, x *dispatch.Tensor, idx []int64, d int) {
	o, a := elems[T](out), elems[T](x)
	if x.Rank() == 0 {
		o[out.Offset] = a[x.Offset]
		return
	}
	xs := slices.Clone(x.Strides)
	step := xs[d]
	xs[d] = 0
	l := stridedOf(out.Shape, [][]int{out.Strides, xs}, []int{out.Offset, x.Offset})
	last := l.Rank() - 1
	so, sx := l.Strides[0][last], l.Strides[1][last]
	if so == 1 && sx == 0 {
		// Along the last dim into a contiguous row (a row's picks): the
		// row's indices and outputs as slices, no position arithmetic.
		l.rows(func(offs []int, n int) {
			dst, at := o[offs[0]:offs[0]+n], idx[offs[0]-out.Offset:][:n]
			for i, v := range at {
				dst[i] = a[offs[1]+int(v)*step]
			}
		})
		return
	}
	l.rows(func(offs []int, n int) {
		for i := range n {
			p := offs[0] + i*so
			o[p] = a[offs[1]+i*sx+int(idx[p-out.Offset])*step]
		}
	})
}

// scatterAlong writes set(out[...idx...], src[p]) for each position p of the
// index. d is moved innermost before the walk, so each row is one whole line
// along d: rows write disjoint elements of out (they differ off d) and may
// run in parallel, while the writes that can collide, which lie on one line,
// happen in row-major order. So scatter's duplicate indices keep the last
// write in row-major order, and scatter_add sums in that order.
func scatterAlong[T any](out, src *dispatch.Tensor, idx []int64, ishape []int, d int, set func(old, v T) T) {
	o, s := elems[T](out), elems[T](src)
	if len(ishape) == 0 {
		o[out.Offset] = set(o[out.Offset], s[src.Offset])
		return
	}
	os := slices.Clone(out.Strides)
	step := os[d]
	os[d] = 0
	pos := dispatch.ContiguousStrides(ishape)
	last := func(v []int) []int { return append(append(slices.Clone(v[:d]), v[d+1:]...), v[d]) }
	l := stridedOf(last(ishape), [][]int{last(os), last(src.Strides), last(pos)}, []int{out.Offset, src.Offset, 0})
	k := l.Rank() - 1
	so, ss, sp := l.Strides[0][k], l.Strides[1][k], l.Strides[2][k]
	l.rows(func(offs []int, n int) {
		for i := range n {
			p := offs[0] + i*so + int(idx[offs[2]+i*sp])*step
			o[p] = set(o[p], s[offs[1]+i*ss])
		}
	})
}

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }
