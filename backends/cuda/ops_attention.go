package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Fused attention (kernels/cuda/attention.cu): the forward in one kernel,
// the backward in three (the rows' D = rowsum(dO∘O) - dlse into scratch,
// then dK and dV per key row, then dQ per query row). The inputs are read
// row-major (copied first where they are not); the kernels' blocks are of
// attnRows threads, each owning one row.

const attnRows = 64

func init() {
	kernel(ops.Attention, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
		g, err := ops.AttentionShapes(in[0], in[1], in[2])
		if err != nil || out.Numel() == 0 {
			return named("attention", err)
		}
		vs, free, err := rowMajorAll(in[:3])
		if err != nil {
			return named("attention", err)
		}
		defer free()
		tiles := g.N * g.Hq * ((g.Lq + attnRows - 1) / attnRows)
		return named("attention", enqueue(out.Device, "attention", "attention_fwd_"+suffix(out.DType),
			[3]uint32{blocksFor(tiles, 1), 1, 1}, [3]uint32{attnRows, 1, 1}, 0,
			append([]any{addressOf(out), vs[0].ptr, vs[1].ptr, vs[2].ptr}, attnDims(g, a)...)...))
	})
	kernel(ops.AttentionBackward, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
		g, err := ops.AttentionShapes(in[0], in[1], in[2])
		if err != nil || out.Numel() == 0 {
			return named("attention_backward", err)
		}
		vs, free, err := rowMajorAll(in)
		if err != nil {
			return named("attention_backward", err)
		}
		defer free()
		dev, sfx, size := out.Device, suffix(out.DType), uint64(out.DType.Size())
		rows := g.N * g.Hq * g.Lq
		d, freeD, err := borrow(dev, max(rows*out.DType.Size(), 1))
		if err != nil {
			return named("attention_backward", err)
		}
		defer freeD()
		dq := addressOf(out)
		dk := dq + uint64(rows*g.E)*size
		dv := dk + uint64(g.N*g.Hk*g.Lk*g.E)*size
		q, k, v, o, gr := vs[0].ptr, vs[1].ptr, vs[2].ptr, vs[3].ptr, vs[4].ptr
		block := [3]uint32{attnRows, 1, 1}
		if rows > 0 {
			if err := enqueue(dev, "attention", "attention_bwd_delta_"+sfx, [3]uint32{blocksFor(rows, attnRows), 1, 1}, block, 0,
				d, o, gr, int64(rows), int64(g.Ev)); err != nil {
				return named("attention_backward", err)
			}
		}
		if kt := g.N * g.Hk * ((g.Lk + attnRows - 1) / attnRows); kt > 0 {
			args := append([]any{dk, dv, q, k, v, o, gr, d}, attnDims(g, a)...)
			if err := enqueue(dev, "attention", "attention_bwd_dkv_"+sfx, [3]uint32{blocksFor(kt, 1), 1, 1}, block, 0, args...); err != nil {
				return named("attention_backward", err)
			}
		}
		if qt := g.N * g.Hq * ((g.Lq + attnRows - 1) / attnRows); qt > 0 && g.E > 0 {
			args := append([]any{dq, q, k, v, o, gr}, attnDims(g, a)...)
			if err := enqueue(dev, "attention", "attention_bwd_dq_"+sfx, [3]uint32{blocksFor(qt, 1), 1, 1}, block, 0, args...); err != nil {
				return named("attention_backward", err)
			}
		}
		return nil
	})
}

// attnDims are the kernels' trailing parameters: the sizes, the scale and
// causal masking.
func attnDims(g ops.AttentionGeometry, a ops.AttentionParams) []any {
	causal := int64(0)
	if a.Causal {
		causal = 1
	}
	return []any{int64(g.N), int64(g.Hq), int64(g.Hk), int64(g.Lq), int64(g.Lk), int64(g.E), int64(g.Ev), a.Scale, causal}
}

// rowMajorAll is rowMajor of each tensor, with one function that frees
// every copy.
func rowMajorAll(ts []*dispatch.Tensor) ([]view, func(), error) {
	var frees []func()
	free := func() {
		for _, f := range frees {
			f()
		}
	}
	vs := make([]view, len(ts))
	for i, t := range ts {
		v, f, err := rowMajor(t)
		if err != nil {
			free()
			return nil, nil, err
		}
		vs[i] = v
		frees = append(frees, f)
	}
	return vs, free, nil
}
