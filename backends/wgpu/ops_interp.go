package wgpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// Interpolation (interp.wgsl), as the cpu computes it (backends/cpu/interp.go):
// every filter is separable, so the forward op resamples one spatial dim at
// a time, first to last, and the backward op runs the transposed passes
// last to first. Each pass's 1-d filter, a table of taps, is computed here
// on the host from PyTorch's coordinate formulas (aten/src/ATen/native/UpSample.h)
// in float32, the same arithmetic as the cpu's, and goes to the shader in
// its parameters; the backward pass gets the table transposed, so that it
// too is a gather, adding in the cpu's order.
func init() {
	for _, name := range []string{"upsample_nearest", "upsample_linear", "upsample_bicubic",
		"upsample_nearest_backward", "upsample_linear_backward", "upsample_bicubic_backward"} {
		filter, backward := dispatch.UpsampleFilter(name)
		register(name, func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
			if out.DType != dispatch.Float32 {
				return dispatch.Unsupported(out.Device, name, out.DType)
			}
			return upsample(name, out, in[0], attrs.(dispatch.Interp), filter, backward)
		})
	}
}

// taps is the 1-d filter of one dim: output index j reads the input at
// idx[j·k+t] with weight w[j·k+t], t < k.
type taps struct {
	k   int
	idx []int
	w   []float32
}

// identity reports whether the filter copies its input of in places.
func (tp taps) identity(in int) bool {
	if len(tp.idx) != in*tp.k {
		return false
	}
	for j := range in {
		for t := range tp.k {
			want := float32(0)
			if t == 0 {
				want = 1
			}
			if tp.w[j*tp.k+t] != want || t == 0 && tp.idx[j*tp.k] != j {
				return false
			}
		}
	}
	return true
}

// makeTaps is the filter from in to out places; scale is the caller's
// scale factor (0 for none).
func makeTaps(filter, in, out int, scale float64, alignCorners, exact bool) taps {
	switch filter {
	case dispatch.FilterNearest:
		return nearestTaps(in, out, scale, exact)
	case dispatch.FilterLinear:
		return linearTaps(in, out, scale, alignCorners)
	}
	return cubicTaps(in, out, scale, alignCorners)
}

// inverseScale is the step in input places per output place: 1/scale
// where the caller gave a scale, else in/out (compute_scales_value).
func inverseScale(in, out int, scale float64) float32 {
	if scale > 0 {
		return float32(1 / scale)
	}
	return float32(in) / float32(out)
}

// areaScale is area_pixel_compute_scale: with align_corners the corner
// centres map onto each other and the caller's scale is not used.
func areaScale(in, out int, scale float64, alignCorners bool) float32 {
	if alignCorners {
		if out > 1 {
			return float32(in-1) / float32(out-1)
		}
		return 0
	}
	return inverseScale(in, out, scale)
}

// areaSource is area_pixel_compute_source_index; linear clamps a negative
// coordinate to 0, cubic clamps its taps instead.
func areaSource(s float32, j int, alignCorners, cubic bool) float32 {
	if alignCorners {
		return s * float32(j)
	}
	src := s*(float32(j)+0.5) - 0.5
	if !cubic && src < 0 {
		return 0
	}
	return src
}

// nearestTaps: floor(j·s) (nearest-exact: floor((j+0.5)·s), formed in
// float64 and rounded to float32), capped at the last place.
func nearestTaps(in, out int, scale float64, exact bool) taps {
	s := inverseScale(in, out, scale)
	tp := taps{k: 1, idx: make([]int, out), w: make([]float32, out)}
	for j := range out {
		src := float32(j) * s
		if exact {
			src = float32((float64(j) + 0.5) * float64(s))
		}
		tp.idx[j] = min(int(math.Floor(float64(src))), in-1)
		tp.w[j] = 1
	}
	return tp
}

// linearTaps: the two places around the source coordinate, weighted by
// distance (compute_source_index_and_lambda; equal sizes copy).
func linearTaps(in, out int, scale float64, alignCorners bool) taps {
	tp := taps{k: 2, idx: make([]int, 2*out), w: make([]float32, 2*out)}
	s := areaScale(in, out, scale, alignCorners)
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
		l1 := min(max(src-float32(i0), 0), 1)
		tp.idx[2*j], tp.idx[2*j+1] = i0, i1
		tp.w[2*j], tp.w[2*j+1] = 1-l1, l1
	}
	return tp
}

// cubicA is the parameter of Keys' cubic kernel that PyTorch uses.
const cubicA = -0.75

