package autodiff

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Gradient rules of the reductions and of cumsum. Formulas follow PyTorch's
// tools/autograd/derivatives.yaml and the helpers it names in
// torch/csrc/autograd/FunctionsManual.cpp. Every rule first brings the
// output's gradient (and, where needed, the output) back to the input's
// rank with the reduced dims as size 1, so that it broadcasts against x.

// reduction is a reduce node's attributes resolved against its input.
type reduction struct {
	r    ops.Reduce
	dims []int // normalised, sorted reduced dims
	keep []int // x's shape with the reduced dims as 1
	n    int   // elements per reduced group
}

func (b *builder) reduction(n *Node, r ops.Reduce) reduction {
	x := n.Inputs[0]
	dims, keep, err := ops.ReduceShape(x, ops.Reduce{Dims: r.Dims, KeepDim: true})
	if err != nil && b.err == nil {
		b.err = err
	}
	count := 1
	for _, d := range dims {
		count *= x.Shape[d]
	}
	return reduction{r: r, dims: dims, keep: keep, n: count}
}

// attrs reduces the same dims keeping them (for sums inside a rule).
func (rd reduction) attrs() ops.Reduce { return ops.Reduce{Dims: rd.dims, KeepDim: true} }

// restore reshapes t, of the reduction's output shape, to the keep-dim
// shape (unsqueeze_multiple in FunctionsManual.cpp).
func (b *builder) restore(t *T, rd reduction) *T {
	return call(b, ops.Reshape, ops.ViewShape{Shape: append([]int{}, rd.keep...)}, t)
}

// where01 is 1 where c holds and 0 elsewhere, in like's dtype.
func (b *builder) where01(c, like *T) *T { return b.where(c, b.scalar(like, 1), b.scalar(like, 0)) }

