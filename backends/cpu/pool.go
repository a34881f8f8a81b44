package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/layout"
)

// Pooling kernels, one generic implementation for any number of spatial
// dims. The geometry of a pooling (which input places each output place's
// window reads) is the product of one list per spatial dim; it is the same
// for every (n, c) plane, so it is laid out flat once per call (poolGeom:
// one int per window element of a plane, a few thousand for a CNN layer)
// and the loops over a window are one slice, whatever the number of dims.
// Planes are shared out between goroutines, so no two write one place.
// Inputs are read row-major (copied first if they are not); outputs are
// contiguous.
//
// Sums run in the element type in the window's row-major order, and max
// keeps the first of equal values and takes any NaN, as PyTorch's cpu
// kernels do (aten/src/ATen/native/cpu/AvgPoolKernel.cpp, MaxPoolKernel.cpp),
// so that results match its bit for bit where it uses the same order.

func init() {
	registerPool(ops.AvgPool, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AvgPoolParams) error {
		g := windowGeom(a.Window, in[0].Shape[2:], a.ExcludePadding)
		src, done := rowMajor(in[0])
		defer done()
		return withPoolKernels(in[0].DType, func(k poolKernels) { k.avg(out, src, g, a.Divisor, false) })
	})
	registerPool(ops.AvgPoolBackward, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AvgPoolBackwardParams) error {
		g := windowGeom(a.Window, a.InSize, a.ExcludePadding)
		src, done := rowMajor(in[0])
		defer done()
		return withPoolKernels(in[0].DType, func(k poolKernels) { k.avg(out, src, g, a.Divisor, true) })
	})
	registerPool(ops.AdaptiveAvgPool, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AdaptivePool) error {
		g := adaptiveAvgGeom(in[0].Shape[2:], a.Size)
		src, done := rowMajor(in[0])
		defer done()
		return withPoolKernels(in[0].DType, func(k poolKernels) { k.avg(out, src, g, 0, false) })
	}, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.AdaptivePool) bool {
		return globalAvgPoolHalf(out, in[0], false)
	})
	registerPool(ops.AdaptiveAvgPoolBackward, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AdaptivePoolBackward) error {
		g := adaptiveAvgGeom(a.InSize, in[0].Shape[2:])
		src, done := rowMajor(in[0])
		defer done()
		return withPoolKernels(in[0].DType, func(k poolKernels) { k.avg(out, src, g, 0, true) })
	}, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.AdaptivePoolBackward) bool {
		return globalAvgPoolHalf(out, in[0], true)
	})
	registerPool(ops.MaxPoolIndices, func(out *dispatch.Tensor, in []*dispatch.Tensor, w layout.Window) error {
		g := windowGeom(w, in[0].Shape[2:], true)
		src, done := rowMajor(in[0])
		defer done()
		return withPoolKernels(in[0].DType, func(k poolKernels) { k.argmax(out, src, g) })
	})
	registerPool(ops.AdaptiveMaxPoolIndices, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AdaptivePool) error {
		g := adaptiveGeom(in[0].Shape[2:], a.Size)
		src, done := rowMajor(in[0])
		defer done()
		return withPoolKernels(in[0].DType, func(k poolKernels) { k.argmax(out, src, g) })
	})
	registerPool(ops.PoolGather, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		x := in[0]
		idx := indexValues(in[1])
		src, done := rowMajor(x)
		defer done()
		return withPoolKernels(x.DType, func(k poolKernels) { k.gather(out, src, idx) })
	})
	for op, add := range map[*dispatch.Op[ops.PoolScatter]]bool{ops.MaxPoolBackward: true, ops.MaxUnpool: false} {
		registerPool(op, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.PoolScatter) error {
			idx := indexValues(in[1])
			src, done := rowMajor(in[0])
			defer done()
			return withPoolKernels(in[0].DType, func(k poolKernels) { k.scatter(out, src, idx, add) })
		})
	}
}

// registerPool registers a pooling kernel that does nothing for an empty
// result: its geometry is laid out per output place whatever the planes,
// so that adaptive pooling of an empty batch to size 2^40 walked 2^40
// windows (found by FuzzWindow).
// Kernels in fast take the calls they can in their own dtypes first
// (registerFast).
func registerPool[A any](op *dispatch.Op[A], k dispatch.Kernel[A], fast ...func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) bool) {
	registerFast(op, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) error {
		if out.Numel() == 0 {
			return nil
		}
		return k(out, in, a)
	}, fast...)
}

