package autodiff

import "github.com/lathe-ml/lathe/dispatch/ops"

// Gradient rules of the view ops and of the copy ops flip, concat and pad.
// Each undoes the layout change on the gradient (derivatives.yaml entries
// named per rule); a cropped or strided selection puts its gradient back
// into zeros with pad, so that the rule stays differentiable.

// reshapeTo is g reshaped to shape (a copy only if g's strides need one).
func (b *builder) reshapeTo(g *T, shape []int) *T {
	return call(b, ops.Reshape, ops.ViewShape{Shape: append([]int{}, shape...)}, g)
}

// padDim pads (or, negative, crops) dim d of t by left and right zeros.
func (b *builder) padDim(t *T, d, left, right int) *T {
	if b.err != nil || (left == 0 && right == 0) {
		return t
	}
	r := t.Rank()
	pads := make([]int, 2*(r-d))
	pads[2*(r-1-d)], pads[2*(r-1-d)+1] = left, right
	return call(b, ops.Pad, ops.Padding{Pads: pads}, t)
}

// normDim is dim d of t normalised; an error sticks.
func (b *builder) normDim(d, rank int) int {
	if b.err != nil {
		return 0
	}
	nd, err := ops.NormDim(d, rank, "dim")
	if err != nil {
		b.err = err
	}
	return nd
}

