package autodiff

import (
	"github.com/lathe-ml/lathe/dispatch"
)

// Gradient rules of the reductions and of cumsum. Formulas follow PyTorch's
// tools/autograd/derivatives.yaml and the helpers it names in
// torch/csrc/autograd/FunctionsManual.cpp. Every rule first brings the
// output's gradient (and, where needed, the output) back to the input's
// rank with the reduced dims as size 1, so that it broadcasts against x.

// reduction is a reduce node's attributes resolved against its input.
type reduction struct {
	r    dispatch.Reduce
	dims []int // normalised, sorted reduced dims
	keep []int // x's shape with the reduced dims as 1
	n    int   // elements per reduced group
}

func (b *builder) reduction(n *Node) reduction {
	r, _ := n.Attrs.(dispatch.Reduce)
	x := n.Inputs[0]
	dims, keep, err := dispatch.ReduceShape(x, dispatch.Reduce{Dims: r.Dims, KeepDim: true})
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
func (rd reduction) attrs() dispatch.Reduce { return dispatch.Reduce{Dims: rd.dims, KeepDim: true} }

// restore reshapes t, of the reduction's output shape, to the keep-dim
// shape (unsqueeze_multiple in FunctionsManual.cpp).
func (b *builder) restore(t *T, rd reduction) *T {
	return b.call("reshape", dispatch.ViewShape{Shape: append([]int{}, rd.keep...)}, t)
}

// where01 is 1 where c holds and 0 elsewhere, in like's dtype.
func (b *builder) where01(c, like *T) *T { return b.where(c, b.scalar(like, 1), b.scalar(like, 0)) }

func init() {
	// sum: grad.expand(self.sizes()) after restoring the reduced dims
	// (derivatives.yaml "sum.dim_IntList": sum_backward).
	rule("sum", func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		rd := b.reduction(n)
		return one(b.call("expand", dispatch.ViewShape{Shape: append([]int{}, x.Shape...)}, b.restore(g, rd)))
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
	rule("prod", func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		rd := b.reduction(n)
		zero := b.scalar(x, 0)
		isZero := b.cmpScalar("eq", x, 0)
		safe := b.where(isZero, b.scalar(x, 1), x)
		p := b.call("prod", rd.attrs(), safe)
		z := b.call("sum", rd.attrs(), b.where01(isZero, x))
		s := b.call("sum", rd.attrs(), b.where(isZero, x, zero))
		atZero := b.where(b.cmpScalar("eq", z, 1), p,
			b.where(b.cmpScalar("eq", z, 2), b.mul(p, b.sub(s, x)), zero))
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
	for _, name := range []string{"max", "min"} {
		rule(name, func(b *builder, n *Node, g *T) []*T {
			x := n.Inputs[0]
			rd := b.reduction(n)
			y := b.restore(n.Out, rd)
			hit := b.call("eq", nil, x, y)
			if len(rd.r.Dims) == 0 {
				bothNaN := b.call("logical_and", nil, b.call("ne", nil, x, x), b.call("ne", nil, y, y))
				hit = b.call("logical_or", nil, hit, bothNaN)
			}
			m := b.where01(hit, x)
			return one(b.mul(b.div(b.restore(g, rd), b.call("sum", rd.attrs(), m)), m))
		})
	}

	// var: derivatives.yaml "var.correction": var_backward,
	// (2 / (N - correction))·grad·(x - mean). N = correction gives ±inf (or
	// NaN where x is the mean), as there.
	rule("var", func(b *builder, n *Node, g *T) []*T {
		rd := b.reduction(n)
		return one(b.varBackward(n.Inputs[0], b.restore(g, rd), rd))
	})

	// std: derivatives.yaml "std.correction": std_backward, the var rule
	// applied to grad / (2·result), with 0 where the result is 0.
	rule("std", func(b *builder, n *Node, g *T) []*T {
		rd := b.reduction(n)
		gv := b.div(g, b.mulScalar(n.Out, 2))
		gv = b.where(b.cmpScalar("eq", n.Out, 0), b.scalar(g, 0), gv)
		return one(b.varBackward(n.Inputs[0], b.restore(gv, rd), rd))
	})

	// logsumexp: derivatives.yaml "logsumexp": logsumexp_backward,
	// grad·exp(x - result).
	rule("logsumexp", func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		rd := b.reduction(n)
		return one(b.mul(b.restore(g, rd), b.unary("exp", b.sub(x, b.restore(n.Out, rd)))))
	})

	// cumsum: derivatives.yaml "cumsum": cumsum_backward, the cumsum of
	// grad taken from the end (flip, cumsum, flip).
	rule("cumsum", func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		if x.Rank() == 0 || x.Numel() <= 1 {
			return one(g)
		}
		d, err := dispatch.NormDim(n.Attrs.(dispatch.Scan).Dim, x.Rank(), "dim")
		if err != nil {
			b.err = err
			return nil
		}
		if x.Shape[d] == 1 {
			return one(g)
		}
		f := dispatch.Flip{Dims: []int{d}}
		return one(b.call("flip", f, b.call("cumsum", dispatch.Scan{Dim: d}, b.call("flip", f, g))))
	})
}

// varBackward is var_backward with gk already of the keep-dim shape.
func (b *builder) varBackward(x, gk *T, rd reduction) *T {
	mean := b.call("mean", rd.attrs(), x)
	return b.mul(b.mulScalar(gk, 2/float64(rd.n-rd.r.Correction)), b.sub(x, mean))
}

// softmax and log_softmax along a dim, from their outputs y
// (derivatives.yaml: _softmax_backward_data, _log_softmax_backward_data):
// softmax: g·y - y·Σ(g·y); log_softmax: g - exp(y)·Σg, sums along the dim.
func init() {
	along := func(n *Node) dispatch.Reduce {
		sc, _ := n.Attrs.(dispatch.Scan)
		return dispatch.Reduce{Dims: []int{sc.Dim}, KeepDim: true}
	}
	rule("softmax", func(b *builder, n *Node, g *T) []*T {
		gy := b.mul(g, n.Out)
		return one(b.sub(gy, b.mul(n.Out, b.call("sum", along(n), gy))))
	})
	rule("log_softmax", func(b *builder, n *Node, g *T) []*T {
		return one(b.sub(g, b.mul(b.unary("exp", n.Out), b.call("sum", along(n), g))))
	})
}
