package autodiff

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Gradient rules of pooling (dispatch/ops/pool.go). Each backward pass is an
// op of its own, and each of those has a rule too, so that CreateGraph
// gives second derivatives: the backward ops are linear in the incoming
// gradient, and their gradient with respect to it is the forward op again
// (derivatives.yaml: avg_pool2d_backward's grad_output is avg_pool2d(grad),
// adaptive_avg_pool2d_backward's is _adaptive_avg_pool2d(grad),
// max_pool2d_with_indices_backward's is max_pool_double_backward, a gather
// at the indices). Indices get no gradient.

func init() {
	// derivatives.yaml "avg_pool2d": self = avg_pool2d_backward(grad, ...).
	ruleWith(ops.AvgPool, func(b *builder, n *Node, a ops.AvgPoolParams, g *T) []*T {
		in := slices.Clone(n.Inputs[0].Shape[2:])
		return []*T{call(b, ops.AvgPoolBackward, ops.AvgPoolBackwardParams{AvgPoolParams: a, InSize: in}, g)}
	})
	ruleWith(ops.AvgPoolBackward, func(b *builder, n *Node, a ops.AvgPoolBackwardParams, g *T) []*T {
		return []*T{call(b, ops.AvgPool, a.AvgPoolParams, g)}
	})

	// derivatives.yaml "_adaptive_avg_pool2d": self =
	// _adaptive_avg_pool2d_backward(grad, self).
	rule(ops.AdaptiveAvgPool, func(b *builder, n *Node, g *T) []*T {
		in := slices.Clone(n.Inputs[0].Shape[2:])
		return []*T{call(b, ops.AdaptiveAvgPoolBackward, ops.AdaptivePoolBackward{InSize: in}, g)}
	})
	rule(ops.AdaptiveAvgPoolBackward, func(b *builder, n *Node, g *T) []*T {
		out := slices.Clone(n.Inputs[0].Shape[2:])
		return []*T{call(b, ops.AdaptiveAvgPool, ops.AdaptivePool{Size: out}, g)}
	})

	// pool_gather reads the values of max pooling (and adaptive max
	// pooling) at their indices; derivatives.yaml "max_pool2d_with_indices":
	// self = max_pool2d_with_indices_backward(grad, self, ..., indices), the
	// incoming gradient added at the indices.
	rule(ops.PoolGather, func(b *builder, n *Node, g *T) []*T {
		x, idx := n.Inputs[0], n.Inputs[1]
		return []*T{call(b, ops.MaxPoolBackward, ops.PoolScatter{Size: slices.Clone(x.Shape[2:])}, g, idx), nil}
	})
	// derivatives.yaml "max_pool2d_with_indices_backward": grad_output =
	// max_pool_double_backward(grad, indices, 2), a gather at the indices.
	rule(ops.MaxPoolBackward, func(b *builder, n *Node, g *T) []*T {
		return []*T{b.op(ops.PoolGather, g, n.Inputs[1]), nil}
	})
	// derivatives.yaml "max_unpool2d": self = max_pool_double_backward(grad,
	// indices, 2): what was written at each index is read back there.
	rule(ops.MaxUnpool, func(b *builder, n *Node, g *T) []*T {
		return []*T{b.op(ops.PoolGather, g, n.Inputs[1]), nil}
	})
}
