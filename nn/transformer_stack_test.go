package nn

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// Transformer has torch's names, defaults and re-initialisation, and each
// layer of a stack its own parameters.
func TestTransformerStackNamesAndDefaults(t *testing.T) {
	lathe.Seed(5)
	m := NewTransformer(8, 2, NumEncoderLayers(2), NumDecoderLayers(1), DimFeedforward(16))
	if err := Err(m); err != nil {
		t.Fatal(err)
	}
	var names []string
	seen := map[*lathe.Tensor]bool{}
	for _, p := range m.Parameters() {
		names = append(names, p.Name)
		if seen[p.T] {
			t.Errorf("%s shares its handle with another parameter", p.Name)
		}
		seen[p.T] = true
		if p.T.Rank() == 2 { // xavier-uniform, as torch's _reset_parameters
			bound := math.Sqrt(6 / float64(p.T.Dim(0)+p.T.Dim(1)))
			for _, v := range values(t, p.T) {
				if math.Abs(v) > bound {
					t.Fatalf("%s holds %g, beyond xavier's bound %g", p.Name, v, bound)
				}
			}
		}
	}
	want := []string{"encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias"}
	if !slices.Equal(names[:2], want) || names[12] != "encoder.layers.1.self_attn.in_proj_weight" ||
		!slices.Equal(names[24:26], []string{"encoder.norm.weight", "encoder.norm.bias"}) ||
		names[26] != "decoder.layers.0.self_attn.in_proj_weight" || names[len(names)-1] != "decoder.norm.bias" || len(names) != 2*12+2+18+2 {
		t.Fatalf("names %v", names)
	}
	if slices.Equal(values(t, m.Encoder.Layers[0].Linear1.Weight), values(t, m.Encoder.Layers[1].Linear1.Weight)) {
		t.Error("two encoder layers start with one weight")
	}
	d := NewTransformer(8, 2)
	l := d.Decoder.Layers[5]
	if len(d.Encoder.Layers) != 6 || len(d.Decoder.Layers) != 6 || l.Linear1.Weight.Dim(0) != 2048 || l.Dropout1.P != 0.1 ||
		d.Encoder.Norm.Eps != 1e-5 || l.NormFirst || l.SelfAttn.SeqFirst {
		t.Errorf("defaults: %d and %d layers, ff %d, dropout %v, eps %v, norm_first %v, seq-first %v",
			len(d.Encoder.Layers), len(d.Decoder.Layers), l.Linear1.Weight.Dim(0), l.Dropout1.P, d.Encoder.Norm.Eps, l.NormFirst, l.SelfAttn.SeqFirst)
	}
	if s := NewTransformer(8, 2, SeqFirst(), NumEncoderLayers(0), NumDecoderLayers(1)); !s.Decoder.Layers[0].MultiheadAttn.SeqFirst || len(s.Encoder.Layers) != 0 {
		t.Error("SeqFirst did not reach the decoder's attention, or 0 encoder layers were not 0")
	}

	a := NewMultiheadAttention(8, 2, KDim(6), VDim(5), AddBiasKV(), AddZeroAttn(), NoBias())
	names = names[:0]
	for _, p := range a.Parameters() {
		names = append(names, p.Name+shapeString(p.T.Shape()))
	}
	if want := []string{"q_proj_weight[8, 8]", "k_proj_weight[8, 6]", "v_proj_weight[8, 5]", "bias_k[1, 1, 8]", "bias_v[1, 1, 8]",
		"out_proj.weight[8, 8]"}; !slices.Equal(names, want) || a.InProjWeight != nil || !a.AddZeroAttn {
		t.Errorf("MultiheadAttention with kdim, vdim, bias_kv: %v, want %v", names, want)
	}
}

func TestGenerateSquareSubsequentMask(t *testing.T) {
	inf := math.Inf(-1)
	m := GenerateSquareSubsequentMask(3, lathe.CPU)
	if m.DType() != lathe.Float32 || !slices.Equal(values(t, m), []float64{0, inf, inf, 0, 0, inf, 0, 0, 0}) {
		t.Errorf("mask %v %v", m.DType(), values(t, m))
	}
	if e := GenerateSquareSubsequentMask(0, lathe.CPU); !slices.Equal(e.Shape(), []int{0, 0}) {
		t.Errorf("n = 0: %v %v", e.Shape(), e.Err())
	}
	for _, n := range []int{-1, math.MaxInt / 2} {
		var e *lathe.Error
		if err := GenerateSquareSubsequentMask(n, lathe.CPU).Err(); !errors.As(err, &e) {
			t.Errorf("n = %d: error %v, want a *lathe.Error", n, err)
		}
	}
}

