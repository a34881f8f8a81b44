package autodiff

import "github.com/lathe-ml/lathe/dispatch/ops"

// Gradient rules of interpolation. Each upsample op is linear in its input,
// so its vector-Jacobian product is a linear map too, and PyTorch makes it
// an op of its own (derivatives.yaml, upsample_bilinear2d: self:
// upsample_bilinear2d_backward(grad, output_size, self.sizes(), ...)); the
// backward op is linear in the incoming gradient, and its own gradient is
// the forward op again (upsample_bilinear2d_backward: grad_output:
// upsample_bilinear2d(grad, output_size, ...)). Both are recorded, so
// CreateGraph gives second derivatives through interpolation.

func init() {
	for _, u := range ops.Upsamples {
		ruleWith(u.Forward, func(b *builder, n *Node, a ops.Interp, g *T) []*T {
			a.InputSize = append([]int{}, n.Inputs[0].Shape[2:]...)
			return one(call(b, u.Backward, a, g))
		})
		ruleWith(u.Backward, func(b *builder, n *Node, a ops.Interp, g *T) []*T {
			a.InputSize = nil
			return one(call(b, u.Forward, a, g))
		})
	}
}
