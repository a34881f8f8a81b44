package wgpu

import "github.com/lathe-ml/lathe/dispatch"

// Convolution, its two backward passes, unfold and fold (conv.wgsl): one
// direct kernel per op over a window of up to three spatial dims, each a
// gather, so that no two invocations write one place and no float atomics
// are needed. conv sums over its group's input channels and the kernel
// window; conv_input_backward (the transposed convolution) and fold sum
// over the window positions that read an input place; conv_weight_backward
// gives each weight element a workgroup that sums over the batch and the
// window positions.
func init() {
	for _, op := range []string{"conv", "conv_input_backward", "conv_weight_backward"} {
		register(op, convKernel(op))
	}
	register("unfold", convKernel("unfold"))
	register("fold", convKernel("fold"))
}

// spatialDims is the number of spatial dims the kernels of this family
// take; fewer are padded to it with leading dims of size 1.
const spatialDims = 3

func convKernel(op string) dispatch.Kernel {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
		if out.DType != dispatch.Float32 {
			return dispatch.Unsupported(out.Device, op, out.DType)
		}
		n := out.Numel()
		if n == 0 {
			return nil
		}
		var (
			win            dispatch.Window
			groups         = 1
			image, windows []int // spatial sizes of the image and of the window positions
			nb, c, o       int
		)
		switch op {
		case "conv":
			a := attrs.(dispatch.Conv)
			x, w := in[0], in[1]
			win, groups = dispatch.ConvWindow(a, w.Shape), a.Groups
			image, windows = x.Shape[2:], out.Shape[2:]
			nb, c, o = x.Shape[0], x.Shape[1], w.Shape[0]
		case "conv_input_backward":
			a := attrs.(dispatch.Conv)
			g, w := in[0], in[1]
			win, groups = dispatch.ConvWindow(a, w.Shape), a.Groups
			image, windows = out.Shape[2:], g.Shape[2:]
			nb, c, o = g.Shape[0], out.Shape[1], w.Shape[0]
		case "conv_weight_backward":
			a := attrs.(dispatch.Conv)
			x, g := in[0], in[1]
			win, groups = a.Window, a.Groups
			image, windows = x.Shape[2:], g.Shape[2:]
			nb, c, o = x.Shape[0], x.Shape[1], g.Shape[1]
		case "unfold":
			win = attrs.(dispatch.Unfold).Window
			x := in[0]
			image, windows = x.Shape[2:], win.OutShape(x.Shape[2:])
			nb, c = x.Shape[0], x.Shape[1]
		case "fold":
			a := attrs.(dispatch.Unfold)
			win = a.Window
			image, windows = a.OutputSize, win.OutShape(a.OutputSize)
			nb, c = out.Shape[0], out.Shape[1]
		}
		params := make([]uint32, 35)
		params[0] = uint32(n)
		params[1], params[2], params[3], params[4] = uint32(nb), uint32(c), uint32(o), uint32(groups)
		lead := spatialDims - len(image)
		for d := range spatialDims {
			size, pos, k, s, pad, dil := 1, 1, 1, 1, 0, 1
			if j := d - lead; j >= 0 {
				size, pos, k = image[j], windows[j], win.Kernel[j]
				s, pad, dil = win.Stride[j], win.Padding[j], win.Dilation[j]
			}
			for f, v := range []int{size, pos, k, s, pad, dil} {
				params[5+3*f+d] = uint32(v)
			}
		}
		for k, t := range in {
			base := 23 + 6*k
			params[base] = uint32(int32(t.Offset))
			copy(params[base+1:base+6], windowStrides(t, op == "fold"))
		}
		sh, err := shaderFor("conv/"+op, "conv", struct{ Op string }{op})
		if err != nil {
			return err
		}
		groupsGrid := grid(n)
		if op == "conv_weight_backward" {
			groupsGrid = grid(n * workgroup) // a workgroup per element
		}
		return launch(op, sh, groupsGrid, params, append([]*dispatch.Tensor{out}, in...)...)
	}
}

// windowStrides are the five stride words of an (N, C, d1, ..., dk)
// argument with its spatial dims padded to three at the front (stride 0
// for the padding dims). With flat set the tensor's own strides are given
// as they are (fold's (N, C·K, L) columns).
func windowStrides(t *dispatch.Tensor, flat bool) []uint32 {
	st := make([]uint32, 5)
	if flat {
		for d, s := range t.Strides {
			st[d] = uint32(int32(s))
		}
		return st
	}
	st[0], st[1] = uint32(int32(t.Strides[0])), uint32(int32(t.Strides[1]))
	lead := spatialDims - (t.Rank() - 2)
	for d, s := range t.Strides[2:] {
		st[2+lead+d] = uint32(int32(s))
	}
	return st
}