// poolAxis is the geometry of one spatial dim: window o reads the input
// places whose offsets within a plane (place × the dim's stride) are
// taps[first[o]:first[o+1]], and average pooling counts count[o] places
// for it.
type poolAxis struct {
	taps, first, count []int
}

// poolGeom is a pooling's geometry over one (n, c) plane, the same for
// every plane: output place j (row-major) reads the input offsets
// taps[first[j]:first[j+1]] (row-major over its window) and average
// pooling divides its sum by count[j]. in and out are the elements of an
// input and an output plane. Laid out flat once per call, the windows cost
// the loops one slice each, with no per-dim bookkeeping.
type poolGeom struct {
	taps, first, count []int
	in, out            int
}

// rowStrides are the strides of a row-major array of the given sizes.
func rowStrides(sizes []int) []int {
	st := make([]int, len(sizes))
	s := 1
	for d := len(sizes) - 1; d >= 0; d-- {
		st[d] = s
		s *= sizes[d]
	}
	return st
}

// windowGeom is the geometry of a sliding window over spatial sizes in.
// Each window's count is the places it reads inside the input when
// excludePad is set (count_include_pad=False), else its extent clipped to
// the padded input: PyTorch's (min(start+k, n+pad) - start), which leaves
// out the part of a ceil-mode window beyond the right padding.
func windowGeom(w layout.Window, in []int, excludePad bool) *poolGeom {
	st := rowStrides(in)
	axes := make([]poolAxis, len(in))
	for d, n := range in {
		ax := &axes[d]
		for o := range w.OutSize(d, n) {
			lo, hi := layout.PoolTaps(w, d, o, n)
			start := o*w.Stride[d] - w.Padding[d]
			ax.first = append(ax.first, len(ax.taps))
			for k := lo; k < hi; k++ {
				ax.taps = append(ax.taps, (start+k*w.Dilation[d])*st[d])
			}
			count := hi - lo
			if !excludePad {
				count = min(start+w.Kernel[d], n+w.Padding[d]) - start
			}
			ax.count = append(ax.count, count)
		}
		ax.first = append(ax.first, len(ax.taps))
	}
	return flatGeom(axes, dispatch.Numel(in))
}

// adaptiveGeom is the geometry of adaptive pooling from spatial sizes in to
// out: along each dim, window o covers [floor(o·n/m), ceil((o+1)·n/m)), as
// PyTorch's start_index and end_index give (AdaptivePooling.h).
func adaptiveGeom(in, out []int) *poolGeom {
	st := rowStrides(in)
	axes := make([]poolAxis, len(in))
	for d, n := range in {
		m, ax := out[d], &axes[d]
		for o := range m {
			lo, hi := o*n/m, ((o+1)*n+m-1)/m
			ax.first = append(ax.first, len(ax.taps))
			for i := lo; i < hi; i++ {
				ax.taps = append(ax.taps, i*st[d])
			}
			ax.count = append(ax.count, hi-lo)
		}
		ax.first = append(ax.first, len(ax.taps))
	}
	return flatGeom(axes, dispatch.Numel(in))
}

// adaptiveAvgGeom is adaptiveGeom for average pooling, which pools to
// 1×1 (a ResNet's head) over the whole plane without a tap list: avgPool
// reads none there, and building one took a few KB of garbage a call.
func adaptiveAvgGeom(in, out []int) *poolGeom {
	for _, m := range out {
		if m != 1 {
			return adaptiveGeom(in, out)
		}
	}
	n := dispatch.Numel(in)
	return &poolGeom{in: n, out: 1, first: []int{0, n}, count: []int{n}}
}

