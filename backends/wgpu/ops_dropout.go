package wgpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// dropout (random.wgsl): an invocation per block of four elements, which
// shares one Philox block, reading x where it lies.

func init() {
	register(ops.Dropout, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, m ops.Mask) error {
		n := out.Numel()
		if n == 0 {
			return nil
		}
		x := in[0]
		if layout.Broadcast(out, x).Collapse().Rank() > maxRank {
			// Dims that do not merge to the layout's: a contiguous copy
			// (copyInto takes any rank).
			c, err := dispatch.Empty(x.Device, x.DType, x.Shape)
			if err != nil {
				return err
			}
			defer c.Release()
			if err := copyInto(ops.Dropout.Name, c, x); err != nil {
				return err
			}
			x = c
		}
		sh, err := shaderFor("dropout", "dropout", struct{}{})
		if err != nil {
			return err
		}
		params, err := stridedParams(out, x)
		if err != nil {
			return err
		}
		params = append(params, uint32(m.Key), uint32(m.Key>>32), m.Threshold(), math.Float32bits(float32(m.Scale())))
		return launch(ops.Dropout.Name, sh, grid((n+3)/4), params, out, x)
	})
}
