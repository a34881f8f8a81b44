package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// grid_sampler (torch.nn.functional.grid_sample) over 2 or 3 spatial dims:
// each output point reads its grid vector, maps every component to pixels
// along its dim (gridUnnormalize), pads that coordinate (gridPad), and takes
// the nearest pixel or the 2^k pixels around it; bicubic (2-d) pads each of
// the 4×4 pixels around the unpadded coordinate instead. Its gradient is a composite of other ops
// (autodiff/rules_grid.go), so there is no backward kernel.

func init() {
	registerFor(ops.GridSampler, dispatch.Floats, floatKernel(
		func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.GridSample) {
			gridSample[float32](out, in[0], in[1], a)
		},
		func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.GridSample) {
			gridSample[float64](out, in[0], in[1], a)
		}))
}

// gridSample fills the contiguous out, (N, C, O...), from x, (N, C, S...),
// and grid, (N, O..., k).
func gridSample[T float](out, x, grid *dispatch.Tensor, a ops.GridSample) {
	xs, releaseX := dense[T](x)
	defer releaseX()
	gs, releaseG := dense[T](grid)
	defer releaseG()
	dst := span[T](out)
	if len(dst) == 0 {
		return
	}
	k := x.Rank() - 2
	n, c := x.Shape[0], x.Shape[1]
	// size[j] and stride[j] belong to grid component j: x's dim k+1-j
	// (component 0 indexes W, the last dim).
	var size, stride [3]int
	plane := 1
	for j := range k {
		size[j] = x.Shape[k+1-j]
		stride[j] = plane
		plane *= size[j]
	}
	points := len(dst) / (n * c)
	parallel(n*points, c*(1<<k), func(lo, hi int) {
		var src [3]T
		for q := lo; q < hi; q++ {
			b, p := q/points, q%points
			img := xs[b*c*plane : (b+1)*c*plane]
			o := dst[b*c*points+p:]
			if a.Mode == ops.GridBicubic {
				cubicPoint(o, points, img, plane, c, gridUnnormalize(gs[q*2], size[0], a), gridUnnormalize(gs[q*2+1], size[1], a), size, a)
				continue
			}
			for j := range k {
				src[j] = gridPad(gridUnnormalize(gs[q*k+j], size[j], a), size[j], k, a)
			}
			if a.Mode == ops.GridNearest {
				nearestPoint(o, points, img, plane, c, src[:k], size, stride)
			} else {
				linearPoint(o, points, img, plane, c, src[:k], size, stride, k == 2 && a.Padding == ops.GridZeros)
			}
		}
	})
}

// gridUnnormalize maps g, a normalised coordinate in [-1, 1] along a dim of
// the given size, to a coordinate in pixels (GridSampler.h,
// grid_sampler_unnormalize, in the form of its vectorised cpu kernel).
func gridUnnormalize[T float](g T, size int, a ops.GridSample) T {
	if a.AlignCorners {
		return (g + 1) * (T(size-1) / 2)
	}
	return (g+1)*(T(size)/2) - 0.5
}

// gridPad applies the padding mode to c, a coordinate in pixels along a
// dim of the given size: reflection, then clipping (GridSampler.h,
// compute_coordinates). Bilinear and nearest pad the source coordinate,
// bicubic each of its taps.
//
// A NaN grid value follows torch 1.13's cpu kernels, which disagree
// between ranks: with border or reflection padding it becomes pixel 0 in
// 2-d (the vectorised kernel clips with max(NaN, 0) = 0) and the last pixel
// in 3-d (std::min(limit, std::max(NaN, 0)) = limit); with zeros padding it
// stays NaN, for the sampler to deal with.
func gridPad[T float](c T, size, k int, a ops.GridSample) T {
	if a.Padding == ops.GridZeros {
		return c
	}
	if a.Padding == ops.GridReflection {
		if a.AlignCorners {
			c = reflect(c, 0, T(2*(size-1)))
		} else {
			c = reflect(c, -0.5, T(2*size))
		}
	}
	switch {
	case c != c:
		if k == 2 {
			return 0
		}
		return T(size - 1)
	case c <= 0:
		return 0
	case c >= T(size-1):
		return T(size - 1)
	}
	return c
}

// reflect folds c into [low, low + period/2] by reflecting it at both ends
// as often as it takes, period being twice the interval's length: the
// distance from low, less its whole spans, or the rest of the period if that
// is shorter (the formula of torch's vectorised cpu kernel,
// GridSamplerKernel.cpp's reflect_coordinates, which folds a far point
// such as 1e30 where its rounding puts it; GridSampler.h's fmod form
// agrees with it wherever a coordinate's ulp is below a pixel).
func reflect[T float](c, low, period T) T {
	if period == 0 {
		return 0
	}
	dist := T(math.Abs(float64(c - low)))
	extra := dist - T(T(math.Trunc(float64(dist/period)))*period) // no fused multiply-add: torch rounds the product
	return min(extra, period-extra) + low
}

