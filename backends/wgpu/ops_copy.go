package wgpu

import "github.com/lathe-ml/lathe/dispatch"

// contiguous and cast are one kernel family (copy.wgsl): a strided read,
// a conversion, a contiguous write.
func init() {
	register("contiguous", copyKernel("contiguous"))
	register("cast", copyKernel("cast"))
}

func copyKernel(op string) dispatch.Kernel {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, _ any) error {
		return copyInto(op, out, in[0])
	}
}

// copyInto writes x, converted to out's dtype, into the contiguous out.
// The conversions are PyTorch's: float to int truncates toward zero,
// nonzero is true, true is 1.
func copyInto(op string, out, x *dispatch.Tensor) error {
	to, ok1 := wgslType(out.DType)
	from, ok2 := wgslType(x.DType)
	if !ok1 || !ok2 {
		return dispatch.Unsupported(out.Device, op, x.DType)
	}
	conv := "x"
	switch {
	case out.DType == x.DType:
	case out.DType == dispatch.Bool && x.DType == dispatch.Float32:
		// On the bits: shader compilers may take x != 0.0 to be false
		// for NaN (lavapipe does), and NaN is true.
		conv = "select(0u, 1u, (bitcast<u32>(x) & 0x7fffffffu) != 0u)"
	case out.DType == dispatch.Bool:
		conv = "select(0u, 1u, x != 0)"
	default:
		conv = to + "(x)"
	}
	sh, err := shaderFor("copy/"+from+"->"+to, "copy", struct{ Out, In, Conv string }{to, from, conv})
	if err != nil {
		return err
	}
	return launchStrided(op, sh, out, x)
}

// launchStrided runs an elementwise shader with one item per element of
// the contiguous out and the strided layout of the inputs.
func launchStrided(op string, sh *shader, out *dispatch.Tensor, in ...*dispatch.Tensor) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	params, err := stridedParams(op, out, in...)
	if err != nil {
		return err
	}
	return launch(op, sh, grid(n), params, append([]*dispatch.Tensor{out}, in...)...)
}
