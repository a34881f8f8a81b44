package autodiff

import (
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The fused layer norm's gradient (derivatives.yaml "native_layer_norm":
// native_layer_norm_backward; torch's layer_norm_backward_cpu): with
// x̂ = (x - mean)·rstd per row, rstd = 1/√(var + eps), and dx̂ = g·w,
//
//	dx = rstd·(dx̂ - mean(dx̂) - x̂·mean(dx̂·x̂))    dw = Σrows g·x̂    db = Σrows g
//
// means along a row. A plain backward runs it as the native_layer_norm_backward
// kernel. A recorded backward (CreateGraph) runs the same formulas as
// dispatch calls (mean, sub, mul, rsqrt, sum), whose own rules give the
// second derivatives; native_layer_norm_backward itself is therefore never
// recorded, and its rule says so.
func init() {
	ruleWith(ops.LayerNorm, func(b *builder, n *Node, a ops.LayerNormParams, g *T) []*T {
		x, w := n.Inputs[0], n.Inputs[1]
		if b.record {
			return layerNormGrads(b, x, w, g, a)
		}
		flat := call(b, ops.LayerNormBackward, a, x, w, g)
		// Each gradient is a view of flat: dx reshaped to x's shape, dw
		// and db, [D] as flat is 1-d, as they are.
		part := func(start int, t *T) *T {
			v := call(b, ops.Narrow, ops.NarrowRange{Dim: 0, Start: start, Length: t.Numel()}, flat)
			if t.Rank() == 1 {
				return v
			}
			return call(b, ops.Reshape, ops.ViewShape{Shape: append([]int{}, t.Shape...)}, v)
		}
		return []*T{part(0, x), part(x.Numel(), w), part(x.Numel()+w.Numel(), w)}
	})
	rule(ops.LayerNormBackward, func(b *builder, n *Node, g *T) []*T {
		b.err = gradError(n.Op.Name, "was recorded, but layer norm's recorded backward uses differentiable ops instead",
			"this is a bug in lathe; please report it")
		return nil
	})
}

// layerNormGrads is the fused layer norm's gradient as dispatch calls, for
// a backward that is itself recorded. x and g are [..., D], w is [D].
func layerNormGrads(b *builder, x, w, g *T, a ops.LayerNormParams) []*T {
	last := x.Rank() - 1
	lead := make([]int, last) // the dims summed over for dw and db
	for i := range lead {
		lead[i] = i
	}
	rowMean := func(t *T) *T { return call(b, ops.Mean, ops.Reduce{Dims: []int{last}, KeepDim: true}, t) }
	colSum := func(t *T) *T {
		if last == 0 {
			return t
		}
		return call(b, ops.Sum, ops.Reduce{Dims: lead}, t)
	}
	xc := b.sub(x, rowMean(x))
	rstd := b.unary(ops.Rsqrt, b.add(rowMean(b.mul(xc, xc)), b.scalar(x, a.Eps)))
	xh := b.mul(xc, rstd)
	dxh := b.mul(g, w)
	dx := b.mul(rstd, b.sub(b.sub(dxh, rowMean(dxh)), b.mul(xh, rowMean(b.mul(dxh, xh)))))
	return []*T{dx, colSum(b.mul(g, xh)), colSum(g)}
}
