package wgpu

import "github.com/lathe-ml/lathe/dispatch"

// softmax and log_softmax (softmax.wgsl): one workgroup per line along the
// dim, reading the strided input where it lies.

func init() {
	for _, name := range []string{"softmax", "log_softmax"} {
		register(name, softmaxKernel(name))
	}
}

func softmaxKernel(op string) dispatch.Kernel {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
		x := in[0]
		sc, _ := attrs.(dispatch.Scan)
		dim, err := dispatch.NormDim(sc.Dim, x.Rank(), "dim")
		if err != nil {
			return err
		}
		if x.DType != dispatch.Float32 {
			return dispatch.Unsupported(out.Device, op, x.DType)
		}
		if out.Numel() == 0 {
			return nil
		}
		p, lines, err := lineParams(op, out, x, dim)
		if err != nil {
			return err
		}
		log := op == "log_softmax"
		sh, err := shaderFor(op, "softmax", struct{ Log bool }{log})
		if err != nil {
			return err
		}
		return launch(op, sh, grid(lines*workgroup), p, out, x)
	}
}
