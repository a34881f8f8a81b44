package nn

import (
	"errors"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestAttentionUnbatched: MultiheadAttention and the transformer layers
// take one sequence without a batch dim (query [L, E], key padding [S],
// weights [L, S] or [heads, L, S]), as torch 1.13's do, and give the
// result of a batch of one without its batch dim; they refused it
// ("has shape [3 4] but the layer takes [batch, seq, 4]").
func TestAttentionUnbatched(t *testing.T) {
	devs := []lathe.Device{lathe.CPU}
	if dev := lathe.WGPU(0); slices.Contains(lathe.Devices(), dev) {
		devs = append(devs, dev)
	}
	for _, dev := range devs {
		for _, seqFirst := range []bool{false, true} {
			lathe.Seed(5)
			var opts []Option
			if seqFirst {
				opts = append(opts, SeqFirst())
			}
			m := NewMultiheadAttention(4, 2, opts...)
			enc := NewTransformerEncoderLayer(4, 2, append(opts, DimFeedforward(6), DropoutProb(0))...)
			dec := NewTransformerDecoderLayer(4, 2, append(opts, DimFeedforward(6), DropoutProb(0))...)
			mustOK(t, m.To(dev), enc.To(dev), dec.To(dev))
			q := lathe.RandN(lathe.CPU, lathe.Float32, 3, 4).To(dev)
			kv := lathe.RandN(lathe.CPU, lathe.Float32, 5, 4).To(dev)
			pad := lathe.FromSlice(lathe.CPU, []bool{false, true, false, false, true}).To(dev)
			attn := lathe.FromSlice(lathe.CPU, []bool{false, false, true, false, false, false, false, false, false, true, false, true, false, false, false}, 3, 5).To(dev)
			bd := 0
			if seqFirst {
				bd = 1
			}
			one := func(x *lathe.Tensor) *lathe.Tensor { return x.Unsqueeze(bd) }
			masks := AttentionMasks{Attn: attn, KeyPadding: pad}
			batchMasks := AttentionMasks{Attn: attn, KeyPadding: pad.Unsqueeze(0)}
			same := func(what string, got, want *lathe.Tensor, shape ...int) {
				t.Helper()
				g, err := got.To(lathe.CPU).Float32s()
				w, err2 := want.To(lathe.CPU).Float32s()
				if err != nil || err2 != nil || !slices.Equal(got.Shape(), shape) || !slices.Equal(g, w) {
					t.Errorf("%v seqFirst %v %s: %v %v (%v), want %v (the batch of one's)", dev, seqFirst, what, got.Shape(), g, firstErr(err, err2), w)
				}
			}
			same("attend", m.Attend(q, kv, kv, masks), m.Attend(one(q), one(kv), one(kv), batchMasks).Squeeze(bd), 3, 4)
			same("self-attention", m.Forward(q), m.Forward(one(q)).Squeeze(bd), 3, 4)
			for _, avg := range []bool{true, false} {
				o, w := m.AttendWeights(q, kv, kv, masks, avg)
				ob, wb := m.AttendWeights(one(q), one(kv), one(kv), batchMasks, avg)
				same("attend's result", o, ob.Squeeze(bd), 3, 4)
				if avg {
					same("averaged weights", w, wb.Squeeze(0), 3, 5)
				} else {
					same("per-head weights", w, wb.Squeeze(0), 2, 3, 5)
				}
			}
			perHead := lathe.Zeros(dev, lathe.Float32, 2, 3, 5)
			same("per-head float mask", m.Attend(q, kv, kv, AttentionMasks{Attn: perHead}), m.Attend(one(q), one(kv), one(kv), AttentionMasks{Attn: perHead}).Squeeze(bd), 3, 4)
			same("encoder layer", enc.Encode(kv, AttentionMasks{KeyPadding: pad}), enc.Encode(one(kv), AttentionMasks{KeyPadding: pad.Unsqueeze(0)}).Squeeze(bd), 5, 4)
			same("decoder layer", dec.Decode(q, kv, AttentionMasks{Causal: true}, AttentionMasks{KeyPadding: pad}),
				dec.Decode(one(q), one(kv), AttentionMasks{Causal: true}, AttentionMasks{KeyPadding: pad.Unsqueeze(0)}).Squeeze(bd), 3, 4)
			for what, got := range map[string]*lathe.Tensor{
				"a batched key beside it":   m.Attend(q, one(kv), one(kv), AttentionMasks{}),
				"a [1, S] key padding mask": m.Attend(q, kv, kv, AttentionMasks{KeyPadding: pad.Unsqueeze(0)}),
			} {
				if !errors.Is(got.Err(), lathe.ErrShape) {
					t.Errorf("%v: an unbatched query with %s: %v, want an ErrShape", dev, what, got.Err())
				}
			}
		}
	}
}
