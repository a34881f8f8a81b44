package autodiff

import "github.com/lathe-ml/lathe/dispatch"

// Gradient rules of interpolation. Each upsample op is linear in its input,
// so its vector-Jacobian product is a linear map too, and PyTorch makes it
// an op of its own (derivatives.yaml, upsample_bilinear2d: self:
// upsample_bilinear2d_backward(grad, output_size, self.sizes(), ...)); the
// backward op is linear in the incoming gradient, and its own gradient is
// the forward op again (upsample_bilinear2d_backward: grad_output:
// upsample_bilinear2d(grad, output_size, ...)). Both are recorded, so
// CreateGraph gives second derivatives through interpolation.

func init() {
	for _, name := range []string{"upsample_nearest", "upsample_linear", "upsample_bicubic"} {
		rule(name, func(b *builder, n *Node, g *T) []*T {
			a, _ := n.Attrs.(dispatch.Interp)
			a.InputSize = append([]int{}, n.Inputs[0].Shape[2:]...)
			return one(b.call(name+"_backward", a, g))
		})
		rule(name+"_backward", func(b *builder, n *Node, g *T) []*T {
			a, _ := n.Attrs.(dispatch.Interp)
			a.InputSize = nil
			return one(b.call(name, a, g))
		})
	}
}
