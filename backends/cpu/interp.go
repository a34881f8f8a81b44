package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// Interpolation (upsample_nearest, upsample_linear, upsample_bicubic and
// their backward ops). Every filter is separable: the output is the
// tensor product of one 1-d filter per spatial dim, so the kernel resamples
// one dim at a time (a pass), and the backward op runs the transposed passes
// (scatter-adds) in the reverse order. A 1-d filter is a table of taps: for
// each output index, k input indices and their weights (1 for nearest, 2 for
// linear, 4 for cubic), computed once per dim from PyTorch's formulas in
// aten/src/ATen/native/UpSample.h (area_pixel_compute_scale,
// area_pixel_compute_source_index, nearest_neighbor_compute_source_index).
//
// The coordinates are computed in the tensor's dtype, as PyTorch's cpu
// kernels compute them in opmath_t (float for float32), and nearest in
// float32 for every dtype, as PyTorch's nearest_idx does: that keeps the
// source pixels the same as PyTorch's where a coordinate lands within
// rounding of a pixel boundary.

func init() {
	for _, name := range []string{"upsample_nearest", "upsample_linear", "upsample_bicubic",
		"upsample_nearest_backward", "upsample_linear_backward", "upsample_bicubic_backward"} {
		filter, backward := dispatch.UpsampleFilter(name)
		register(name, func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
			a, _ := attrs.(dispatch.Interp)
			switch out.DType {
			case dispatch.Float32:
				upsample[float32](out, in[0], a, filter, backward)
			case dispatch.Float64:
				upsample[float64](out, in[0], a, filter, backward)
			default:
				return dispatch.Unsupported(out.Device, name, out.DType)
			}
			return nil
		})
	}
}

// taps is the 1-d filter of one spatial dim: output index j reads the input
// at idx[j*k+t] with weight w[j*k+t], t < k.
type taps[T float] struct {
	k   int
	idx []int
	w   []T
}

// identity reports whether the filter copies its input (same size, each
// output reading its own index with weight 1), so that its pass can be
// skipped.
func (tp taps[T]) identity(in int) bool {
	if len(tp.idx) != in*tp.k {
		return false
	}
	for j := range in {
		for t := range tp.k {
			want := T(0)
			if t == 0 {
				want = 1
			}
			if tp.w[j*tp.k+t] != want || (t == 0 && tp.idx[j*tp.k] != j) {
				return false
			}
		}
	}
	return true
}

// makeTaps builds the filter that maps in input pixels to out output pixels;
// scale is the caller's scale factor (0 for none).
func makeTaps[T float](filter int, in, out int, scale float64, alignCorners, exact bool) taps[T] {
	switch filter {
	case dispatch.FilterNearest:
		return nearestTaps[T](in, out, scale, exact)
	case dispatch.FilterLinear:
		return linearTaps[T](in, out, scale, alignCorners)
	}
	return cubicTaps[T](in, out, scale, alignCorners)
}

// inverseScale is the step in input pixels per output pixel: 1/scale when
// the caller gave a scale, else in/out (PyTorch's compute_scales_value).
func inverseScale[T float](in, out int, scale float64) T {
	if scale > 0 {
		return T(1 / scale)
	}
	return T(in) / T(out)
}

// areaScale is PyTorch's area_pixel_compute_scale: with align_corners the
// corner centres map onto each other, (in-1)/(out-1), and the caller's
// scale is not used.
func areaScale[T float](in, out int, scale float64, alignCorners bool) T {
	if alignCorners {
		if out > 1 {
			return T(in-1) / T(out-1)
		}
		return 0
	}
	return inverseScale[T](in, out, scale)
}

// areaSource is PyTorch's area_pixel_compute_source_index: the input
// coordinate of output pixel j, pixel centres at half-integers unless
// align_corners. Linear clamps a negative coordinate to 0; cubic does not
// (its taps are clamped instead).
func areaSource[T float](s T, j int, alignCorners, cubic bool) T {
	if alignCorners {
		return s * T(j)
	}
	src := s*(T(j)+0.5) - 0.5
	if !cubic && src < 0 {
		return 0
	}
	return src
}

// nearestTaps: nearest takes floor(j·s), nearest-exact floor((j+0.5)·s),
// both capped at the last pixel, with s = in/out (or 1/scale) in float32
// (PyTorch's nearest_neighbor_compute_source_index and
// nearest_neighbor_exact_compute_source_index; the exact one forms
// (j+0.5)·s in float64 and rounds it to float32 before the floor).
func nearestTaps[T float](in, out int, scale float64, exact bool) taps[T] {
	s := inverseScale[float32](in, out, scale)
	tp := taps[T]{k: 1, idx: make([]int, out), w: make([]T, out)}
	for j := range out {
		var src float32
		if exact {
			src = float32((float64(j) + 0.5) * float64(s))
		} else {
			src = float32(j) * s
		}
		tp.idx[j] = min(int(math.Floor(float64(src))), in-1)
		tp.w[j] = 1
	}
	return tp
}

// linearTaps: the two pixels around the source coordinate, weighted by
// distance (PyTorch's compute_source_index_and_lambda; equal sizes copy,
// whatever the scale, as PyTorch does).
func linearTaps[T float](in, out int, scale float64, alignCorners bool) taps[T] {
	tp := taps[T]{k: 2, idx: make([]int, 2*out), w: make([]T, 2*out)}
	s := areaScale[T](in, out, scale, alignCorners)
	for j := range out {
		if in == out {
			tp.idx[2*j], tp.idx[2*j+1], tp.w[2*j] = j, j, 1
			continue
		}
		src := areaSource(s, j, alignCorners, false)
		i0 := int(src) // src ≥ 0: truncation is the floor
		i1 := i0
		if i0 < in-1 {
			i1++
		}
		l1 := min(max(src-T(i0), 0), 1)
		tp.idx[2*j], tp.idx[2*j+1] = i0, i1
		tp.w[2*j], tp.w[2*j+1] = 1-l1, l1
	}
	return tp
}

