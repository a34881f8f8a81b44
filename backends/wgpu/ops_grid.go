package wgpu

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// grid_sampler (grid.wgsl), as the cpu computes it (backends/cpu/grid.go):
// one invocation per output element over contiguous x and grid (strided
// ones are copied first). Its gradient is a composite of other ops
// (autodiff/rules_grid.go), so there is no backward kernel.
func init() {
	register(ops.GridSampler, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.GridSample) error {
		return gridSample(out, in[0], in[1], a)
	})
}

func gridSample(out, x, g *dispatch.Tensor, a ops.GridSample) error {
	const op = "grid_sampler"
	if out.Numel() == 0 {
		return nil
	}
	args := []*dispatch.Tensor{x, g}
	for i, t := range args {
		if t.IsContiguous() {
			continue
		}
		c, err := dispatch.Empty(out.Device, dispatch.Float32, t.Shape)
		if err != nil {
			return err
		}
		defer c.Release()
		if err := copyInto(op, c, t); err != nil {
			return err
		}
		args[i] = c
	}
	x, g = args[0], args[1]
	k := x.Rank() - 2
	points := out.Numel() / (out.Shape[0] * out.Shape[1])
	align := uint32(0)
	if a.AlignCorners {
		align = 1
	}
	params := []uint32{uint32(out.Numel()), uint32(x.Shape[1]), uint32(points), uint32(k),
		uint32(a.Mode), uint32(a.Padding), align, uint32(x.Offset), uint32(g.Offset), 0, 0, 0}
	for j := range k {
		params[9+j] = uint32(x.Shape[k+1-j])
	}
	sh, err := shaderFor("grid", "grid", nil)
	if err != nil {
		return err
	}
	return launch(op, sh, grid(out.Numel()), params, out, x, g)
}