func init() {
	// sum: grad.expand(self.sizes()) after restoring the reduced dims
	// (derivatives.yaml "sum.dim_IntList": sum_backward).
	ruleWith(ops.Sum, func(b *builder, n *Node, r ops.Reduce, g *T) []*T {
		x := n.Inputs[0]
		rd := b.reduction(n, r)
		return one(call(b, ops.Expand, ops.ViewShape{Shape: append([]int{}, x.Shape...)}, b.restore(g, rd)))
	})

	// prod: derivatives.yaml "prod.dim_int": prod_backward, which is
	// result/x where the group has no zero and otherwise the product of the
	// other elements (prod_safe_zeros_backward, a cumprod from each side).
	// lathe has no cumprod, so the zero cases are spelled out, with z the
	// count of zeros in the group, p the product of its nonzero elements and
	// s the sum of its zeros (0, but it carries their derivatives):
	//   at a nonzero x_i:       result / x_i
	//   at a zero, z = 1:       p
	//   at a zero, z = 2:       p·(s - x_i), i.e. p times the other zero
	//   at a zero, z ≥ 3:       0
	// Each branch has the value of the product of the other elements, and
	// each is written so that its own derivative is too, so second
	// derivatives are exact at zeros as well.
	ruleWith(ops.Prod, func(b *builder, n *Node, r ops.Reduce, g *T) []*T {
		x := n.Inputs[0]
		rd := b.reduction(n, r)
		zero := b.scalar(x, 0)
		isZero := b.cmpScalar(ops.Eq, x, 0)
		safe := b.where(isZero, b.scalar(x, 1), x)
		p := call(b, ops.Prod, rd.attrs(), safe)
		z := call(b, ops.Sum, rd.attrs(), b.where01(isZero, x))
		s := call(b, ops.Sum, rd.attrs(), b.where(isZero, x, zero))
		atZero := b.where(b.cmpScalar(ops.Eq, z, 1), p,
			b.where(b.cmpScalar(ops.Eq, z, 2), b.mul(p, b.sub(s, x)), zero))
		d := b.where(isZero, atZero, b.div(b.restore(n.Out, rd), safe))
		return one(b.mul(b.restore(g, rd), d))
	})

	// max and min give values only, so with dims they are torch.amax and
	// torch.amin (derivatives.yaml "amax": scale_grad_by_count(grad,
	// result == self, dim)): the gradient is split evenly over the elements
	// equal to the result, and a NaN result gives NaN to its whole group.
	// With no dims they are torch.max() and torch.min() (derivatives.yaml
	// "max": evenly_distribute_backward), which also split ties evenly but
	// send a NaN result's gradient to the NaN elements only.
	for _, op := range []*dispatch.Op[ops.Reduce]{ops.Max, ops.Min} {
		ruleWith(op, func(b *builder, n *Node, r ops.Reduce, g *T) []*T {
			x := n.Inputs[0]
			rd := b.reduction(n, r)
			y := b.restore(n.Out, rd)
			hit := b.op(ops.Eq, x, y)
			if len(rd.r.Dims) == 0 {
				bothNaN := b.op(ops.LogicalAnd, b.op(ops.Ne, x, x), b.op(ops.Ne, y, y))
				hit = b.op(ops.LogicalOr, hit, bothNaN)
			}
			m := b.where01(hit, x)
			return one(b.mul(b.div(b.restore(g, rd), call(b, ops.Sum, rd.attrs(), m)), m))
		})
	}

	// var: derivatives.yaml "var.correction": var_backward,
	// (2 / (N - correction))·grad·(x - mean). N = correction gives ±inf (or
	// NaN where x is the mean), as there.
	ruleWith(ops.Var, func(b *builder, n *Node, r ops.Reduce, g *T) []*T {
		rd := b.reduction(n, r)
		return one(b.varBackward(n.Inputs[0], b.restore(g, rd), rd))
	})

	// std: derivatives.yaml "std.correction": std_backward, the var rule
	// applied to grad / (2·result), with 0 where the result is 0.
	ruleWith(ops.Std, func(b *builder, n *Node, r ops.Reduce, g *T) []*T {
		rd := b.reduction(n, r)
		gv := b.div(g, b.mulScalar(n.Out, 2))
		gv = b.where(b.cmpScalar(ops.Eq, n.Out, 0), b.scalar(g, 0), gv)
		return one(b.varBackward(n.Inputs[0], b.restore(gv, rd), rd))
	})

	// logsumexp: derivatives.yaml "logsumexp": logsumexp_backward,
	// grad·exp(x - result).
	ruleWith(ops.LogSumExp, func(b *builder, n *Node, r ops.Reduce, g *T) []*T {
		x := n.Inputs[0]
		rd := b.reduction(n, r)
		return one(b.mul(b.restore(g, rd), b.unary(ops.Exp, b.sub(x, b.restore(n.Out, rd)))))
	})

	// cumsum: derivatives.yaml "cumsum": cumsum_backward, the cumsum of
	// grad taken from the end (flip, cumsum, flip).
	ruleWith(ops.CumSum, func(b *builder, n *Node, sc ops.Scan, g *T) []*T {
		x := n.Inputs[0]
		if x.Rank() == 0 || x.Numel() <= 1 {
			return one(g)
		}
		d, err := ops.NormDim(sc.Dim, x.Rank(), "dim")
		if err != nil {
			b.err = err
			return nil
		}
		if x.Shape[d] == 1 {
			return one(g)
		}
		f := ops.FlipDims{Dims: []int{d}}
		return one(call(b, ops.Flip, f, call(b, ops.CumSum, ops.Scan{Dim: d}, call(b, ops.Flip, f, g))))
	})
}

// varBackward is var_backward with gk already of the keep-dim shape.
func (b *builder) varBackward(x, gk *T, rd reduction) *T {
	mean := call(b, ops.Mean, rd.attrs(), x)
	return b.mul(b.mulScalar(gk, 2/float64(rd.n-rd.r.Correction)), b.sub(x, mean))
}

// softmax and log_softmax along a dim, from their outputs y
// (derivatives.yaml: _softmax_backward_data, _log_softmax_backward_data):
// softmax: g·y - y·Σ(g·y); log_softmax: g - exp(y)·Σg, sums along the dim.
func init() {
	along := func(sc ops.Scan) ops.Reduce { return ops.Reduce{Dims: []int{sc.Dim}, KeepDim: true} }
	ruleWith(ops.Softmax, func(b *builder, n *Node, sc ops.Scan, g *T) []*T {
		gy := b.mul(g, n.Out)
		return one(b.sub(gy, b.mul(n.Out, call(b, ops.Sum, along(sc), gy))))
	})
	ruleWith(ops.LogSoftmax, func(b *builder, n *Node, sc ops.Scan, g *T) []*T {
		return one(b.sub(g, b.mul(b.unary(ops.Exp, n.Out), call(b, ops.Sum, along(sc), g))))
	})
}
