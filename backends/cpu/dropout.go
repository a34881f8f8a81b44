package cpu

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/philox"
)

// dropout (ops.Dropout): each element times the scale or 0, by its Philox
// word, in one pass. A contiguous x goes to dropout.c's rows in pieces
// across the crew, each piece cut at any element (a row starts its first
// block part-way); a strided one is walked in runs with the Go row. The
// 16-bit floats come widened to float32 (registerFor), as the cuda
// kernel computes them, and round once.

func init() {
	registerFor(ops.Dropout, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, m ops.Mask) error {
		if out.DType == dispatch.Float64 {
			dropout(out, in[0], m, m.Scale())
		} else {
			dropout(out, in[0], m, float32(m.Scale()))
		}
		return nil
	})
}

func dropout[T float](out, x *dispatch.Tensor, m ops.Mask, scale T) {
	t := m.Threshold()
	if flat(out, x) {
		o, a := span[T](out), span[T](x)
		parallelPieces(len(o), costVector, func(lo, hi int) { dropoutRows(o[lo:hi], a[lo:hi], uint64(lo), m.Key, t, scale) })
		return
	}
	o, a := elems[T](out), elems[T](x)
	l := newStrided(out, x)
	last := len(l.Shape) - 1
	sx := l.Strides[1][last]
	l.eachRun(costLoop, func(offs []int, n int) {
		// out is contiguous: its offset past out's first element is the
		// run's row-major index.
		first := uint64(offs[0] - out.Offset)
		if sx == 1 {
			dropoutRows(o[offs[0]:offs[0]+n], a[offs[1]:offs[1]+n], first, m.Key, t, scale)
			return
		}
		dropoutRow(o[offs[0]:offs[0]+n], a[offs[1]:], sx, first, m.Key, t, scale)
	})
}

// dropoutRows is dropout of the contiguous run src, whose first element
// has index first, into dst: dropout.c's rows where they run, else the Go
// row.
func dropoutRows[T float](dst, src []T, first, key uint64, t uint32, scale T) {
	if !dropoutC(dst, src, first, key, t, scale) {
		dropoutRow(dst, src, 1, first, key, t, scale)
	}
}

// dropoutRow is dropout of the elements src[0], src[stride], ... into dst
// (as many), the first having index first: one Philox block per four
// elements.
func dropoutRow[T float](dst, src []T, stride int, first, key uint64, t uint32, scale T) {
	var words [4]uint32
	for i := range dst {
		e := first + uint64(i)
		if i == 0 || e%4 == 0 {
			words = philox.Words(key, e)
		}
		f := T(0)
		if words[e%4] >= t {
			f = scale
		}
		dst[i] = src[i*stride] * f
	}
}

// dropoutC is dropout.c's rows for a run, where the machine has AVX2 and
// the run is worth a call.
func dropoutC[T float](dst, src []T, first, key uint64, t uint32, scale T) bool {
	switch d := any(dst).(type) {
	case []float32:
		return dropoutFloat32(d, any(src).([]float32), first, key, t, float32(scale))
	case []float64:
		return dropoutFloat64(d, any(src).([]float64), first, key, t, float64(scale))
	}
	return false
}

// dropoutBlockC is dropout.c's rows over a block, where the machine has
// AVX2.
func dropoutBlockC[T float](dst, src []T, b probBlock, key uint64, t uint32, scale T) bool {
	switch d := any(dst).(type) {
	case []float32:
		return dropoutBlockFloat32(d, any(src).([]float32), b, key, t, float32(scale))
	case []float64:
		return dropoutBlockFloat64(d, any(src).([]float64), b, key, t, float64(scale))
	}
	return false
}
