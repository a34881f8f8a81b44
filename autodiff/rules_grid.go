package autodiff

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The gradient of grid_sampler, as torch's grid_sampler_2d_backward and
// _3d_backward compute it (GridSampler.cpp), written as dispatch calls:
// gather the pixels every output point reads (its nearest, the 2^k around
// it, or bicubic's 4×4), scatter-add g·weight back to them for x, and for
// the grid sum g times each pixel times its weight's derivative along each
// coordinate, times the slope of the coordinate map (the unnormalisation's
// scale, with reflection's sign and 0 where clipping holds the coordinate
// still; bicubic pads its taps, not the coordinate, so its slope is the
// scale alone).
//
// Why a composite and not a backward op with kernels: torch 1.13 has no
// derivative of grid_sampler's backward ("derivative for
// aten::grid_sampler_2d_backward is not implemented"), and writing its
// double backward as more kernels on three backends would be three more
// copies of the sampler. Every op used here has its own rule, so a
// recorded backward (CreateGraph) gives second derivatives on any device,
// the mixed ∂²/∂x∂grid terms and bilinear's cross terms ∂²/∂gx∂gy included.
// The source coordinates and their slopes are computed from the detached
// grid; the grid enters the graph only through c = slope·grid + (c₀ -
// slope·grid₀), which has the coordinate's value and its first derivative,
// and, the coordinate map being piecewise linear, its second (zero) too.

func init() {
	ruleWith(ops.GridSampler, func(b *builder, n *Node, a ops.GridSample, g *T) []*T {
		x, grid := n.Inputs[0], n.Inputs[1]
		s := b.gridSampling(x, grid, a)
		var gx, ggrid *T
		if x.RequiresGrad.Load() {
			gx = s.inputGrad(g)
		}
		if grid.RequiresGrad.Load() {
			ggrid = s.gridGrad(g)
		}
		return []*T{gx, ggrid}
	})
}

// gridCorner is one of the pixels every output point reads: its flat
// index into x's spatial plane, broadcast over the channels (N, C, P), and
// its weight (N, 1, P), 0 where the pixel lies outside x. dweight[j] is the
// weight's derivative along coordinate j (none for nearest).
type gridCorner struct {
	index   *T
	valid   *T // (N, 1, P) bool: the pixel lies inside x
	weight  *T
	dweight []*T
}

// gridSampling is what both gradients need: x as (N, C, Q), the corners,
// and the slope of each coordinate map (N, 1, P).
type gridSampling struct {
	b       *builder
	x, grid *T
	points  int // P, the grid's points per batch entry
	flatX   *T
	corners []gridCorner
	slopes  []*T
}

