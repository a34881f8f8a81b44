package autodiff

import (
	"github.com/lathe-ml/lathe/dispatch"
)

// Gradient rule of matmul. PyTorch's torch.matmul is a composite
// (aten/src/ATen/native/LinearAlgebra.cpp: matmul reshapes to mm/bmm and
// autograd differentiates those: derivatives.yaml "mm": self = grad·otherᵀ,
// mat2 = selfᵀ·grad). lathe's matmul is one op, so its rule does the
// composite's bookkeeping itself: promote 1-D arguments to matrices as
// torch.matmul does, give the output's gradient the promoted shape, take the
// two matrix products, and sum the broadcast batch dims back (sum_to).

func init() {
	rule("matmul", func(b *builder, n *Node, g *T) []*T {
		x, y := n.Inputs[0], n.Inputs[1]
		x2, y2 := x, y
		if x.Rank() == 1 {
			x2 = b.call("unsqueeze", dispatch.Unsqueeze{Dim: 0}, x) // [k] -> [1, k]
		}
		if y.Rank() == 1 {
			y2 = b.call("unsqueeze", dispatch.Unsqueeze{Dim: 1}, y) // [k] -> [k, 1]
		}
		// The output dropped the size-1 dims that promotion added; put them
		// back: m last, then n before it.
		g2 := g
		if y.Rank() == 1 {
			g2 = b.call("unsqueeze", dispatch.Unsqueeze{Dim: -1}, g2)
		}
		if x.Rank() == 1 {
			g2 = b.call("unsqueeze", dispatch.Unsqueeze{Dim: -2}, g2)
		}
		var gx, gy *T
		if x.RequiresGrad {
			gx = b.undoPromote(b.call("matmul", nil, g2, b.mT(y2)), x2, x)
		}
		if y.RequiresGrad {
			gy = b.undoPromote(b.call("matmul", nil, b.mT(x2), g2), y2, y)
		}
		return []*T{gx, gy}
	})
}

// mT swaps the last two dims.
func (b *builder) mT(t *T) *T { return b.call("transpose", dispatch.Transpose{Dim0: -2, Dim1: -1}, t) }

// undoPromote sums a gradient of the promoted, batch-broadcast shape back
// to the promoted argument's shape, then to the argument's own.
func (b *builder) undoPromote(g, promoted, arg *T) *T {
	if b.err != nil {
		return nil
	}
	g = b.sumTo(g, promoted.Shape)
	if arg.Rank() == 1 {
		g = b.call("reshape", dispatch.ViewShape{Shape: append([]int{}, arg.Shape...)}, g)
	}
	return g
}
