package autodiff

import "github.com/lathe-ml/lathe/dispatch/ops"

// Gradient rule of matmul. PyTorch's torch.matmul is a composite
// (aten/src/ATen/native/LinearAlgebra.cpp: matmul reshapes to mm/bmm and
// autograd differentiates those: derivatives.yaml "mm": self = grad·otherᵀ,
// mat2 = selfᵀ·grad). lathe's matmul is one op, so its rule does the
// composite's bookkeeping itself: promote 1-D arguments to matrices as
// torch.matmul does, give the output's gradient the promoted shape, take the
// two matrix products, and sum the broadcast batch dims back (sum_to).

func init() {
	rule(ops.MatMul, func(b *builder, n *Node, g *T) []*T {
		return matmulGrads(b, n, g, func(x, y *T) *T { return b.op(ops.MatMul, x, y) })
	})
	// The wide product's gradients are 16-bit, as its arguments: each a
	// wide product of g, rounded first to the arguments' dtype, rounded
	// once. g is exact in it where the wide product fed a 16-bit result
	// (Linear under autocast, the one use), so that the gradients are
	// those of the float32 product of the widened arguments, as a torch
	// 16-bit product's are of its 16-bit gradient.
	rule(ops.MatMulWide, func(b *builder, n *Node, g *T) []*T {
		dt := n.Inputs[0].DType
		cast := func(t *T) *T { return call(b, ops.Cast, ops.CastTo{DType: dt}, t) }
		return matmulGrads(b, n, cast(g), func(x, y *T) *T { return cast(b.op(ops.MatMulWide, x, y)) })
	})
}

// matmulGrads is the gradients of n, a matrix product (matmul, or the
// wide one) of n.Inputs with output gradient g, whose own products are
// product's.
func matmulGrads(b *builder, n *Node, g *T, product func(x, y *T) *T) []*T {
	x, y := n.Inputs[0], n.Inputs[1]
	x2, y2 := x, y
	if x.Rank() == 1 {
		x2 = call(b, ops.Unsqueeze, ops.UnsqueezeDim{Dim: 0}, x) // [k] -> [1, k]
	}
	if y.Rank() == 1 {
		y2 = call(b, ops.Unsqueeze, ops.UnsqueezeDim{Dim: 1}, y) // [k] -> [k, 1]
	}
	// The output dropped the size-1 dims that promotion added; put them
	// back: m last, then n before it.
	g2 := g
	if y.Rank() == 1 {
		g2 = call(b, ops.Unsqueeze, ops.UnsqueezeDim{Dim: -1}, g2)
	}
	if x.Rank() == 1 {
		g2 = call(b, ops.Unsqueeze, ops.UnsqueezeDim{Dim: -2}, g2)
	}
	// A gradient is made in its argument's layout: for a transposed
	// view (a Linear layer's W.MT()) as the transpose of a row-major
	// product, so that once the transpose's own rule turns it back it is
	// row-major like W, and storing it copies nothing (PyTorch's
	// mm_mat2_backward chooses the same way).
	var gx, gy *T
	if x.RequiresGrad.Load() {
		if columnMajor(x2) {
			gx = b.mT(product(y2, b.mT(g2)))
		} else {
			gx = product(g2, b.mT(y2))
		}
		gx = b.undoPromote(gx, x2, x)
	}
	if y.RequiresGrad.Load() {
		xr, gr := x2, g2
		if y2.Rank() == 2 && x2.Rank() > 2 {
			// One matrix shared by a batch (a Linear layer's weight
			// on [batch, seq, in]): its gradient is one product over
			// all the batch's rows, xᵀ·g with x as [rows, k] and g as
			// [rows, m], as torch.matmul folds it, not a product per
			// batch index and then their sum.
			xr, gr = b.rowsOf(x2), b.rowsOf(g2)
		}
		if columnMajor(y2) {
			gy = b.mT(product(b.mT(gr), xr))
		} else {
			gy = product(b.mT(xr), gr)
		}
		gy = b.undoPromote(gy, y2, y)
	}
	return []*T{gx, gy}
}

// rowsOf is t [..., r, c] as the matrix [(...)·r, c] (a copy only where
// its layout cannot be reshaped).
func (b *builder) rowsOf(t *T) *T {
	r := t.Rank()
	rows := 1
	for _, d := range t.Shape[:r-1] {
		rows *= d
	}
	return call(b, ops.Reshape, ops.ViewShape{Shape: []int{rows, t.Shape[r-1]}}, t)
}

// columnMajor reports whether t's last two dims are laid out transposed:
// the rows are adjacent in memory and the columns are not.
func columnMajor(t *T) bool {
	r := t.Rank()
	return r >= 2 && t.Shape[r-1] > 1 && t.Shape[r-2] > 1 && t.Strides[r-2] == 1 && t.Strides[r-1] != 1
}

// mT swaps the last two dims.
func (b *builder) mT(t *T) *T {
	return call(b, ops.Transpose, ops.TransposeDims{Dim0: -2, Dim1: -1}, t)
}

// undoPromote sums a gradient of the promoted, batch-broadcast shape back
// to the promoted argument's shape, then to the argument's own.
func (b *builder) undoPromote(g, promoted, arg *T) *T {
	if b.err != nil {
		return nil
	}
	g = b.sumTo(g, promoted.Shape)
	if arg.Rank() == 1 {
		g = call(b, ops.Reshape, ops.ViewShape{Shape: append([]int{}, arg.Shape...)}, g)
	}
	return g
}