func (b *builder) gridSampling(x, grid *T, a ops.GridSample) *gridSampling {
	k := x.Rank() - 2
	nb, ch := x.Shape[0], x.Shape[1]
	plane, points := 1, 1
	for _, d := range x.Shape[2:] {
		plane *= d
	}
	for _, d := range grid.Shape[1 : k+1] {
		points *= d
	}
	s := &gridSampling{b: b, x: x, grid: grid, points: points, flatX: b.reshapeTo(x, []int{nb, ch, plane})}
	// Per grid component j (j = 0 indexes W, x's last dim): the source
	// coordinate, on the graph, and the floor or nearest pixel, off it.
	coord := make([]*T, k)
	pixel := make([]*T, k)
	sizes := make([]int, k)
	strides := make([]int, k)
	stride := 1
	for j := range k {
		sizes[j], strides[j] = x.Shape[k+1-j], stride
		stride *= sizes[j]
		gj := b.reshapeTo(call(b, ops.Narrow, ops.NarrowRange{Dim: k + 1, Start: j, Length: 1}, grid), []int{nb, 1, points})
		if b.err != nil {
			return s
		}
		c0, slope := b.gridSource(detach(gj), sizes[j], k, a)
		s.slopes = append(s.slopes, slope)
		// A non-finite grid value stays out of slope·grid (0·Inf is NaN):
		// its coordinate is c0 alone.
		finite := b.cmpScalar(ops.Lt, b.unary(ops.Abs, detach(gj)), math.Inf(1))
		gj = b.where(finite, gj, b.scalar(gj, 0))
		coord[j] = b.add(b.mul(slope, gj), b.sub(c0, b.mul(slope, detach(gj))))
		if a.Mode == ops.GridNearest {
			pixel[j] = b.nearestPixel(c0, k)
		} else {
			pixel[j] = b.unary(ops.Floor, c0)
		}
	}
	expand := ops.ViewShape{Shape: []int{nb, ch, points}}
	taps := make([][]gridTap, k)
	for j := range k {
		taps[j] = b.gridTaps(coord[j], pixel[j], sizes[j], k, a)
	}
	// Every corner: one tap per dim, tap[j] of dim j.
	tap := make([]int, k)
	for {
		var valid, index *T
		factors, dfactors := make([]*T, k), make([]*T, k)
		for j, tp := range tap {
			t := taps[j][tp]
			factors[j], dfactors[j] = t.weight, t.dweight
			in := b.op(ops.LogicalAnd, b.cmpScalar(ops.Ge, t.at, 0), b.cmpScalar(ops.Le, t.at, float64(sizes[j]-1)))
			// Outside pixels read pixel 0, with weight 0, so the index stays in range.
			flat := b.mul(call(b, ops.Cast, ops.CastTo{DType: dispatch.Int64}, b.where(in, t.at, b.scalar(t.at, 0))), b.int64Scalar(t.at, strides[j]))
			if j == 0 {
				valid, index = in, flat
			} else {
				valid, index = b.op(ops.LogicalAnd, valid, in), b.add(index, flat)
			}
		}
		c := gridCorner{index: call(b, ops.Expand, expand, index), valid: valid}
		zero := b.scalar(x, 0)
		if a.Mode == ops.GridNearest {
			c.weight = b.where(valid, b.scalar(x, 1), zero)
		} else {
			c.weight = b.where(valid, product(b, factors, -1), zero)
			for i := range k {
				// d/dt_i of Π_j factor_j.
				c.dweight = append(c.dweight, b.where(valid, b.mul(dfactors[i], product(b, factors, i)), zero))
			}
		}
		s.corners = append(s.corners, c)
		j := 0
		for ; j < k; j++ {
			if tap[j]++; tap[j] < len(taps[j]) {
				break
			}
			tap[j] = 0
		}
		if j == k {
			break
		}
	}
	return s
}

// gridTap is one of the pixels a point reads along one dim: where (off the
// graph), its weight factor and the factor's derivative along the
// fraction t (on it).
type gridTap struct{ at, weight, dweight *T }

// gridTaps are the taps along one dim of a point whose coordinate is coord
// and floor (or nearest pixel) pixel: the nearest pixel alone; the floor
// and the next with weights 1 - t and t; or bicubic's four at -1..2 from
// the floor, each padded by itself (backends/cpu/grid.go, cubicPoint), with
// Keys' weights.
func (b *builder) gridTaps(coord, pixel *T, size, k int, a ops.GridSample) []gridTap {
	if a.Mode == ops.GridNearest {
		return []gridTap{{at: pixel}}
	}
	t := b.sub(coord, pixel)
	if a.Mode == ops.GridBilinear {
		return []gridTap{
			{pixel, b.sub(b.scalar(t, 1), t), b.scalar(t, -1)},
			{b.add(pixel, b.scalar(pixel, 1)), t, b.scalar(t, 1)},
		}
	}
	// UpSample.h's cubic_convolution1 (near taps, |x| ≤ 1) and 2 (far
	// taps, 1 < |x| < 2), A = -0.75, and their derivatives, at the
	// distances t + 1, t, 1 - t and 2 - t.
	const A = -0.75
	near, dnear := []float64{A + 2, -(A + 3), 0, 1}, []float64{3 * (A + 2), -2 * (A + 3), 0}
	far, dfar := []float64{A, -5 * A, 8 * A, -4 * A}, []float64{3 * A, -10 * A, 8 * A}
	one := b.scalar(t, 1)
	dist := []*T{b.add(t, one), t, b.sub(one, t), b.sub(b.scalar(t, 2), t)}
	out := make([]gridTap, 4)
	for i, d := range dist {
		w, dw := near, dnear
		if i == 0 || i == 3 {
			w, dw = far, dfar
		}
		at, _ := b.gridPad(b.add(pixel, b.scalar(pixel, float64(i-1))), size, k, a)
		out[i] = gridTap{at: at, weight: b.horner(d, w), dweight: b.horner(d, dw)}
		if i >= 2 { // the distance falls as t grows
			out[i].dweight = b.neg(out[i].dweight)
		}
	}
	return out
}

