package cuda

import "github.com/lathe-ml/lathe/dispatch"

// unfold (im2col) and fold (col2im), kernels/cuda/unfold.cu. With the
// host's matmul they are convolution's building blocks; conv and its
// backward ops themselves are owed (see ops_test.go's owed).

func init() {
	kernel("unfold", func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
		a := attrs.(dispatch.Unfold)
		x := in[0]
		g, err := poolGeom(x.Shape[2:], a.Window.OutShape(x.Shape[2:]), &a.Window, false, 0)
		if err != nil {
			return named("unfold", err)
		}
		return named("unfold", poolKernel(out, x, "unfold", "unfold", g))
	})
	kernel("fold", func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
		a := attrs.(dispatch.Unfold)
		g, err := poolGeom(a.OutputSize, a.Window.OutShape(a.OutputSize), &a.Window, false, 0)
		if err != nil {
			return named("fold", err)
		}
		return named("fold", poolKernel(out, in[0], "unfold", "fold", g))
	})
}