// cubicTaps: the four places around the source coordinate with Keys'
// weights at distances 1+t, t, 1-t, 2-t, indices clamped to the border
// (get_cubic_upsample_coefficients, upsample_get_value_bounded).
func cubicTaps(in, out int, scale float64, alignCorners bool) taps {
	tp := taps{k: 4, idx: make([]int, 4*out), w: make([]float32, 4*out)}
	s := areaScale(in, out, scale, alignCorners)
	a := float32(cubicA)
	near := func(x float32) float32 { return ((a+2)*x-(a+3))*x*x + 1 }  // |x| ≤ 1
	far := func(x float32) float32 { return ((a*x-5*a)*x+8*a)*x - 4*a } // 1 < |x| < 2
	for j := range out {
		src := areaSource(s, j, alignCorners, true)
		i0 := math.Floor(float64(src))
		t := src - float32(i0)
		w := [4]float32{far(t + 1), near(t), near(1 - t), far(2 - t)}
		for m := range 4 {
			tp.idx[4*j+m] = min(max(int(i0)-1+m, 0), in-1)
			tp.w[4*j+m] = w[m]
		}
	}
	return tp
}

// forwardTable is the parameter table of a forward pass: the indices,
// then the weights' bits.
func (tp taps) forwardTable() []uint32 {
	table := make([]uint32, 2*len(tp.idx))
	for e, i := range tp.idx {
		table[e] = uint32(i)
		table[len(tp.idx)+e] = math.Float32bits(tp.w[e])
	}
	return table
}

// backwardTable is the table of the transposed pass onto in places: the
// row starts of each input place (in+1 words), then for each entry the
// forward output index, then the weights' bits, each row in the order
// the cpu's scatter-add visits it (output index, then tap).
func (tp taps) backwardTable(in int) (table []uint32, entries int) {
	first := make([]uint32, in+1)
	for _, i := range tp.idx {
		first[i+1]++
	}
	for r := range in {
		first[r+1] += first[r]
	}
	entries = len(tp.idx)
	table = make([]uint32, in+1+2*entries)
	copy(table, first)
	next := append([]uint32(nil), first[:in]...)
	for e, i := range tp.idx {
		q := int(next[i])
		next[i]++
		table[in+1+q] = uint32(e / tp.k)
		table[in+1+entries+q] = math.Float32bits(tp.w[e])
	}
	return table, entries
}

// upsample runs the forward op (x the input) or the backward op (x the
// output's gradient) into the contiguous out, one pass per spatial dim
// whose filter is not the identity.
func upsample(op string, out, x *dispatch.Tensor, a dispatch.Interp, filter int, backward bool) error {
	if out.Numel() == 0 {
		return nil
	}
	k := x.Rank() - 2
	from, to, forwardIn := x.Shape[2:], a.Size, x.Shape[2:]
	if backward {
		from, to, forwardIn = a.Size, a.InputSize, a.InputSize
	}
	type pass struct {
		dim int
		tp  taps
	}
	var passes []pass
	for i := range k {
		d := i
		if backward {
			d = k - 1 - i // the transpose of a product reverses it
		}
		scale := 0.0
		if a.Scales != nil {
			scale = a.Scales[d]
		}
		tp := makeTaps(filter, forwardIn[d], a.Size[d], scale, a.AlignCorners, a.Exact)
		if !tp.identity(forwardIn[d]) {
			passes = append(passes, pass{d, tp})
		}
	}
	if len(passes) == 0 {
		return copyInto(op, out, x)
	}
	src := x
	if !x.IsContiguous() {
		c, err := dispatch.Empty(out.Device, dispatch.Float32, x.Shape)
		if err != nil {
			return err
		}
		defer c.Release()
		if err := copyInto(op, c, x); err != nil {
			return err
		}
		src = c
	}
	kind := "forward"
	if backward {
		kind = "backward"
	}
	sh, err := shaderFor("interp/"+kind, "interp", struct{ Op string }{kind})
	if err != nil {
		return err
	}
	// cur is the shape after the passes so far.
	cur := append([]int(nil), x.Shape...)
	copy(cur[2:], from)
	for p, ps := range passes {
		d := ps.dim + 2
		n, m := cur[d], to[ps.dim]
		inner := dispatch.Numel(cur[d+1:])
		cur[d] = m
		next := out
		if p < len(passes)-1 {
			if next, err = dispatch.Empty(out.Device, dispatch.Float32, cur); err != nil {
				return err
			}
		}
		items := next.Numel()
		var table []uint32
		count := ps.tp.k
		if backward {
			table, count = ps.tp.backwardTable(m)
		} else {
			table = ps.tp.forwardTable()
		}
		params := append([]uint32{uint32(items), uint32(inner), uint32(m), uint32(n), uint32(count), uint32(src.Offset), 0, 0}, table...)
		if err := launch(op, sh, grid(items), params, next, src); err != nil {
			return err
		}
		if p > 0 { // the previous pass's temporary
			src.Release()
		}
		src = next
	}
	return nil
}