// horner is the polynomial with coefficients c (highest first) at x.
func (b *builder) horner(x *T, c []float64) *T {
	p := b.scalar(x, c[0])
	for _, ci := range c[1:] {
		p = b.add(b.mul(p, x), b.scalar(x, ci))
	}
	return p
}

// product is the product of the factors but the one at skip.
func product(b *builder, factors []*T, skip int) *T {
	var p *T
	for j, f := range factors {
		switch {
		case j == skip:
		case p == nil:
			p = f
		default:
			p = b.mul(p, f)
		}
	}
	return p
}

// inputGrad is x's gradient: g·weight scatter-added to every corner.
func (s *gridSampling) inputGrad(g *T) *T {
	b := s.b
	if b.err != nil {
		return nil
	}
	gf := b.reshapeTo(g, []int{s.x.Shape[0], s.x.Shape[1], s.points})
	acc := b.zerosLike(s.flatX)
	for _, c := range s.corners {
		// An outside pixel gets nothing, not 0·g (which is NaN for a NaN g),
		// as torch's backward skips it.
		acc = call(b, ops.ScatterAdd, ops.IndexDim{Dim: 2}, acc, c.index, b.where(c.valid, b.mul(gf, c.weight), b.scalar(gf, 0)))
	}
	return b.reshapeTo(acc, s.x.Shape)
}

// gridGrad is the grid's gradient: for each coordinate j, the slope times
// Σ over corners of dweight[j] · Σ over channels of g·pixel. Nearest
// sampling is flat between pixels, so its grid gets zeros, as torch's does.
func (s *gridSampling) gridGrad(g *T) *T {
	b := s.b
	if b.err != nil {
		return nil
	}
	if len(s.corners) == 0 || s.corners[0].dweight == nil {
		return b.zerosLike(s.grid)
	}
	k := len(s.slopes)
	gf := b.reshapeTo(g, []int{s.x.Shape[0], s.x.Shape[1], s.points})
	parts := make([]*T, k)
	for _, c := range s.corners {
		// Σ_channels g·x[corner], (N, 1, P).
		gv := call(b, ops.Sum, ops.Reduce{Dims: []int{1}, KeepDim: true}, b.mul(gf, call(b, ops.Gather, ops.IndexDim{Dim: 2}, s.flatX, c.index)))
		for j := range k {
			if term := b.mul(gv, c.dweight[j]); parts[j] == nil {
				parts[j] = term
			} else {
				parts[j] = b.add(parts[j], term)
			}
		}
	}
	for j := range k {
		parts[j] = b.mul(parts[j], s.slopes[j])
	}
	// Each part is (N, 1, P); stacked on a new last dim they are (N, 1, P, k).
	stacked := call(b, ops.Stack, ops.ConcatDim{Dim: 3}, parts...)
	return b.reshapeTo(stacked, s.grid.Shape)
}

