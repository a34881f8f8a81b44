package layout

import "math"

// The 1-d filters of interpolation (upsample_nearest, upsample_linear,
// upsample_bicubic and their backward ops), one implementation for every
// backend: for each output index of a spatial dim, the input indices and
// weights that PyTorch's formulas in aten/src/ATen/native/UpSample.h give
// (area_pixel_compute_scale, area_pixel_compute_source_index,
// nearest_neighbor_compute_source_index). Coordinates are computed in T,
// as PyTorch's cpu kernels compute them in opmath_t (float for float32),
// and nearest in float32 for every dtype, as PyTorch's nearest_idx does,
// so that the source pixels are PyTorch's where a coordinate lands within
// rounding of a pixel boundary.

// The interpolation filters: one upsample op (and its backward op) each.
const (
	FilterNearest = iota
	FilterLinear
	FilterCubic
)

// Float is the element types the filters are computed in.
type Float interface{ ~float32 | ~float64 }

// Taps is the 1-d filter of one spatial dim: output index j reads the input
// at Idx[j*K+t] with weight W[j*K+t], t < K.
type Taps[T Float] struct {
	K   int
	Idx []int
	W   []T
}

// Identity reports whether the filter copies its input (same size, each
// output reading its own index with weight 1), so that its pass can be
// skipped.
func (tp Taps[T]) Identity(in int) bool {
	if len(tp.Idx) != in*tp.K {
		return false
	}
	for j := range in {
		for t := range tp.K {
			want := T(0)
			if t == 0 {
				want = 1
			}
			if tp.W[j*tp.K+t] != want || (t == 0 && tp.Idx[j*tp.K] != j) {
				return false
			}
		}
	}
	return true
}

// MakeTaps builds the filter that maps in input pixels to out output pixels;
// scale is the caller's scale factor (0 for none).
func MakeTaps[T Float](filter int, in, out int, scale float64, alignCorners, exact bool) Taps[T] {
	switch filter {
	case FilterNearest:
		return nearestTaps[T](in, out, scale, exact)
	case FilterLinear:
		return linearTaps[T](in, out, scale, alignCorners)
	}
	return cubicTaps[T](in, out, scale, alignCorners)
}

// inverseScale is the step in input pixels per output pixel: 1/scale when
// the caller gave a scale, else in/out (PyTorch's compute_scales_value).
func inverseScale[T Float](in, out int, scale float64) T {
	if scale > 0 {
		return T(1 / scale)
	}
	return T(in) / T(out)
}

