package autodiff

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch/ops"
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
	ruleWith(ops.Conv, func(b *builder, n *Node, a ops.ConvParams, g *T) []*T {
		x, w := n.Inputs[0], n.Inputs[1]
		var gx, gw *T
		if x.RequiresGrad.Load() {
			gx = call(b, ops.ConvInputBackward, withInputSize(a, x), g, w)
		}
		if w.RequiresGrad.Load() {
			gw = call(b, ops.ConvWeightBackward, withKernel(a, w), x, g)
		}
		return []*T{gx, gw}
	})
	ruleWith(ops.ConvInputBackward, func(b *builder, n *Node, a ops.ConvParams, h *T) []*T {
		g, w := n.Inputs[0], n.Inputs[1]
		var gg, gw *T
		if g.RequiresGrad.Load() {
			gg = call(b, ops.Conv, a, h, w)
		}
		if w.RequiresGrad.Load() {
			gw = call(b, ops.ConvWeightBackward, withKernel(a, w), h, g)
		}
		return []*T{gg, gw}
	})
	ruleWith(ops.ConvWeightBackward, func(b *builder, n *Node, a ops.ConvParams, h *T) []*T {
		x, g := n.Inputs[0], n.Inputs[1]
		var gx, gg *T
		if x.RequiresGrad.Load() {
			gx = call(b, ops.ConvInputBackward, withInputSize(a, x), g, h)
		}
		if g.RequiresGrad.Load() {
			gg = call(b, ops.Conv, a, x, h)
		}
		return []*T{gx, gg}
	})
	ruleWith(ops.Unfold, func(b *builder, n *Node, a ops.UnfoldParams, g *T) []*T {
		a.OutputSize = slices.Clone(n.Inputs[0].Shape[2:])
		return []*T{call(b, ops.Fold, a, g)}
	})
	ruleWith(ops.Fold, func(b *builder, n *Node, a ops.UnfoldParams, g *T) []*T {
		return []*T{call(b, ops.Unfold, a, g)}
	})
}

// withInputSize is a with x's spatial size, for conv_input_backward.
func withInputSize(a ops.ConvParams, x *T) ops.ConvParams {
	a.InputSize = slices.Clone(x.Shape[2:])
	return a
}

// withKernel is a with w's kernel size, for conv_weight_backward.
func withKernel(a ops.ConvParams, w *T) ops.ConvParams {
	a.Window = a.WindowFor(w.Shape)
	return a
}
