package autodiff

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The fused batch norm's gradient, derivatives.yaml "native_batch_norm":
// native_batch_norm_backward, whose formulas (batch_norm_backward_cpu in
// Normalization.cpp) are, with invstd = 1/√(var + eps), xhat =
// (x - mean)·invstd, M the values per channel and sums over every dim
// but 1:
//
//	dbias = Σg    dweight = Σg·xhat
//	dx = weight·invstd·(g - dbias/M - xhat·dweight/M)   in training
//	dx = weight·invstd·g                                 out of training
//
// A plain backward runs them as the batch_norm_backward kernel. A recorded
// backward (CreateGraph) runs them as dispatch calls, with the training
// statistics recomputed from x as recorded mean and var, so that the
// second derivatives see that they depend on x; batch_norm_backward itself
// is therefore never recorded, and its rule says so. mean and var take no
// gradient: in training they are x's own statistics, whose part the dx
// above already holds, and out of training the running statistics, which
// BatchNorm does not let require one.
func init() {
	ruleWith(ops.BatchNormApply, func(b *builder, n *Node, a ops.BatchNormParams, g *T) []*T {
		x, mean, variance, w := n.Inputs[0], n.Inputs[1], n.Inputs[2], n.Inputs[3]
		if b.record {
			return batchNormGrads(b, x, mean, variance, w, g, a)
		}
		flat := call(b, ops.BatchNormBackward, a, x, mean, variance, w, g)
		part := func(start, length int) *T {
			return call(b, ops.Narrow, ops.NarrowRange{Dim: 0, Start: start, Length: length}, flat)
		}
		numel, c := x.Numel(), x.Shape[1]
		dx := call(b, ops.Reshape, ops.ViewShape{Shape: append([]int{}, x.Shape...)}, part(0, numel))
		return []*T{castTo(b, dx, x.DType), nil, nil, part(numel, c), part(numel+c, c)}
	})
	rule(ops.BatchNormBackward, func(b *builder, n *Node, g *T) []*T {
		b.err = gradError(n.Op.Name, "was recorded, but batch norm's recorded backward uses differentiable ops instead",
			"this is a bug in lathe; please report it")
		return nil
	})
	// The moments [2, C], mean and biased variance: derivatives.yaml
	// "mean.dim" (grad/M, expanded) and "var.correction" (var_backward,
	// 2/M·grad·(x - mean)).
	rule(ops.BatchNormMoments, func(b *builder, n *Node, g *T) []*T {
		x := castTo(b, n.Inputs[0], n.Out.DType) // a 16-bit x's moments are float32
		m := x.Numel() / max(x.Shape[1], 1)
		row := func(t *T, i int) *T {
			r := call(b, ops.Narrow, ops.NarrowRange{Dim: 0, Start: i, Length: 1}, t)
			return call(b, ops.Reshape, ops.ViewShape{Shape: channelShape(x)}, r)
		}
		gm, gv := row(g, 0), row(g, 1)
		dev := b.sub(x, row(n.Out, 0))
		return one(castTo(b, b.add(b.mulScalar(gm, 1/float64(m)), b.mul(b.mulScalar(gv, 2/float64(m)), dev)), n.Inputs[0].DType))
	})
}

// castTo is t in dtype dt: t itself if it has it, else a cast (the mixed
// type's float32 gradients of a 16-bit x).
func castTo(b *builder, t *T, dt dispatch.DType) *T {
	if t == nil || t.DType == dt {
		return t
	}
	return call(b, ops.Cast, ops.CastTo{DType: dt}, t)
}

// batchNormGrads is the fused batch norm's gradient as dispatch calls, for
// a backward that is itself recorded: the gradients of x, mean, var (none),
// weight and bias.
func batchNormGrads(b *builder, x, mean, variance, w, g *T, a ops.BatchNormParams) []*T {
	xdt := x.DType
	x, g = castTo(b, x, w.DType), castTo(b, g, w.DType) // the mixed type computes in the statistics' float32
	shape := channelShape(x)
	dims := []int{0}
	for d := 2; d < x.Rank(); d++ {
		dims = append(dims, d)
	}
	bcast := func(t *T) *T { return call(b, ops.Reshape, ops.ViewShape{Shape: shape}, t) }
	sum := func(t *T, keep bool) *T { return call(b, ops.Sum, ops.Reduce{Dims: dims, KeepDim: keep}, t) }
	if a.Training {
		mean = call(b, ops.Mean, ops.Reduce{Dims: dims, KeepDim: true}, x)
		variance = call(b, ops.Var, ops.Reduce{Dims: dims, KeepDim: true}, x)
	} else {
		mean, variance = bcast(mean), bcast(variance)
	}
	invstd := b.unary(ops.Rsqrt, b.add(variance, b.scalar(variance, a.Eps)))
	xhat := b.mul(b.sub(x, mean), invstd)
	gx := b.mul(g, xhat)
	scale := b.mul(bcast(w), invstd)
	var dx *T
	if a.Training {
		m := float64(x.Numel() / max(x.Shape[1], 1))
		centred := b.sub(b.sub(g, b.mulScalar(sum(g, true), 1/m)), b.mul(xhat, b.mulScalar(sum(gx, true), 1/m)))
		dx = b.mul(scale, centred)
	} else {
		dx = b.mul(g, scale)
	}
	return []*T{castTo(b, dx, xdt), nil, nil, sum(gx, false), sum(g, false)}
}

// channelShape is [1, C, 1, ...] of x's rank: a [C] tensor reshaped to it
// broadcasts along x's dim 1.
func channelShape(x *T) []int {
	shape := make([]int, x.Rank())
	for i := range shape {
		shape[i] = 1
	}
	shape[1] = x.Shape[1]
	return shape
}