// gridSource is the source coordinate of the normalised coordinates g
// along a dim of the given size and its slope dc/dg, as the kernels compute
// it (backends/cpu/grid.go, gridUnnormalize and gridPad; GridSampler.h's
// grid_sampler_compute_source_index and its _set_grad variants); bicubic
// pads its taps instead, so its slope is the unnormalisation's alone. g
// must not require a gradient: both results are constants of the graph.
func (b *builder) gridSource(g *T, size, k int, a ops.GridSample) (c, slope *T) {
	scale, shift := float64(size)/2, -0.5
	if a.AlignCorners {
		scale, shift = float64(size-1)/2, 0
	}
	c = b.mulScalar(b.add(g, b.scalar(g, 1)), scale)
	if shift != 0 {
		c = b.add(c, b.scalar(c, shift))
	}
	if a.Mode == ops.GridBicubic {
		return c, b.scalar(g, scale)
	}
	c, slope = b.gridPad(c, size, k, a)
	return c, b.mulScalar(slope, scale)
}

// gridPad applies the padding mode to the pixel coordinates c (which must
// not require a gradient) and gives the slope of that map: reflection, then
// clipping (GridSampler.h, compute_coordinates).
func (b *builder) gridPad(c *T, size, k int, a ops.GridSample) (*T, *T) {
	slope := b.scalar(c, 1)
	if a.Padding == ops.GridZeros {
		return c, slope
	}
	if a.Padding == ops.GridReflection {
		// Fold c into [low, low + period/2] (backends/cpu/grid.go, reflect).
		low, period := -0.5, float64(2*size)
		if a.AlignCorners {
			low, period = 0, float64(2*(size-1))
		}
		if period == 0 {
			return b.zerosLike(c), b.scalar(c, 0)
		}
		d := b.sub(c, b.scalar(c, low))
		dist := b.unary(ops.Abs, d)
		whole := b.unary(ops.Floor, b.div(dist, b.scalar(c, period)))
		extra := b.sub(dist, b.mulScalar(whole, period))
		rest := b.sub(b.scalar(c, period), extra)
		flip := b.op(ops.Gt, extra, rest)
		c = b.add(b.where(flip, rest, extra), b.scalar(c, low))
		// The slope changes sign left of low and where the rest is taken
		// (reflect_coordinates_get_grad).
		flipped := b.op(ops.Ne, b.cmpScalar(ops.Lt, d, 0), flip)
		slope = b.mul(slope, b.where(flipped, b.scalar(c, -1), b.scalar(c, 1)))
	}
	// Clipping holds the coordinate still at both ends (clip_coordinates_set_grad:
	// the slope is 0 at the limits themselves too).
	inside := b.op(ops.LogicalAnd, b.cmpScalar(ops.Gt, c, 0), b.cmpScalar(ops.Lt, c, float64(size-1)))
	slope = b.where(inside, slope, b.scalar(c, 0))
	// NaN reads pixel 0 in 2-d and the last pixel in 3-d, as the kernels read it.
	nan := float64(size - 1)
	if k == 2 {
		nan = 0
	}
	clamped := call(b, ops.Clamp, ops.Params{A: 0, B: float64(size - 1)}, c)
	c = b.where(b.op(ops.Ne, c, c), b.scalar(c, nan), clamped)
	return c, slope
}

// nearestPixel rounds c to the nearest pixel as the kernels do: ties to
// even in 2-d, away from zero in 3-d (backends/cpu/grid.go, nearestPoint).
func (b *builder) nearestPixel(c *T, k int) *T {
	if k == 2 {
		return b.unary(ops.Round, c)
	}
	up := b.unary(ops.Floor, b.add(b.unary(ops.Abs, c), b.scalar(c, 0.5)))
	return b.where(b.cmpScalar(ops.Lt, c, 0), b.neg(up), up)
}

// int64Scalar is a 0-d int64 tensor on like's device holding v (index
// arithmetic, exact where a float32 would not be past 2^24).
func (b *builder) int64Scalar(like *T, v int) *T {
	if b.err != nil {
		return nil
	}
	t, err := dispatch.Upload(like.Device, ops.FilledData(dispatch.Int64, 1, float64(v)), dispatch.Int64, []int{})
	if err != nil {
		b.err = err
		return nil
	}
	b.made = append(b.made, t)
	return t
}