func init() {
	// view, squeeze and unsqueeze only rename sizes: the gradient is
	// reshaped back (derivatives.yaml "view": grad.reshape(self.sizes());
	// "squeeze.dim": unsqueeze_to; "unsqueeze": grad.squeeze(dim)).
	reshapeBack := func(b *builder, n *Node, g *T) []*T { return one(b.reshapeTo(g, n.Inputs[0].Shape)) }
	rule(ops.View, reshapeBack)
	rule(ops.Squeeze, reshapeBack)
	rule(ops.Unsqueeze, reshapeBack)

	// permute: the inverse permutation (derivatives.yaml "permute":
	// permute_backwards).
	ruleWith(ops.Permute, func(b *builder, n *Node, a ops.PermuteDims, g *T) []*T {
		dims := a.Dims
		rank := n.Inputs[0].Rank()
		inv := make([]int, len(dims))
		for i, d := range dims {
			inv[b.normDim(d, rank)] = i
		}
		return one(call(b, ops.Permute, ops.PermuteDims{Dims: inv}, g))
	})

	// transpose is its own inverse (derivatives.yaml "transpose.int").
	ruleWith(ops.Transpose, func(b *builder, n *Node, a ops.TransposeDims, g *T) []*T {
		return one(call(b, ops.Transpose, a, g))
	})

	// expand: sum over the expanded dims (derivatives.yaml "expand":
	// at::sum_to(grad, self.sizes())).
	rule(ops.Expand, func(b *builder, n *Node, g *T) []*T { return one(b.sumTo(g, n.Inputs[0].Shape)) })
	rule(ops.Piecewise, func(b *builder, n *Node, g *T) []*T { return one(b.flatIn(g, n.Inputs[0])) })

	// narrow and slice: the gradient in zeros elsewhere (derivatives.yaml
	// "slice.Tensor": slice_backward).
	ruleWith(ops.Narrow, func(b *builder, n *Node, a ops.NarrowRange, g *T) []*T {
		x := n.Inputs[0]
		d := b.normDim(a.Dim, x.Rank())
		start := a.Start
		if start < 0 {
			start += x.Shape[d]
		}
		return one(b.padDim(g, d, start, x.Shape[d]-start-a.Length))
	})
	ruleWith(ops.Slice, func(b *builder, n *Node, a ops.SliceRange, g *T) []*T {
		x := n.Inputs[0]
		d := b.normDim(a.Dim, x.Rank())
		if b.err != nil {
			return nil
		}
		size := x.Shape[d]
		clamp := func(i int) int { // Python's slice index rule, as sliceView
			if i < 0 {
				i += size
			}
			return min(max(i, 0), size)
		}
		start, count := clamp(a.Start), g.Shape[d]
		if count == 0 {
			return one(b.zerosLike(x))
		}
		if a.Step == 1 {
			return one(b.padDim(g, d, start, size-start-count))
		}
		// With a step s, element i goes to start + i·s: give each element
		// s-1 zeros after it (a new dim padded, then merged), which spans
		// count·s positions, then pad or crop that span into the dim.
		u := b.padDim(call(b, ops.Unsqueeze, ops.UnsqueezeDim{Dim: d + 1}, g), d+1, 0, a.Step-1)
		spread := append([]int{}, g.Shape...)
		spread[d] = count * a.Step
		return one(b.padDim(b.reshapeTo(u, spread), d, start, size-start-count*a.Step))
	})

	// diagonal: the gradient laid on the same diagonal of zeros
	// (derivatives.yaml "diagonal": diagonal_backward). Each element of g
	// gets n2 zeros after it, so that, flattened, the elements lie n2+1
	// apart, as a row-major [n1, n2] matrix's diagonal does; the run is
	// padded in front to the diagonal's first element and padded or
	// cropped (at most the last n2 zeros) to n1·n2, made a matrix, and its
	// two dims moved back where dim1 and dim2 were. Pad, reshape and
	// permute have rules, so this one is differentiable too.
	ruleWith(ops.Diagonal, func(b *builder, n *Node, a ops.DiagonalDims, g *T) []*T {
		x := n.Inputs[0]
		d1, d2 := b.normDim(a.Dim1, x.Rank()), b.normDim(a.Dim2, x.Rank())
		if b.err != nil {
			return nil
		}
		n1, n2, size := x.Shape[d1], x.Shape[d2], g.Shape[g.Rank()-1]
		if size == 0 {
			return one(b.zerosLike(x))
		}
		start := max(a.Offset, 0) + max(-a.Offset, 0)*n2
		last := g.Rank() - 1
		u := b.padDim(call(b, ops.Unsqueeze, ops.UnsqueezeDim{Dim: last + 1}, g), last+1, 0, n2)
		flat := append(append([]int{}, g.Shape[:last]...), size*(n2+1))
		u = b.padDim(b.reshapeTo(u, flat), last, start, n1*n2-start-size*(n2+1))
		m := append(append([]int{}, g.Shape[:last]...), n1, n2)
		u = b.reshapeTo(u, m)
		// u's dims are x's others in order, then dim1 and dim2.
		src := make([]int, 0, x.Rank())
		for i := range x.Rank() {
			if i != d1 && i != d2 {
				src = append(src, i)
			}
		}
		src = append(src, d1, d2)
		perm := make([]int, x.Rank())
		for i, d := range src {
			perm[d] = i
		}
		return one(call(b, ops.Permute, ops.PermuteDims{Dims: perm}, u))
	})

	// flip is its own inverse (derivatives.yaml "flip").
	ruleWith(ops.Flip, func(b *builder, n *Node, a ops.FlipDims, g *T) []*T { return one(call(b, ops.Flip, a, g)) })

	// concat: each input gets its stretch of the gradient (derivatives.yaml
	// "cat": cat_tensors_backward).
	ruleWith(ops.Concat, func(b *builder, n *Node, a ops.ConcatDim, g *T) []*T {
		d := a.Of(n.Inputs)
		out := make([]*T, len(n.Inputs))
		off := 0
		for i, t := range n.Inputs {
			size := t.Shape[d]
			if t.RequiresGrad.Load() {
				out[i] = call(b, ops.Narrow, ops.NarrowRange{Dim: d, Start: off, Length: size}, g)
			}
			off += size
		}
		return out
	})

	// pad: the same pads negated, which crops what was added and puts zeros
	// where it cropped (derivatives.yaml "constant_pad_nd":
	// constant_pad_nd_backward).
	ruleWith(ops.Pad, func(b *builder, n *Node, p ops.Padding, g *T) []*T {
		neg := make([]int, len(p.Pads))
		for i, v := range p.Pads {
			neg[i] = -v
		}
		return one(call(b, ops.Pad, ops.Padding{Pads: neg}, g))
	})
}
