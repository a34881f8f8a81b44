package wgpu

import (
	"fmt"
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The fused layer norm (layernorm.wgsl): the forward, one workgroup per
// row (an invocation per row for rows of at most perItemLen values); the
// backward in two kernels, dx per row (which leaves each row's
// statistics in a scratch buffer) and then dw and db per column. Inputs
// are read through their strides.

func init() {
	register(ops.LayerNorm, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.LayerNormParams) error {
		rows, d, err := ops.LayerNormShapes(in[0], in[1], in[2], "bias", false, a)
		if err != nil || out.Numel() == 0 {
			return err
		}
		x, done, err := lnRowable(ops.LayerNorm.Name, in[0])
		if err != nil {
			return err
		}
		defer done()
		in = []*dispatch.Tensor{x, in[1], in[2]}
		return lnLaunch("fwd", rows, lnParams(rows, rows, d, a, out, in), out, in...)
	})
	register(ops.LayerNormBackward, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.LayerNormParams) error {
		rows, d, err := ops.LayerNormShapes(in[0], in[1], in[2], "grad", true, a)
		if err != nil || out.Numel() == 0 {
			return err
		}
		x, doneX, err := lnRowable(ops.LayerNormBackward.Name, in[0])
		if err != nil {
			return err
		}
		defer doneX()
		g, doneG, err := lnRowable(ops.LayerNormBackward.Name, in[2])
		if err != nil {
			return err
		}
		defer doneG()
		in = []*dispatch.Tensor{x, in[1], g}
		stats, err := dispatch.Empty(out.Device, dispatch.Float32, []int{max(3*rows, 1)})
		if err != nil {
			return err
		}
		defer stats.Release()
		if rows > 0 {
			if err := lnLaunch("dx", rows, lnParams(rows, rows, d, a, out, in), out, in[0], in[1], in[2], stats); err != nil {
				return err
			}
		}
		return lnLaunch("dwb", d, lnParams(d, rows, d, a, out, in), out, in[0], in[2], stats)
	})
}

// lnRowStride is the stride between t's rows, its dims but the last merged
// into one, and whether they merge (a view that they do not, a transpose of
// leading dims, must be copied first).
func lnRowStride(t *dispatch.Tensor) (int, bool) {
	rs, n := 0, 1 // the merged dim's stride, and its size so far
	for i := t.Rank() - 2; i >= 0; i-- {
		if t.Shape[i] == 1 {
			continue
		}
		if n == 1 {
			rs = t.Strides[i]
		} else if t.Strides[i] != rs*n {
			return 0, false
		}
		n *= t.Shape[i]
	}
	return rs, true
}

// lnRowable is t, or a contiguous copy of it where its rows do not merge
// (lnRowStride), and what releases the copy.
func lnRowable(op string, t *dispatch.Tensor) (*dispatch.Tensor, func(), error) {
	if _, ok := lnRowStride(t); ok {
		return t, func() {}, nil
	}
	c, err := dispatch.Empty(t.Device, dispatch.Float32, t.Shape)
	if err != nil {
		return nil, nil, err
	}
	if err := copyInto(op, c, t); err != nil {
		c.Release()
		return nil, nil, err
	}
	return c, c.Release, nil
}

// lnParams are the kernels' parameter words (layernorm.wgsl): the work
// items, D, dst's offset, eps, the rows, and each input's offset and
// strides (x [..., D] as rows, w [D], and b [D] or g, x's shape). x and g
// have rows that merge (lnRowable).
func lnParams(items, rows, d int, a ops.LayerNormParams, out *dispatch.Tensor, in []*dispatch.Tensor) []uint32 {
	p := make([]uint32, 13)
	p[0], p[1], p[2] = uint32(items), uint32(d), uint32(out.Offset)
	p[3] = math.Float32bits(float32(a.Eps))
	p[4] = uint32(rows)
	x, w, third := in[0], in[1], in[2]
	xs, _ := lnRowStride(x)
	p[5], p[6], p[7] = uint32(int32(x.Offset)), uint32(int32(xs)), uint32(int32(x.Strides[x.Rank()-1]))
	p[8], p[9] = uint32(int32(w.Offset)), uint32(int32(w.Strides[0]))
	p[10] = uint32(int32(third.Offset))
	if third.Rank() == x.Rank() && third.Rank() > 1 {
		ts, _ := lnRowStride(third)
		p[11], p[12] = uint32(int32(ts)), uint32(int32(third.Strides[third.Rank()-1]))
	} else {
		p[12] = uint32(int32(third.Strides[third.Rank()-1]))
	}
	return p
}

// lnLaunch runs one pass of layernorm.wgsl: a workgroup per row for fwd
// and dx, an invocation per column for dwb.
func lnLaunch(pass string, items int, p []uint32, out *dispatch.Tensor, in ...*dispatch.Tensor) error {
	op := ops.LayerNorm.Name
	if pass != "fwd" {
		op = ops.LayerNormBackward.Name
	}
	// Rows as short as reduce's per-item ones take an invocation each.
	perItem := pass == "dwb" || p[1] <= perItemLen
	sh, err := shaderFor(fmt.Sprintf("layer_norm/%s/peritem=%v", pass, perItem), "layerNorm", struct {
		Pass    string
		PerItem bool
	}{pass, perItem})
	if err != nil {
		return err
	}
	n := items
	if !perItem {
		n = items * workgroup
	}
	return launch(op, sh, grid(n), p, append([]*dispatch.Tensor{out}, in...)...)
}