// Generating token by token with a KVCache through a seq-first layer that
// appends BiasK and a zero key gives the full causal forward's output: the
// appended keys are open to every query and are not cached.
func TestKVCacheAppendedKeys(t *testing.T) {
	lathe.Seed(7)
	const b, l, e, h = 2, 5, 8, 2
	m := NewMultiheadAttention(e, h, WithDType(lathe.Float64), AddBiasKV(), AddZeroAttn(), SeqFirst())
	x := lathe.RandN(lathe.CPU, lathe.Float64, l, b, e)
	full := m.Attend(x, x, x, AttentionMasks{Causal: true})
	var cache KVCache
	for pos := range l {
		got := m.Step(x.Narrow(0, pos, 1), &cache)
		assertClose(t, "step", values(t, got), values(t, full.Narrow(0, pos, 1)), 1e-12)
	}
	if cache.Len() != l {
		t.Errorf("cache holds %d positions, want %d", cache.Len(), l)
	}
	if got := m.Step(x.Narrow(0, 0, 1).Narrow(1, 0, 1), &cache); !errors.Is(got.Err(), lathe.ErrShape) || cache.Len() != l {
		t.Errorf("a step of another batch: %v, cache %d", got.Err(), cache.Len())
	}
}

// Every argument a caller can get wrong, of the stacks, Transformer and
// MultiheadAttention's options, gives a *lathe.Error that names the module
// and the argument, never a panic.
func TestTransformerStackBadInputs(t *testing.T) {
	f32 := lathe.Float32
	x := func(shape ...int) *lathe.Tensor { return lathe.Zeros(lathe.CPU, f32, shape...) }
	boolMask := func(shape ...int) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Bool, shape...) }
	newEnc := func() *TransformerEncoderLayer { return NewTransformerEncoderLayer(8, 2, DimFeedforward(16)) }
	newDec := func() *TransformerDecoderLayer { return NewTransformerDecoderLayer(8, 2, DimFeedforward(16)) }
	enc := NewTransformerEncoder(newEnc, 2, NewLayerNorm([]int{8}))
	dec := NewTransformerDecoder(newDec, 2, nil)
	tr := NewTransformer(8, 2, NumEncoderLayers(1), NumDecoderLayers(1), DimFeedforward(16))
	none := AttentionMasks{}
	transform := func(src, tgt *lathe.Tensor, s, tg, mem AttentionMasks) *lathe.Tensor {
		return tr.Transform(src, tgt, s, tg, mem)
	}
	one := newEnc()
	released := x(2, 4, 8)
	released.Release()
	kv := NewMultiheadAttention(8, 2, KDim(6), VDim(5))
	extra := NewMultiheadAttention(8, 2, AddBiasKV(), AddZeroAttn())
	seqFirst := NewMultiheadAttention(8, 2, SeqFirst())

	type badCase struct {
		name string
		got  *lathe.Tensor
		kind error
		want string
	}
	cases := []badCase{
		{"encoder/nil_new_layer", NewTransformerEncoder(nil, 2, nil).Forward(x(2, 5, 8)), lathe.ErrValue, `transformer_encoder: argument "new_layer"`},
		{"encoder/num_layers", NewTransformerEncoder(newEnc, -1, nil).Forward(x(2, 5, 8)), lathe.ErrValue, `argument "num_layers"`},
		{"encoder/new_layer_nil", NewTransformerEncoder(func() *TransformerEncoderLayer { return nil }, 2, nil).Forward(x(2, 5, 8)),
			lathe.ErrValue, `argument "new_layer"`},
		{"encoder/new_layer_shared", NewTransformerEncoder(func() *TransformerEncoderLayer { return one }, 2, nil).Forward(x(2, 5, 8)),
			lathe.ErrValue, `argument "new_layer"`},
		{"encoder/failed_layer", NewTransformerEncoder(func() *TransformerEncoderLayer { return NewTransformerEncoderLayer(8, 3) }, 2, nil).Forward(x(2, 5, 8)),
			lathe.ErrShape, `argument "nhead"`},
		{"encoder/src_shape", enc.Forward(x(2, 5, 6)), lathe.ErrShape, `transformer_encoder: argument "src"`},
		{"encoder/nil_src", enc.Forward(nil), lathe.ErrValue, `transformer_encoder: argument "src"`},
		{"encoder/released_src", enc.Forward(released), lathe.ErrReleased, `"src"`},
		{"encoder/mask", enc.Encode(x(2, 5, 8), AttentionMasks{Attn: boolMask(5, 4)}), lathe.ErrShape, `transformer_encoder: argument "mask"`},
		{"encoder/key_padding", enc.Encode(x(2, 5, 8), AttentionMasks{KeyPadding: lathe.Zeros(lathe.CPU, lathe.Int32, 2, 5)}), lathe.ErrDType, `argument "src_key_padding_mask"`},
		{"encoder/norm_size", NewTransformerEncoder(newEnc, 1, NewLayerNorm([]int{6})).Forward(x(2, 5, 8)), lathe.ErrShape, ``},
		{"encoder/nil", (*TransformerEncoder)(nil).Forward(x(2, 5, 8)), lathe.ErrValue, `transformer_encoder`},
		{"encoder/nil_layer_field", (&TransformerEncoder{Layers: []*TransformerEncoderLayer{nil}}).Forward(x(2, 5, 8)), lathe.ErrValue, `transformer_encoder`},
		{"decoder/forward", dec.Forward(x(2, 5, 8)), lathe.ErrValue, `transformer_decoder: argument "memory"`},
		{"decoder/nil_memory", dec.Decode(x(2, 5, 8), nil, none, none), lathe.ErrValue, `transformer_decoder: argument "memory"`},
		{"decoder/memory_batch", dec.Decode(x(2, 5, 8), x(3, 4, 8), none, none), lathe.ErrShape, `argument "memory"`},
		{"decoder/memory_mask", dec.Decode(x(2, 5, 8), x(2, 4, 8), none, AttentionMasks{Attn: x(5, 5)}), lathe.ErrShape,
			`transformer_decoder: argument "memory_mask"`},
		{"decoder/tgt_key_padding", dec.Decode(x(2, 5, 8), x(2, 4, 8), AttentionMasks{KeyPadding: boolMask(2, 4)}, none), lathe.ErrShape,
			`argument "tgt_key_padding_mask"`},
		{"decoder/new_layer_shared", NewTransformerDecoder(func() *TransformerDecoderLayer { return dec.Layers[0] }, 2, nil).Forward(x(2, 5, 8)),
			lathe.ErrValue, `argument "new_layer"`},
		{"transformer/forward", tr.Forward(x(2, 5, 8)), lathe.ErrValue, `transformer: argument "tgt"`},
		{"transformer/batch", transform(x(2, 5, 8), x(3, 4, 8), none, none, none), lathe.ErrShape, `transformer: argument "tgt"`},
		{"transformer/src_width", transform(x(2, 5, 6), x(2, 4, 8), none, none, none), lathe.ErrShape, `transformer: argument "src"`},
		{"transformer/tgt_rank", transform(x(2, 5, 8), x(4, 8), none, none, none), lathe.ErrShape, `transformer: argument "tgt"`},
		{"transformer/nil_src", transform(nil, x(2, 4, 8), none, none, none), lathe.ErrValue, `transformer: argument "src"`},
		{"transformer/released_tgt", transform(x(2, 4, 8), released, none, none, none), lathe.ErrReleased, `"tgt"`},
		{"transformer/float64_src", transform(lathe.Zeros(lathe.CPU, lathe.Float64, 2, 5, 8), x(2, 4, 8), none, none, none), lathe.ErrDType,
			`transformer: argument "src"`},
		{"transformer/src_mask", transform(x(2, 5, 8), x(2, 4, 8), AttentionMasks{Attn: boolMask(4, 4)}, none, none), lathe.ErrShape,
			`transformer: argument "src_mask"`},
		{"transformer/tgt_mask", transform(x(2, 5, 8), x(2, 4, 8), none, AttentionMasks{Attn: GenerateSquareSubsequentMask(5, lathe.CPU)}, none),
			lathe.ErrShape, `transformer: argument "tgt_mask"`},
		{"transformer/memory_key_padding", transform(x(2, 5, 8), x(2, 4, 8), none, none, AttentionMasks{KeyPadding: boolMask(2, 4)}), lathe.ErrShape,
			`transformer: argument "memory_key_padding_mask"`},
		{"transformer/num_encoder_layers", NewTransformer(8, 2, NumEncoderLayers(-1)).Forward(x(2, 5, 8)), lathe.ErrValue, `argument "num_encoder_layers"`},
		{"transformer/nhead", NewTransformer(8, 3).Forward(x(2, 5, 8)), lathe.ErrShape, `transformer: argument "nhead"`},
		{"transformer/foreign_option", NewTransformer(8, 2, KDim(4)).Forward(x(2, 5, 8)), lathe.ErrValue, `argument "kdim"`},
		{"transformer/nil", (*Transformer)(nil).Transform(x(2, 5, 8), x(2, 4, 8), none, none, none), lathe.ErrValue, `transformer`},
		{"transformer/by_hand", (&Transformer{DModel: 8}).Transform(x(2, 5, 8), x(2, 4, 8), none, none, none), lathe.ErrValue, `argument "m"`},
		{"mha/kdim", NewMultiheadAttention(8, 2, KDim(-1)).Forward(x(2, 5, 8)), lathe.ErrShape, `multihead_attention: argument "kdim"`},
		{"mha/vdim_huge", NewMultiheadAttention(8, 2, VDim(math.MaxInt)).Forward(x(2, 5, 8)), lathe.ErrShape, `argument "vdim"`},
		{"mha/key_kdim", kv.Attend(x(2, 5, 8), x(2, 4, 8), x(2, 4, 5), none), lathe.ErrShape, `argument "key"`},
		{"mha/value_vdim", kv.Attend(x(2, 5, 8), x(2, 4, 6), x(2, 4, 6), none), lathe.ErrShape, `argument "value"`},
		{"mha/self_with_kdim", kv.Forward(x(2, 5, 8)), lathe.ErrShape, `argument "key"`},
		{"mha/extra_key_padding", extra.Attend(x(2, 5, 8), x(2, 4, 8), x(2, 4, 8), AttentionMasks{KeyPadding: boolMask(2, 6)}), lathe.ErrShape,
			`argument "key_padding_mask"`},
		{"mha/extra_attn_mask", extra.Attend(x(2, 5, 8), x(2, 4, 8), x(2, 4, 8), AttentionMasks{Attn: boolMask(5, 6)}), lathe.ErrShape,
			`argument "attn_mask"`},
		{"mha/seq_first_batch", seqFirst.Attend(x(5, 2, 8), x(4, 3, 8), x(4, 3, 8), none), lathe.ErrShape, `argument "key"`},
		{"mha/seq_first_positions", seqFirst.Attend(x(5, 2, 8), x(4, 2, 8), x(3, 2, 8), none), lathe.ErrShape, `argument "value"`},
		{"mha/bias_k_alone", func() *lathe.Tensor {
			m := NewMultiheadAttention(8, 2, AddBiasKV())
			m.BiasV = nil
			return m.Forward(x(2, 5, 8))
		}(), lathe.ErrValue, `multihead_attention: argument "m"`},
		{"mha/q_proj_shape", func() *lathe.Tensor {
			m := NewMultiheadAttention(8, 2, KDim(6))
			m.KDim = 7
			return m.Attend(x(2, 5, 8), x(2, 4, 7), x(2, 4, 8), none)
		}(), lathe.ErrValue, `argument "m"`},
		{"mha/by_hand_no_weights", (&MultiheadAttention{EmbedDim: 8, NumHeads: 2, OutProj: &Linear{}}).Forward(x(2, 5, 8)), lathe.ErrValue, `argument "m"`},
	}
	// Tensors on another device than the model, where a second device opens.
	if dev := lathe.WGPU(0); slices.Contains(lathe.Devices(), dev) {
		cases = append(cases,
			badCase{"transformer/src_device", transform(x(2, 5, 8).To(dev), x(2, 4, 8), none, none, none), lathe.ErrDevice, `transformer: argument "src"`},
			badCase{"transformer/tgt_mask_device", transform(x(2, 5, 8), x(2, 4, 8), none, AttentionMasks{Attn: GenerateSquareSubsequentMask(4, dev)}, none),
				lathe.ErrDevice, `transformer: argument "tgt_mask"`},
			badCase{"decoder/memory_device", dec.Decode(x(2, 5, 8), x(2, 4, 8).To(dev), none, none), lathe.ErrDevice, `argument "memory"`},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.got.Err()
			var le *lathe.Error
			if !errors.Is(err, c.kind) || !errors.As(err, &le) {
				t.Fatalf("error %v, want a *lathe.Error of kind %v", err, c.kind)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not name %s", err, c.want)
			}
		})
	}
	// Nil masks are no masks: the zero AttentionMasks runs.
	if y := tr.Transform(x(2, 5, 8), x(2, 4, 8), none, none, none); y.Err() != nil || !slices.Equal(y.Shape(), []int{2, 4, 8}) {
		t.Errorf("no masks: %v %v", y.Shape(), y.Err())
	}
}