// flatGeom lays out the windows of every output place of a plane: the
// product of the per-dim windows, in row-major order of both the output
// places and the places within each window.
func flatGeom(axes []poolAxis, in int) *poolGeom {
	g := &poolGeom{in: in}
	var place func(d, off, count int)
	var window func(d, off int, win []int)
	win := make([]int, len(axes)) // the output place's index along each dim
	place = func(d, off, count int) {
		if d == len(axes) {
			g.first = append(g.first, len(g.taps))
			window(0, 0, win)
			g.count = append(g.count, count)
			return
		}
		ax := &axes[d]
		for o := range len(ax.count) {
			win[d] = o
			place(d+1, off, count*ax.count[o])
		}
	}
	window = func(d, off int, win []int) {
		if d == len(axes) {
			g.taps = append(g.taps, off)
			return
		}
		ax := &axes[d]
		for _, t := range ax.taps[ax.first[win[d]]:ax.first[win[d]+1]] {
			window(d+1, off+t, win)
		}
	}
	place(0, 0, 1)
	g.first = append(g.first, len(g.taps))
	g.out = len(g.count)
	return g
}

// cost is a rough count of the element reads and writes of one plane, for
// parallel.
func (g *poolGeom) cost() int { return max(len(g.taps), g.out, g.in) }

// poolKernels holds the generic loops instantiated for one float dtype.
type poolKernels struct {
	// avg is average pooling, or with backward its adjoint: each incoming
	// gradient divided by its window's divisor and added to every place of
	// the window (avg_pool2d_backward).
	avg func(out, x *dispatch.Tensor, g *poolGeom, divisor int, backward bool)
	// argmax writes each window's maximum's offset in its plane (Int64).
	argmax func(out, x *dispatch.Tensor, g *poolGeom)
	// gather reads x's plane at each index; scatter adds (or, with add
	// unset, writes) src at each index of out's plane, out zeroed first.
	gather  func(out, x *dispatch.Tensor, idx []int64)
	scatter func(out, src *dispatch.Tensor, idx []int64, add bool)
}

func newPoolKernels[T float]() poolKernels {
	return poolKernels{avg: avgPool[T], argmax: argmaxPool[T], gather: poolGather[T], scatter: poolScatter[T]}
}

var (
	poolF32 = newPoolKernels[float32]()
	poolF64 = newPoolKernels[float64]()
)

func withPoolKernels(dt dispatch.DType, run func(poolKernels)) error {
	switch dt {
	case dispatch.Float32:
		run(poolF32)
	case dispatch.Float64:
		run(poolF64)
	default:
		return dispatch.Unsupported(dispatch.Device{Kind: kind}, "", dt)
	}
	return nil
}

// planes is the number of (n, c) planes of a pooling tensor.
func planes(t *dispatch.Tensor) int { return t.Shape[0] * t.Shape[1] }

func avgPool[T float](out, x *dispatch.Tensor, g *poolGeom, divisor int, backward bool) {
	src, dst := span[T](x), span[T](out)
	div := func(j int) T {
		if divisor != 0 {
			return T(divisor)
		}
		return T(g.count[j])
	}
	if g.out == 1 && g.first[1]-g.first[0] == g.in {
		globalAvgPool(dst, src, g.in, div(0), backward)
		return
	}
	parallel(planes(x), g.cost(), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			if backward {
				in, o := src[p*g.out:(p+1)*g.out], dst[p*g.in:(p+1)*g.in]
				clear(o)
				for j := range g.out {
					v := in[j] / div(j)
					for _, t := range g.taps[g.first[j]:g.first[j+1]] {
						o[t] += v
					}
				}
				continue
			}
			in, o := src[p*g.in:(p+1)*g.in], dst[p*g.out:(p+1)*g.out]
			for j := range g.out {
				var sum T
				for _, t := range g.taps[g.first[j]:g.first[j+1]] {
					sum += in[t]
				}
				o[j] = sum / div(j)
			}
		}
	})
}

// globalAvgPool is avgPool where one window is the whole plane of n
// values (adaptive pooling to 1×1, as a ResNet's head does): a sum per
// plane, in float64 (a float32 plane in C), where the window's tap list
// cost a gathered load per value; backward spreads each plane's gradient
// over it.
func globalAvgPool[T float](dst, src []T, n int, div T, backward bool) {
	if backward {
		parallel(len(src), n, func(lo, hi int) {
			for p := lo; p < hi; p++ {
				fill(dst[p*n:(p+1)*n], src[p]/div)
			}
		})
		return
	}
	parallel(len(dst), n, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			plane := src[p*n : (p+1)*n]
			var sum float64
			if f, ok := any(plane).([]float32); ok {
				sum = sumFloat32(f)
			} else {
				sum = accumulateGo[T, float64](plane, 0, n, 1)
			}
			dst[p] = T(sum / float64(div))
		}
	})
}