// areaScale is PyTorch's area_pixel_compute_scale: with align_corners the
// corner centres map onto each other, (in-1)/(out-1), and the caller's
// scale is not used.
func areaScale[T Float](in, out int, scale float64, alignCorners bool) T {
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
func areaSource[T Float](s T, j int, alignCorners, cubic bool) T {
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
// Nearest is UpSample.h's nearest_idx: an output of the input's size
// copies it and one of twice its size takes j/2, whatever scale factor
// gave that size (H = 3 by 1.25 is a copy where floor(j/1.25) is not).
// torch 1.13's cpu backward and its channels-last forward take that rule;
// its contiguous forward kernel does not, so that its gradient is not the
// derivative of its output there: lathe takes the rule both ways.
func nearestTaps[T Float](in, out int, scale float64, exact bool) Taps[T] {
	s := inverseScale[float32](in, out, scale)
	tp := Taps[T]{K: 1, Idx: make([]int, out), W: make([]T, out)}
	for j := range out {
		switch {
		case exact:
			tp.Idx[j] = int(math.Floor(float64(float32((float64(j) + 0.5) * float64(s)))))
		case out == in:
			tp.Idx[j] = j
		case out == 2*in:
			tp.Idx[j] = j / 2
		default:
			tp.Idx[j] = int(math.Floor(float64(float32(j) * s)))
		}
		tp.Idx[j] = min(tp.Idx[j], in-1)
		tp.W[j] = 1
	}
	return tp
}

// linearTaps: the two pixels around the source coordinate, weighted by
// distance (PyTorch's compute_source_index_and_lambda; equal sizes copy,
// whatever the scale, as PyTorch does).
func linearTaps[T Float](in, out int, scale float64, alignCorners bool) Taps[T] {
	tp := Taps[T]{K: 2, Idx: make([]int, 2*out), W: make([]T, 2*out)}
	s := areaScale[T](in, out, scale, alignCorners)
	for j := range out {
		if in == out {
			tp.Idx[2*j], tp.Idx[2*j+1], tp.W[2*j] = j, j, 1
			continue
		}
		src := areaSource(s, j, alignCorners, false)
		i0 := int(src) // src ≥ 0: truncation is the floor
		i1 := i0
		if i0 < in-1 {
			i1++
		}
		l1 := min(max(src-T(i0), 0), 1)
		tp.Idx[2*j], tp.Idx[2*j+1] = i0, i1
		tp.W[2*j], tp.W[2*j+1] = 1-l1, l1
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
func cubicTaps[T Float](in, out int, scale float64, alignCorners bool) Taps[T] {
	tp := Taps[T]{K: 4, Idx: make([]int, 4*out), W: make([]T, 4*out)}
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
			tp.Idx[4*j+m] = min(max(int(i0)-1+m, 0), in-1)
			tp.W[4*j+m] = w[m]
		}
	}
	return tp
}

// PoolTaps returns the kernel taps [lo, hi) of output position o along
// spatial dim d that fall inside an input of size n: tap k reads input
// place o·stride - padding + k·dilation. The counts are ceilings taken
// as (a-1)/dil + 1, never (a + dil - 1)/dil, which wraps for a dilation
// near int's edge (a dilation of 2^63-2 made a tap past the input look
// inside it, and the cpu's pool read there).
func PoolTaps(w Window, d, o, n int) (lo, hi int) {
	start, dil := o*w.Stride[d]-w.Padding[d], w.Dilation[d]
	lo = 0
	if start < 0 {
		lo = (-start-1)/dil + 1 // the taps before place 0
	}
	hi = w.Kernel[d]
	if last := start + (hi-1)*dil; last >= n {
		hi -= (last-n)/dil + 1 // the taps at place n or past it
	}
	return lo, max(lo, hi)
}

// Pass is one separable pass of an upsample op: spatial dim Dim goes from
// size From to size To through Taps, the forward filter of that dim (a
// backward pass applies it transposed, as a scatter-add).
type Pass[T Float] struct {
	Dim      int
	From, To int
	Taps     Taps[T]
}

// UpsamplePasses plans an upsample op as separable passes, one per
// spatial dim whose filter is not the identity: forward from the first dim
// to the last, backward from the last to the first (the transpose of a
// product reverses it). spatial is the spatial shape of the op's tensor
// argument (the forward op's input, or the backward op's incoming
// gradient); size is the forward output's spatial size, inputSize the
// forward input's (backward only), scales the caller's scale factors (nil
// or 0 for none). No passes means a copy.
func UpsamplePasses[T Float](filter int, spatial, size, inputSize []int, scales []float64, alignCorners, exact, backward bool) []Pass[T] {
	from, to, forwardIn := spatial, size, spatial
	if backward {
		from, to, forwardIn = size, inputSize, inputSize
	}
	k := len(spatial)
	var passes []Pass[T]
	for i := range k {
		d := i
		if backward {
			d = k - 1 - i
		}
		scale := 0.0
		if scales != nil {
			scale = scales[d]
		}
		tp := MakeTaps[T](filter, forwardIn[d], size[d], scale, alignCorners, exact)
		if !tp.Identity(forwardIn[d]) {
			passes = append(passes, Pass[T]{Dim: d, From: from[d], To: to[d], Taps: tp})
		}
	}
	return passes
}
