package autodiff

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
)

// Gradient rules of convolution and unfold/fold.
//
// PyTorch's derivatives.yaml gives "convolution": input, weight, bias:
// convolution_backward(grad, input, weight, ...), and for
// "convolution_backward" itself: grad_output, input, weight:
// _convolution_double_backward(...), which works the second derivatives
// out from bilinearity. lathe splits convolution_backward into its two
// halves, so each op here is bilinear, y = conv(x, w) with
//
//	⟨G, conv(x, w)⟩ = ⟨conv_input_backward(G, w), x⟩ = ⟨conv_weight_backward(x, G), w⟩
//
// and every gradient is one of the three ops with its arguments moved
// about. With h the incoming gradient of each op's output:
//
//	conv(x, w):                 x ← conv_input_backward(h, w), w ← conv_weight_backward(x, h)
//	conv_input_backward(g, w):  g ← conv(h, w),                w ← conv_weight_backward(h, g)
//	conv_weight_backward(x, g): x ← conv_input_backward(g, h), g ← conv(x, h)
//
// These are the terms of _convolution_double_backward (ggI·W, gO·ggW, ...),
// one per rule. unfold and fold are linear and each other's adjoint
// (derivatives.yaml "im2col": col2im(grad, ...); "col2im": im2col(grad, ...)).

func init() {
	rule("conv", func(b *builder, n *Node, g *T) []*T {
		x, w := n.Inputs[0], n.Inputs[1]
		a := n.Attrs.(dispatch.Conv)
		var gx, gw *T
		if x.RequiresGrad {
			gx = b.call("conv_input_backward", withInputSize(a, x), g, w)
		}
		if w.RequiresGrad {
			gw = b.call("conv_weight_backward", withKernel(a, w), x, g)
		}
		return []*T{gx, gw}
	})
	rule("conv_input_backward", func(b *builder, n *Node, h *T) []*T {
		g, w := n.Inputs[0], n.Inputs[1]
		a := n.Attrs.(dispatch.Conv)
		var gg, gw *T
		if g.RequiresGrad {
			gg = b.call("conv", a, h, w)
		}
		if w.RequiresGrad {
			gw = b.call("conv_weight_backward", withKernel(a, w), h, g)
		}
		return []*T{gg, gw}
	})
	rule("conv_weight_backward", func(b *builder, n *Node, h *T) []*T {
		x, g := n.Inputs[0], n.Inputs[1]
		a := n.Attrs.(dispatch.Conv)
		var gx, gg *T
		if x.RequiresGrad {
			gx = b.call("conv_input_backward", withInputSize(a, x), g, h)
		}
		if g.RequiresGrad {
			gg = b.call("conv", a, x, h)
		}
		return []*T{gx, gg}
	})
	rule("unfold", func(b *builder, n *Node, g *T) []*T {
		a := n.Attrs.(dispatch.Unfold)
		a.OutputSize = slices.Clone(n.Inputs[0].Shape[2:])
		return []*T{b.call("fold", a, g)}
	})
	rule("fold", func(b *builder, n *Node, g *T) []*T {
		return []*T{b.call("unfold", n.Attrs, g)}
	})
}

// withInputSize is a with x's spatial size, for conv_input_backward.
func withInputSize(a dispatch.Conv, x *T) dispatch.Conv {
	a.InputSize = slices.Clone(x.Shape[2:])
	return a
}

// withKernel is a with w's kernel size, for conv_weight_backward.
func withKernel(a dispatch.Conv, w *T) dispatch.Conv {
	a.Window = dispatch.ConvWindow(a, w.Shape)
	return a
}
