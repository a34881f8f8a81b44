package wgpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Interpolation (interp.wgsl), as the cpu computes it (backends/cpu/interp.go):
// every filter is separable, so the forward op resamples one spatial dim at
// a time, first to last, and the backward op runs the transposed passes
// last to first. Each pass's 1-d filter, a table of taps, is computed on
// the host by layout.MakeTaps in float32, the cpu's own arithmetic, and
// goes to the shader in its parameters; the backward pass gets the table transposed, so that it
// too is a gather, adding in the cpu's order.
func init() {
	for _, u := range ops.Upsamples {
		for _, op := range []*dispatch.Op[ops.Interp]{u.Forward, u.Backward} {
			register(op, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.Interp) error {
				return upsample(op.Name, out, in[0], a, u.Filter, op == u.Backward)
			})
		}
	}
}

// taps is a pass's 1-d filter (layout.Taps, the cpu's own), in float32.
type taps = layout.Taps[float32]

// forwardTable is the parameter table of a forward pass: the indices,
// then the weights' bits.
func forwardTable(tp taps) []uint32 {
	table := make([]uint32, 2*len(tp.Idx))
	for e, i := range tp.Idx {
		table[e] = uint32(i)
		table[len(tp.Idx)+e] = math.Float32bits(tp.W[e])
	}
	return table
}

// backwardTable is the table of the transposed pass onto in places: the
// row starts of each input place (in+1 words), then for each entry the
// forward output index, then the weights' bits, each row in the order
// the cpu's scatter-add visits it (output index, then tap).
func backwardTable(tp taps, in int) (table []uint32, entries int) {
	first := make([]uint32, in+1)
	for _, i := range tp.Idx {
		first[i+1]++
	}
	for r := range in {
		first[r+1] += first[r]
	}
	entries = len(tp.Idx)
	table = make([]uint32, in+1+2*entries)
	copy(table, first)
	next := append([]uint32(nil), first[:in]...)
	for e, i := range tp.Idx {
		q := int(next[i])
		next[i]++
		table[in+1+q] = uint32(e / tp.K)
		table[in+1+entries+q] = math.Float32bits(tp.W[e])
	}
	return table, entries
}

// upsample runs the forward op (x the input) or the backward op (x the
// output's gradient) into the contiguous out, one pass per spatial dim
// whose filter is not the identity.
func upsample(op string, out, x *dispatch.Tensor, a ops.Interp, filter int, backward bool) error {
	if out.Numel() == 0 {
		return nil
	}
	passes := layout.UpsamplePasses[float32](filter, x.Shape[2:], a.Size, a.InputSize, a.Scales, a.AlignCorners, a.Exact, backward)
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
	for p, ps := range passes {
		d := ps.Dim + 2
		n, m := ps.From, ps.To
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
		count := ps.Taps.K
		if backward {
			table, count = backwardTable(ps.Taps, m)
		} else {
			table = forwardTable(ps.Taps)
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
