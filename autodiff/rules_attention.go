package autodiff

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The fused attention's gradient (FlashAttention-2's backward, Dao 2023):
// with P = softmax(scale·q·kᵀ) (masked), O = P·v and the gradient g of the
// op's result split into dO (the output's) and dlse (the logsumexp's):
//
//	dV = (P∘M)ᵀ·dO    dP = (dO·vᵀ)∘M    D = rowsum(P∘dP) - dlse = rowsum(dO∘O) - dlse
//	dS = P∘(dP - D)    dQ = scale·dS·k    dK = scale·dSᵀ·q
//
// summed over the query heads of a key head under grouped-query attention,
// M being the dropout factors (ops.Dropout's under the params' Mask; 1
// without dropout).
// A plain backward runs it as the fused attention_backward kernel, which
// recomputes P block by block from the saved logsumexp. A recorded
// backward (CreateGraph) runs the same formulas as dispatch calls (matmul,
// softmax, where, mul, sum), whose own rules give the second derivatives;
// attention_backward itself is therefore never recorded, and its rule
// says so.
func init() {
	ruleWith(ops.Attention, func(b *builder, n *Node, a ops.AttentionParams, g *T) []*T {
		q, k, v := n.Inputs[0], n.Inputs[1], n.Inputs[2]
		if b.record {
			return attentionGrads(b, q, k, v, nil, g, a)
		}
		return attentionKernelGrads(b, call(b, ops.AttentionBackward, a, q, k, v, n.Out, g), q, k, v)
	})
	// The masked op's mask is additive, so its gradient is dS itself,
	// which the fused kernel never holds: where the mask wants one, the
	// backward runs as dispatch calls (holding the Lq×Lk scores, as the
	// composite does); otherwise the mask gets none.
	ruleWith(ops.AttentionMasked, func(b *builder, n *Node, a ops.AttentionParams, g *T) []*T {
		q, k, v, mask := n.Inputs[0], n.Inputs[1], n.Inputs[2], n.Inputs[3]
		if b.record || mask.RequiresGrad.Load() {
			return attentionGrads(b, q, k, v, mask, g, a)
		}
		flat := call(b, ops.AttentionMaskedBackward, a, q, k, v, mask, n.Out, g)
		return append(attentionKernelGrads(b, flat, q, k, v), nil)
	})
	for _, op := range []*dispatch.Op[ops.AttentionParams]{ops.AttentionBackward, ops.AttentionMaskedBackward} {
		rule(op, func(b *builder, n *Node, g *T) []*T {
			b.err = gradError(n.Op.Name, "was recorded, but attention's recorded backward uses differentiable ops instead",
				"this is a bug in lathe; please report it")
			return nil
		})
	}
}

// attentionKernelGrads splits the backward kernel's flat dq | dk | dv into
// gradients shaped as q, k and v.
func attentionKernelGrads(b *builder, flat, q, k, v *T) []*T {
	part := func(start int, t *T) *T {
		x := call(b, ops.Narrow, ops.NarrowRange{Dim: 0, Start: start, Length: t.Numel()}, flat)
		return call(b, ops.Reshape, ops.ViewShape{Shape: append([]int{}, t.Shape...)}, x)
	}
	return []*T{part(0, q), part(q.Numel(), k), part(q.Numel()+k.Numel(), v)}
}

// attentionGrads is the fused attention's gradient as dispatch calls, for
// a backward that is itself recorded (or one whose mask wants a
// gradient). q is [N, Hq, Lq, E], k [N, Hk, Lk, E], v [N, Hk, Lk, Ev], g
// [N, Hq, Lq, Ev+1] and mask, the masked op's, [N, Hq, Lq, Lk] (nil for
// the unmasked op, whose gradients are then three).
func attentionGrads(b *builder, q, k, v, mask, g *T, a ops.AttentionParams) []*T {
	nb, hq, lq, e := q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
	hk, lk, ev := k.Shape[1], k.Shape[2], v.Shape[3]
	group := 1
	if hk > 0 {
		group = hq / hk
	}
	reshape := func(x *T, shape ...int) *T { return call(b, ops.Reshape, ops.ViewShape{Shape: shape}, x) }
	narrow := func(x *T, start, length int) *T {
		return call(b, ops.Narrow, ops.NarrowRange{Dim: 4, Start: start, Length: length}, x)
	}
	mt := func(x *T) *T { return call(b, ops.MT, dispatch.None{}, x) }
	sumGroup := func(x *T, last int) *T {
		x = call(b, ops.Sum, ops.Reduce{Dims: []int{2}}, x)
		return reshape(x, nb, hk, lk, last)
	}
	// Queries as [N, Hk, group, Lq, ·] against keys and values as
	// [N, Hk, 1, Lk, ·].
	qg := reshape(q, nb, hk, group, lq, e)
	kg, vg := reshape(k, nb, hk, 1, lk, e), reshape(v, nb, hk, 1, lk, ev)
	// A 16-bit query's result, and so g, is float32
	// (ops.AttentionOutDType): these formulas run in the inputs' dtype.
	gg := reshape(castTo(b, g, q.DType), nb, hk, group, lq, ev+1)
	dO, dlse := narrow(gg, 0, ev), narrow(gg, ev, 1)
	s := b.mulScalar(b.op(ops.MatMul, qg, mt(kg)), a.Scale)
	if a.Causal && b.err == nil {
		s = b.op(ops.Where, causalMask(b, q, lq, lk), s, b.scalar(s, math.Inf(-1)))
	}
	if mask != nil {
		s = b.add(s, reshape(mask, nb, hk, group, lq, lk))
	}
	p := call(b, ops.Softmax, ops.Scan{Dim: -1}, s)
	// drop is M∘x for x of the probabilities' shape: [N, Hk, group, Lq,
	// Lk] numbers its elements as [N, Hq, Lq, Lk] does.
	drop := func(x *T) *T {
		if a.Dropout.P == 0 {
			return x
		}
		return call(b, ops.Dropout, a.Dropout, x)
	}
	dv := sumGroup(b.op(ops.MatMul, mt(drop(p)), dO), ev)
	dp := drop(b.op(ops.MatMul, dO, mt(vg)))
	d := b.sub(call(b, ops.Sum, ops.Reduce{Dims: []int{-1}, KeepDim: true}, b.mul(p, dp)), dlse)
	ds := b.mul(p, b.sub(dp, d))
	dq := reshape(b.mulScalar(b.op(ops.MatMul, ds, kg), a.Scale), nb, hq, lq, e)
	dk := sumGroup(b.mulScalar(b.op(ops.MatMul, mt(ds), qg), a.Scale), e)
	switch {
	case mask == nil:
		return []*T{dq, dk, dv}
	case mask.RequiresGrad.Load():
		return []*T{dq, dk, dv, reshape(ds, nb, hq, lq, lk)}
	}
	return []*T{dq, dk, dv, nil}
}

// causalMask is the Bool [Lq, Lk] lower triangle (query i attends to keys
// j ≤ i) on like's device.
func causalMask(b *builder, like *T, lq, lk int) *T {
	tri := make([]bool, lq*lk)
	for i := range lq {
		for j := range min(i+1, lk) {
			tri[i*lk+j] = true
		}
	}
	t, err := dispatch.Upload(like.Device, tri, dispatch.Bool, []int{lq, lk})
	if err != nil {
		b.err = err
		return nil
	}
	b.made = append(b.made, t)
	return t
}
