//go:build cgo

package wgpu

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Fused attention (attention.wgsl), the cuda kernels' design in f32: the
// forward in one kernel, the backward in three (each query row's D =
// rowsum(dO∘O) - dlse into a scratch buffer, then dK and dV per key row,
// then dQ per query row). Inputs are read through their strides. The
// masked ops run the same functions: the mask, their one more argument,
// goes to kernels rendered to add it to the scores. Dropout (P > 0) goes
// to kernels rendered to make it, from its key, where each probability is
// formed (kept, attention.wgsl), so that P = 0 runs the kernels as they
// were and dropout holds no mask.

// attnRows is the rows (invocations) of one of the kernels' workgroups.
const attnRows = 64

func init() {
	register(ops.Attention, floatTypes, attention)
	register(ops.AttentionMasked, floatTypes, attention)
	register(ops.AttentionBackward, floatTypes, attentionBackward)
	register(ops.AttentionMaskedBackward, floatTypes, attentionBackward)
}

// attention is the forward of ops.Attention (q, k, v) and
// ops.AttentionMasked (q, k, v, mask).
func attention(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
	in, mask := attnMask(in, 3)
	g, err := ops.AttentionShapes(in[0], in[1], in[2])
	if err != nil || out.Numel() == 0 {
		return err
	}
	tiles := g.N * g.Hq * ((g.Lq + attnRows - 1) / attnRows)
	return attnLaunch("fwd", tiles, attnParams(g, a, out.Offset, in, mask), dropped(a), mask, out, in[0], in[1], in[2])
}

// attentionBackward is the backward of ops.AttentionBackward (q, k, v,
// out, grad) and ops.AttentionMaskedBackward (q, k, v, mask, out, grad).
func attentionBackward(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
	in, mask := attnMask(in, 5)
	g, err := ops.AttentionShapes(in[0], in[1], in[2])
	if err != nil || out.Numel() == 0 {
		return err
	}
	rows := g.N * g.Hq * g.Lq
	d, err := dispatch.Empty(out.Device, dispatch.Float32, []int{max(rows, 1)})
	if err != nil {
		return err
	}
	defer d.Release()
	args := append([]*dispatch.Tensor{nil}, in...)
	if rows > 0 {
		// D reads no score nor probability: the kernel without mask or
		// dropout serves every op.
		args[0] = d
		if err := attnLaunch("delta", (rows+attnRows-1)/attnRows, attnParams(g, a, d.Offset, in, nil), false, nil, args...); err != nil {
			return err
		}
	}
	args[0] = out
	p := attnParams(g, a, out.Offset, in, mask)
	if kt := g.N * g.Hk * ((g.Lk + attnRows - 1) / attnRows); kt > 0 {
		if err := attnLaunch("dkv", kt, p, dropped(a), mask, append(args, d)...); err != nil {
			return err
		}
	}
	if qt := g.N * g.Hq * ((g.Lq + attnRows - 1) / attnRows); qt > 0 && g.E > 0 {
		return attnLaunch("dq", qt, p, dropped(a), mask, args...)
	}
	return nil
}

// attnMask returns the unmasked op's arguments and the mask: a masked
// op has one argument more than the unmasked op's count, unmasked, the
// mask, fourth after q, k and v; an unmasked op's come back as they are,
// with a nil mask.
func attnMask(in []*dispatch.Tensor, unmasked int) ([]*dispatch.Tensor, *dispatch.Tensor) {
	if len(in) == unmasked {
		return in, nil
	}
	return append(in[:3:3], in[4:]...), in[3]
}

// dropped says whether a's kernels make dropout: the ones rendered
// without it cost nothing more than before it existed.
func dropped(a ops.AttentionParams) bool { return a.Dropout.P > 0 }

// attnParams are the kernels' parameter words (attention.wgsl): the sizes,
// the scale, causal masking, dst's offset, the offset and four strides of
// each input and of the mask (zeros if none), and the dropout's key,
// threshold and factor (zeros if none). The words of a kernel without
// mask or dropout were there before either, so that those kernels are as
// they were.
func attnParams(g ops.AttentionGeometry, a ops.AttentionParams, base int, in []*dispatch.Tensor, mask *dispatch.Tensor) []uint32 {
	p := make([]uint32, 45)
	for i, v := range []int{0, g.N, g.Hq, g.Hk, g.Lq, g.Lk, g.E, g.Ev} {
		p[i] = uint32(v)
	}
	p[8] = math.Float32bits(float32(a.Scale))
	if a.Causal {
		p[9] = 1
	}
	p[10] = uint32(base)
	at := func(w int, t *dispatch.Tensor) {
		p[w] = uint32(int32(t.Offset))
		for d, s := range t.Strides {
			p[w+1+d] = uint32(int32(s))
		}
	}
	for i, t := range in {
		at(11+5*i, t)
	}
	if mask != nil {
		at(36, mask)
	}
	if dropped(a) {
		m := a.Dropout
		p[41], p[42], p[43], p[44] = uint32(m.Key), uint32(m.Key>>32), m.Threshold(), math.Float32bits(float32(m.Scale()))
	}
	return p
}

// attnLaunch runs the kernel of kind, with dropout or not, over tiles
// workgroups, binding tensors and then the mask, if any.
func attnLaunch(kind string, tiles int, p []uint32, dropout bool, mask *dispatch.Tensor, tensors ...*dispatch.Tensor) error {
	key, binding := "attention/"+kind, 0
	if dropout {
		key += "/dropout"
	}
	if mask != nil {
		tensors = append(slices.Clip(tensors), mask) // not into the caller's array
		key, binding = key+"/mask"+strconv.Itoa(len(tensors)), len(tensors)
	}
	sh, err := shaderFor(key, "attention", struct {
		Kind    string
		Mask    int
		Dropout bool
	}{kind, binding, dropout})
	if err != nil {
		return err
	}
	p[0] = uint32(tiles)
	return launch("attention", sh, grid(tiles*workgroup), p, tensors...)
}
