package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Interpolation (kernels/cuda/interp.cu): one separable pass per spatial
// dim, as on the cpu (backends/cpu/interp.go), forward from the first dim
// to the last and backward from the last to the first (the transpose of a
// product reverses it), through scratch memory between passes. A pass
// whose filter copies is skipped as the cpu skips it (layout.UpsamplePasses).

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
	// Each pass maps sizes from -> to along its dim; fwdIn is the forward
	// op's input size, which the kernel computes the taps from. The passes
	// are the cpu's and wgpu's (layout.UpsamplePasses), which skip a dim
	// whose filter copies (linear, or nearest, between equal sizes).
	from, fwdIn := x.Shape[2:], x.Shape[2:]
	if backward {
		from, fwdIn = a.Size, a.InputSize
	}
	passes := layout.UpsamplePasses[float64](filter, x.Shape[2:], a.Size, a.InputSize, a.Scales, a.AlignCorners, a.Exact, backward)
	if len(passes) == 0 {
		return copyInto(dev, viewOf(out), src)
	}
	cur := append([]int{x.Shape[0] * x.Shape[1]}, from...)
	ptr := src.ptr
	fn := "interp_" + suffix(dt)
	if backward {
		fn = "interp_backward_" + suffix(dt)
	}
	for p, pass := range passes {
		d := pass.Dim
		outer, inner := dispatch.Numel(cur[:d+1]), dispatch.Numel(cur[d+2:])
		cur[d+1] = pass.To
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
			int64(fwdIn[d]), int64(a.Size[d]), int32(filter), scale, boolArg(a.AlignCorners), boolArg(a.Exact)); err != nil {
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
