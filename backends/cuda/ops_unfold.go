package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// unfold (im2col) and fold (col2im), kernels/cuda/unfold.cu. With the
// tiled matmul kernel they are convolution's building blocks (ops_conv.go).

func init() {
	kernel(ops.Unfold, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.UnfoldParams) error {
		x := in[0]
		g, err := poolGeom(x.Shape[2:], a.Window.OutShape(x.Shape[2:]), &a.Window, false, 0)
		if err != nil {
			return named("unfold", err)
		}
		return named("unfold", poolKernel(out, x, "unfold", "unfold", g))
	})
	kernel(ops.Fold, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.UnfoldParams) error {
		g, err := poolGeom(a.OutputSize, a.Window.OutShape(a.OutputSize), &a.Window, false, 0)
		if err != nil {
			return named("fold", err)
		}
		return named("fold", poolKernel(out, in[0], "unfold", "fold", g))
	})
}
