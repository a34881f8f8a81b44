package autodiff

import "github.com/lathe-ml/lathe/dispatch/ops"

// Gradient rules of the indexing ops. What gather and index_select read,
// their backward adds back with scatter_add into zeros, so a repeated index
// collects every gradient that reached it; scatter_add's own rule is a
// gather, so gradients of gradients follow. Index arguments get none.

// zerosShape is a zero tensor of like's dtype and device and the given shape.
func (b *builder) zerosShape(like *T, shape []int) *T {
	if b.err != nil {
		return nil
	}
	z, err := fullLikeShape(like, 0, append([]int{}, shape...))
	if b.err = err; err == nil {
		b.made = append(b.made, z) // released with the rule's other temporaries, as zerosLike's
	}
	return z
}

// padTo pads t with zeros at the end of each dim up to shape (which is at
// least t's shape in every dim).
func (b *builder) padTo(t *T, shape []int) *T {
	if b.err != nil {
		return nil
	}
	r := t.Rank()
	pads := make([]int, 2*r)
	grow := false
	for d := range r {
		pads[2*(r-1-d)+1] = shape[d] - t.Shape[d]
		grow = grow || shape[d] != t.Shape[d]
	}
	if !grow {
		return t
	}
	return call(b, ops.Pad, ops.Padding{Pads: pads}, t)
}

// srcGrad is the gradient of scatter's and scatter_add's src: the gathered
// gradient (derivatives.yaml "scatter.src" and "scatter_add": src =
// grad.gather(dim, index)), padded with zeros where src is larger than
// index, since those elements are never read. PyTorch 1.13 fails there
// ("returned an invalid gradient"); lathe gives the zeros.
func (b *builder) srcGrad(n *Node, a ops.IndexDim, g *T) *T {
	index, src := n.Inputs[1], n.Inputs[2]
	if !src.RequiresGrad.Load() {
		return nil
	}
	return b.padTo(call(b, ops.Gather, a, g, index), src.Shape)
}

func init() {
	// index_select: derivatives.yaml "index_select": index_select_backward,
	// zeros.index_add_(dim, index, grad), here a scatter_add with the index
	// laid along dim and expanded over the other dims.
	ruleWith(ops.IndexSelect, func(b *builder, n *Node, a ops.IndexDim, g *T) []*T {
		x, index := n.Inputs[0], n.Inputs[1]
		if x.Rank() == 0 {
			return []*T{g, nil} // a 0-d x gives itself (the index can only be 0)
		}
		d := a.Of(x)
		lay := make([]int, x.Rank())
		for i := range lay {
			lay[i] = 1
		}
		lay[d] = index.Numel()
		idx := call(b, ops.Expand, ops.ViewShape{Shape: append([]int{}, g.Shape...)}, b.reshapeTo(index, lay))
		return []*T{call(b, ops.ScatterAdd, ops.IndexDim{Dim: d}, b.zerosLike(x), idx, g), nil}
	})

	// gather: derivatives.yaml "gather": gather_backward,
	// zeros.scatter_add(dim, index, grad).
	ruleWith(ops.Gather, func(b *builder, n *Node, a ops.IndexDim, g *T) []*T {
		x, index := n.Inputs[0], n.Inputs[1]
		return []*T{call(b, ops.ScatterAdd, a, b.zerosLike(x), index, g), nil}
	})

	// scatter: derivatives.yaml "scatter.src": self = grad.scatter(dim,
	// index, 0), the overwritten places get none.
	ruleWith(ops.Scatter, func(b *builder, n *Node, a ops.IndexDim, g *T) []*T {
		x, index := n.Inputs[0], n.Inputs[1]
		var gx *T
		if x.RequiresGrad.Load() {
			gx = call(b, ops.Scatter, a, g, index, b.zerosShape(g, index.Shape))
		}
		return []*T{gx, nil, b.srcGrad(n, a, g)}
	})

	// scatter_add: derivatives.yaml "scatter_add": self = grad.
	ruleWith(ops.ScatterAdd, func(b *builder, n *Node, a ops.IndexDim, g *T) []*T {
		return []*T{g, nil, b.srcGrad(n, a, g)}
	})
}