// globalAvgPoolHalf is the global average pooling of a contiguous 16-bit x
// (adaptive, to 1×1: out a value per plane) or, where backward, its
// gradient (x the value per plane, out the planes), on the 16-bit bits
// themselves, and reports whether it took the call. The values are
// globalAvgPool's on widened copies rounded once: a plane's float32 sum
// over its widened copy, and a gradient value rounded once and filled,
// where dispatch.ViaCompute widened the whole input and rounded a whole
// float32 result.
func globalAvgPoolHalf(out, x *dispatch.Tensor, backward bool) bool {
	planes, in := out, x
	if backward {
		planes, in = x, out
	}
	if !dispatch.Halves.Has(x.DType) || out.DType != x.DType || !x.IsContiguous() || out.Numel() == 0 {
		return false
	}
	for _, d := range planes.Shape[2:] {
		if d != 1 {
			return false
		}
	}
	np, n := planes.Numel(), in.Numel()/planes.Numel()
	if n == 0 {
		return false
	}
	bf := x.DType == dispatch.BFloat16
	widen, round := half.Float16.Float32, half.Float16FromFloat32
	if bf {
		widen, round = func(b half.Float16) float32 { return half.BFloat16(b).Float32() }, half.BFloat16FromFloat32
	}
	src, dst := bits16(x.Storage.Buffer)[x.Offset:x.Offset+x.Numel()], bits16(out.Storage.Buffer)[out.Offset:out.Offset+out.Numel()]
	if backward {
		parallel(np, n, func(lo, hi int) {
			for p := lo; p < hi; p++ {
				fill(dst[p*n:(p+1)*n], round(widen(half.Float16(src[p]))/float32(n)))
			}
		})
		return true
	}
	parallel(np, n, func(lo, hi int) {
		wide := make([]float32, n)
		for p := lo; p < hi; p++ {
			widenHalf(wide, src[p*n:(p+1)*n], bf)
			dst[p] = round(float32(sumFloat32(wide) / float64(n)))
		}
	})
	return true
}

// argmaxPool writes the offset of each window's maximum: a later place
// wins if it is larger or NaN, as in PyTorch, so the first of equal values
// and the last NaN are taken, and a window of -inf gives its first place.
func argmaxPool[T float](out, x *dispatch.Tensor, g *poolGeom) {
	src, dst := span[T](x), span[int64](out)
	parallel(planes(x), g.cost(), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			in, o := src[p*g.in:(p+1)*g.in], dst[p*g.out:(p+1)*g.out]
			for j := range g.out {
				taps := g.taps[g.first[j]:g.first[j+1]]
				best, at := T(math.Inf(-1)), taps[0]
				for _, t := range taps {
					// Without a branch (which data in no order mispredicts
					// half the time): the test as a mask, and a max.
					v := in[t]
					take := -(b2i(v > best) | b2i(v != v))
					at ^= (at ^ t) & take
					best = max(best, v)
				}
				o[j] = int64(at)
			}
		}
	})
}

func poolGather[T float](out, x *dispatch.Tensor, idx []int64) {
	src, dst := span[T](x), span[T](out)
	in, m := dispatch.Numel(x.Shape[2:]), dispatch.Numel(out.Shape[2:])
	parallel(planes(x), m, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			for j := p * m; j < (p+1)*m; j++ {
				dst[j] = src[p*in+int(idx[j])]
			}
		}
	})
}

func poolScatter[T float](out, src *dispatch.Tensor, idx []int64, add bool) {
	s, dst := span[T](src), span[T](out)
	m, size := dispatch.Numel(src.Shape[2:]), dispatch.Numel(out.Shape[2:])
	parallel(planes(src), m+size, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			o := dst[p*size : (p+1)*size]
			clear(o)
			for j := p * m; j < (p+1)*m; j++ {
				if add {
					o[idx[j]] += s[j]
				} else {
					o[idx[j]] = s[j]
				}
			}
		}
	})
}

// b2i is 1 for true, 0 for false: a zero extension, not a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