// inside reports whether pixel i (a whole number, or anything a coordinate
// can be) lies in [0, size).
func inside[T float](i T, size int) bool { return i >= 0 && i < T(size) }

// nearestPoint writes one output point of every channel (o[ch·points]):
// the pixel nearest src, or 0 outside. A tie rounds to even in 2-d and
// away from zero in 3-d, as torch 1.13's cpu kernels do (the vectorised
// 2-d one rounds with the current rounding mode, the 3-d one with
// std::round).
func nearestPoint[T float](o []T, points int, img []T, plane, c int, src []T, size, stride [3]int) {
	at := 0
	round := math.RoundToEven
	if len(src) == 3 {
		round = math.Round
	}
	for j, s := range src {
		r := T(round(float64(s)))
		if !inside(r, size[j]) {
			for ch := range c {
				o[ch*points] = 0
			}
			return
		}
		at += int(r) * stride[j]
	}
	for ch := range c {
		o[ch*points] = img[ch*plane+at]
	}
}

// linearPoint writes one output point of every channel: the 2^k pixels
// around src weighted by their (bi/tri)linear weights, those outside the
// input counting as 0. nanOutside is the 2-d zeros-padding rule of torch
// 1.13's vectorised cpu kernel, which multiplies the masked-out pixels by
// their weights, so a non-finite coordinate (whose weights are NaN) gives NaN;
// the 3-d kernel skips them and gives 0.
func linearPoint[T float](o []T, points int, img []T, plane, c int, src []T, size, stride [3]int, nanOutside bool) {
	var base [3]int
	var frac [3]T
	var lowIn, highIn [3]bool
	for j, s := range src {
		f := T(math.Floor(float64(s)))
		frac[j] = s - f
		lowIn[j], highIn[j] = inside(f, size[j]), inside(f+1, size[j])
		if lowIn[j] || highIn[j] {
			base[j] = int(f)
		}
		if frac[j] != frac[j] {
			v := T(0)
			if nanOutside {
				v = T(math.NaN())
			}
			for ch := range c {
				o[ch*points] = v
			}
			return
		}
	}
	for ch := range c {
		o[ch*points] = 0
	}
	for corner := range 1 << len(src) {
		w := T(1)
		at := 0
		ok := true
		for j := range src {
			if corner>>j&1 == 1 {
				w *= frac[j]
				ok = ok && highIn[j]
				at += (base[j] + 1) * stride[j]
			} else {
				w *= 1 - frac[j]
				ok = ok && lowIn[j]
				at += base[j] * stride[j]
			}
		}
		if !ok {
			continue
		}
		for ch := range c {
			o[ch*points] += w * img[ch*plane+at]
		}
	}
}

// cubicA is the bicubic kernel's parameter (PyTorch's, as in upsampling).
const cubicA = -0.75

// cubicWeights are the weights of the taps at -1, 0, 1 and 2 pixels from
// the floor for a fraction t (UpSample.h, get_cubic_upsample_coefficients).
func cubicWeights[T float](t T) [4]T {
	a := T(cubicA)
	near := func(x T) T { return ((a+2)*x-(a+3))*x*x + 1 }
	far := func(x T) T { return ((a*x-5*a)*x+8*a)*x - 4*a }
	return [4]T{far(t + 1), near(t), near(1 - t), far(1 - t + 1)}
}

// cubicPoint writes one output point of every channel, bicubic (2-d
// only): the 4×4 pixels around (ix, iy), each tap padded by itself
// (GridSamplerKernel.cpp, get_value_bounded) and read as 0 outside, rows
// weighted by x's weights first, then the rows by y's. A non-finite
// coordinate gives NaN weights, and NaN, in every padding mode.
func cubicPoint[T float](o []T, points int, img []T, plane, c int, ix, iy T, size [3]int, a ops.GridSample) {
	fx, fy := T(math.Floor(float64(ix))), T(math.Floor(float64(iy)))
	wx, wy := cubicWeights(ix-fx), cubicWeights(iy-fy)
	var col [4]int
	var colIn [4]bool
	for i := range 4 {
		x := gridPad(fx-1+T(i), size[0], 2, a)
		colIn[i] = inside(x, size[0])
		if colIn[i] {
			col[i] = int(x)
		}
	}
	for ch := range c {
		var acc T
		for r := range 4 {
			y := gridPad(fy-1+T(r), size[1], 2, a)
			var row T
			for i := range 4 {
				var v T
				if colIn[i] && inside(y, size[1]) {
					v = img[ch*plane+int(y)*size[0]+col[i]]
				}
				row += v * wx[i]
			}
			acc += row * wy[r]
		}
		o[ch*points] = acc
	}
}