// cubicA is the free parameter of Keys' cubic convolution kernel; PyTorch
// uses -0.75 (as OpenCV does), not Keys' -0.5.
const cubicA = -0.75

// cubicTaps: the four pixels around the source coordinate, with Keys'
// cubic convolution weights at distances 1+t, t, 1-t, 2-t; indices past the
// border are clamped to it, so the edge pixel is repeated (PyTorch's
// get_cubic_upsample_coefficients and upsample_get_value_bounded).
func cubicTaps[T float](in, out int, scale float64, alignCorners bool) taps[T] {
	tp := taps[T]{k: 4, idx: make([]int, 4*out), w: make([]T, 4*out)}
	s := areaScale[T](in, out, scale, alignCorners)
	a := T(cubicA)
	near := func(x T) T { return ((a+2)*x-(a+3))*x*x + 1 }  // |x| ≤ 1
	far := func(x T) T { return ((a*x-5*a)*x+8*a)*x - 4*a } // 1 < |x| < 2
	for j := range out {
		src := areaSource(s, j, alignCorners, true)
		i0 := math.Floor(float64(src))
		t := src - T(i0)
		w := [4]T{far(t + 1), near(t), near(1 - t), far(2 - t)}
		for m := range 4 {
			tp.idx[4*j+m] = min(max(int(i0)-1+m, 0), in-1)
			tp.w[4*j+m] = w[m]
		}
	}
	return tp
}

// upsample runs the forward op (x is the input) or the backward op (x is
// the output's gradient) into the contiguous out.
func upsample[T float](out, x *dispatch.Tensor, a dispatch.Interp, filter int, backward bool) {
	if !x.IsContiguous() {
		x = contiguous(x)
		defer x.Release()
	}
	// Each pass maps spatial sizes from → to; the filters always map the
	// forward op's input sizes to its output sizes (a.Size).
	k := x.Rank() - 2
	from, to, forwardIn := x.Shape[2:], a.Size, x.Shape[2:]
	if backward {
		from, to, forwardIn = a.Size, a.InputSize, a.InputSize
	}
	// The dims in the order of their passes: first to last forward, last to
	// first backward (the transpose of a product reverses it).
	order := make([]int, k)
	for i := range order {
		order[i] = i
		if backward {
			order[i] = k - 1 - i
		}
	}
	// cur is the shape after the passes so far, with N and C as one dim.
	cur := append([]int{x.Shape[0] * x.Shape[1]}, from...)
	src := span[T](x)
	dst := span[T](out)
	if len(dst) == 0 {
		return
	}
	type pass struct {
		dim int
		tp  taps[T]
	}
	var passes []pass
	for _, d := range order {
		scale := 0.0
		if a.Scales != nil {
			scale = a.Scales[d]
		}
		tp := makeTaps[T](filter, forwardIn[d], a.Size[d], scale, a.AlignCorners, a.Exact)
		if !tp.identity(forwardIn[d]) {
			passes = append(passes, pass{d, tp})
		}
	}
	if len(passes) == 0 {
		copy(dst, src)
		return
	}
	for p, ps := range passes {
		d := ps.dim
		outer, inner := 1, 1
		for _, s := range cur[:d+1] {
			outer *= s
		}
		for _, s := range cur[d+2:] {
			inner *= s
		}
		next := dst
		cur[d+1] = to[d]
		if p < len(passes)-1 {
			next = make([]T, dispatch.Numel(cur))
		}
		if backward {
			scatterPass(next, src, outer, inner, from[d], to[d], ps.tp)
		} else {
			gatherPass(next, src, outer, inner, from[d], to[d], ps.tp)
		}
		src = next
	}
}

// gatherPass resamples the middle dim of src, (outer, n, inner), into dst,
// (outer, m, inner): dst[o, j, i] = Σ_t w[j,t]·src[o, idx[j,t], i].
func gatherPass[T float](dst, src []T, outer, inner, n, m int, tp taps[T]) {
	parallel(outer, m*inner*tp.k, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			for j := range m {
				row := dst[(o*m+j)*inner : (o*m+j+1)*inner]
				for t := range tp.k {
					w := tp.w[j*tp.k+t]
					at := (o*n + tp.idx[j*tp.k+t]) * inner
					in := src[at : at+inner]
					if t == 0 {
						for i := range row {
							row[i] = w * in[i]
						}
						continue
					}
					for i := range row {
						row[i] += w * in[i]
					}
				}
			}
		}
	})
}

// scatterPass is gatherPass transposed: src is (outer, m, inner), a
// gradient of gatherPass's output, and dst, (outer, n, inner), gets
// dst[o, idx[j,t], i] += w[j,t]·src[o, j, i].
func scatterPass[T float](dst, src []T, outer, inner, m, n int, tp taps[T]) {
	parallel(outer, m*inner*tp.k, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			clear(dst[o*n*inner : (o+1)*n*inner])
			for j := range m {
				g := src[(o*m+j)*inner : (o*m+j+1)*inner]
				for t := range tp.k {
					w := tp.w[j*tp.k+t]
					at := (o*n + tp.idx[j*tp.k+t]) * inner
					row := dst[at : at+inner]
					for i := range row {
						row[i] += w * g[i]
					}
				}
			}
		}
	})
}
