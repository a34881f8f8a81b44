//go:build cgo

package wgpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Fused attention (attention.wgsl), the cuda kernels' design in f32: the
// forward in one kernel, the backward in three (each query row's D =
// rowsum(dO∘O) - dlse into a scratch buffer, then dK and dV per key row,
// then dQ per query row). Inputs are read through their strides.

// attnRows is the rows (invocations) of one of the kernels' workgroups.
const attnRows = 64

func init() {
	register(ops.Attention, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
		g, err := ops.AttentionShapes(in[0], in[1], in[2])
		if err != nil || out.Numel() == 0 {
			return err
		}
		tiles := g.N * g.Hq * ((g.Lq + attnRows - 1) / attnRows)
		return attnLaunch("fwd", tiles, attnParams(g, a, out.Offset, in), out, in[0], in[1], in[2])
	})
	register(ops.AttentionBackward, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
		g, err := ops.AttentionShapes(in[0], in[1], in[2])
		if err != nil || out.Numel() == 0 {
			return err
		}
		rows := g.N * g.Hq * g.Lq
		d, err := dispatch.Empty(out.Device, dispatch.Float32, []int{max(rows, 1)})
		if err != nil {
			return err
		}
		defer d.Release()
		args := append([]*dispatch.Tensor{nil}, in...)
		if rows > 0 {
			args[0] = d
			if err := attnLaunch("delta", (rows+attnRows-1)/attnRows, attnParams(g, a, d.Offset, in), args...); err != nil {
				return err
			}
		}
		args[0] = out
		if kt := g.N * g.Hk * ((g.Lk + attnRows - 1) / attnRows); kt > 0 {
			if err := attnLaunch("dkv", kt, attnParams(g, a, out.Offset, in), append(args, d)...); err != nil {
				return err
			}
		}
		if qt := g.N * g.Hq * ((g.Lq + attnRows - 1) / attnRows); qt > 0 && g.E > 0 {
			return attnLaunch("dq", qt, attnParams(g, a, out.Offset, in), args...)
		}
		return nil
	})
}

// attnParams are the kernels' parameter words (attention.wgsl): the sizes,
// the scale, causal masking, dst's offset, and each input's offset and
// four strides.
func attnParams(g ops.AttentionGeometry, a ops.AttentionParams, base int, in []*dispatch.Tensor) []uint32 {
	p := make([]uint32, 36)
	for i, v := range []int{0, g.N, g.Hq, g.Hk, g.Lq, g.Lk, g.E, g.Ev} {
		p[i] = uint32(v)
	}
	p[8] = math.Float32bits(float32(a.Scale))
	if a.Causal {
		p[9] = 1
	}
	p[10] = uint32(base)
	for i, t := range in {
		p[11+5*i] = uint32(int32(t.Offset))
		for d, s := range t.Strides {
			p[12+5*i+d] = uint32(int32(s))
		}
	}
	return p
}

// attnLaunch runs the kernel of kind over tiles workgroups.
func attnLaunch(kind string, tiles int, p []uint32, tensors ...*dispatch.Tensor) error {
	sh, err := shaderFor("attention/"+kind, "attention", struct{ Kind string }{kind})
	if err != nil {
		return err
	}
	p[0] = uint32(tiles)
	return launch("attention", sh, grid(tiles*workgroup), p, tensors...)
}
