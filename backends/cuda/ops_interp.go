package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Interpolation (kernels/cuda/interp.cu): one separable pass per spatial
// dim, as on the cpu (backends/cpu/interp.go), forward from the first dim
// to the last and backward from the last to the first (the transpose of a
// product reverses it), through scratch memory between passes. A linear
// pass between equal sizes is a copy, and is skipped as the cpu skips it.

func init() {
	for _, u := range ops.Upsamples {
		for _, op := range []*dispatch.Op[ops.Interp]{u.Forward, u.Backward} {
			name, filter, backward := op.Name, u.Filter, op == u.Backward
			kernel(op, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.Interp) error {
				return named(name, upsample(out, in[0], a, filter, backward))
			})
		}
	}
}

func upsample(out, x *dispatch.Tensor, a ops.Interp, filter int, backward bool) error {
	if out.Numel() == 0 {
		return nil
	}
	dev, dt := out.Device, out.DType
	src, freeSrc, err := rowMajor(x)
	if err != nil {
		return err
	}
	defer freeSrc()
	// The passes as every backend plans them (layout.UpsamplePasses); the
	// kernel computes each pass's taps itself, from the forward op's sizes.
	passes := layout.UpsamplePasses[float64](filter, x.Shape[2:], a.Size, a.InputSize, a.Scales, a.AlignCorners, a.Exact, backward)
	if len(passes) == 0 {
		return copyInto(dev, viewOf(out), src)
	}
	cur := append([]int{x.Shape[0] * x.Shape[1]}, x.Shape[2:]...)
	ptr := src.ptr
	fn := "interp_" + suffix(dt)
	if backward {
		fn = "interp_backward_" + suffix(dt)
	}
	for p, ps := range passes {
		d, fwdIn := ps.Dim, ps.From
		if backward {
			fwdIn = ps.To
		}
		outer, inner := dispatch.Numel(cur[:d+1]), dispatch.Numel(cur[d+2:])
		cur[d+1] = ps.To
		total := dispatch.Numel(cur)
		next := addressOf(out)
		if p < len(passes)-1 {
			tmp, free, err := borrow(dev, max(total*dt.Size(), 1))
			if err != nil {
				return err
			}
			defer free()
			next = tmp
		}
		scale := 0.0
		if a.Scales != nil {
			scale = a.Scales[d]
		}
		g, b := grid1(total)
		if err := enqueue(dev, "interp", fn, g, b, 0, next, ptr, int64(total), int64(outer), int64(inner),
			int64(fwdIn), int64(a.Size[d]), int32(filter), scale, boolArg(a.AlignCorners), boolArg(a.Exact)); err != nil {
			return err
		}
		ptr = next
	}
	return nil
}

func boolArg(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
