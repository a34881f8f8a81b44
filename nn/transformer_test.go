package nn

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// skipUnavailable skips t by the device's name where dev does not open,
// and in a run that emulates another device, which leaves dev to the run
// that started it.
func skipUnavailable(t *testing.T, dev lathe.Device) {
	t.Helper()
	testenv.SkipParentRuns(t, dev.String())
	for _, info := range lathe.DeviceStatus() {
		if info.Device == dev && !info.Available {
			testenv.SkipDevice(t, dev.String(), "%s is unavailable: %s", dev, info.Detail)
		}
	}
}

// Generating token by token with a KVCache gives, at every position, the
// full causal forward's output; so do a first step of several tokens (a
// prompt) followed by single ones, whose queries need the cached offset in
// both the causal mask and the rotary positions.
func TestKVCacheMatchesFullForward(t *testing.T) {
	for _, c := range []struct {
		dt  lathe.DType
		dev lathe.Device
		tol float64
	}{{lathe.Float64, lathe.CPU, 1e-12}, {lathe.Float32, lathe.WGPU(0), 1e-5}} {
		t.Run(c.dev.String(), func(t *testing.T) {
			skipUnavailable(t, c.dev)
			lathe.Seed(3)
			const b, l, e, h = 2, 7, 16, 4
			m := NewMultiheadAttention(e, h, WithDType(c.dt), OnDevice(c.dev))
			m.RotaryBase = 10000
			x := lathe.RandN(lathe.CPU, c.dt, b, l, e).To(c.dev)
			full := m.Attend(x, x, x, AttentionMasks{Causal: true})
			for _, prompt := range []int{1, 3} {
				var cache KVCache
				lathe.NoGrad(func() {
					for pos := 0; pos < l; {
						n := 1
						if pos == 0 {
							n = prompt
						}
						got := m.Step(x.Narrow(1, pos, n), &cache)
						assertClose(t, "step", values(t, got.To(lathe.CPU)), values(t, full.Narrow(1, pos, n).To(lathe.CPU)), c.tol)
						pos += n
						if cache.Len() != pos {
							t.Fatalf("cache holds %d positions after %d", cache.Len(), pos)
						}
					}
				})
				cache.Reset()
				if cache.Len() != 0 {
					t.Fatal("Reset left positions in the cache")
				}
			}
		})
	}
}

// Rotary embeddings turn pairs of coordinates, so they keep each head
// vector's norm, and the score of a rotated query and key depends only on
// their distance; a slice rotated with its offset is the slice of the
// whole rotated.
func TestRotaryProperties(t *testing.T) {
	lathe.Seed(5)
	q := lathe.RandN(lathe.CPU, lathe.Float64, 1, 1, 6, 8)
	k := lathe.RandN(lathe.CPU, lathe.Float64, 1, 1, 6, 8)
	rq, rk := ApplyRotary(q, 0, 10000), ApplyRotary(k, 0, 10000)
	assertClose(t, "norm", values(t, rq.Norm(2, -1)), values(t, q.Norm(2, -1)), 1e-14)
	score := func(q, k *lathe.Tensor, qi, ki int) float64 {
		v := values(t, q.Narrow(2, qi, 1).Mul(k.Narrow(2, ki, 1)).Sum())
		return v[0]
	}
	// Position 1 and 4 against 0 and 3: the same vectors 3 apart, shifted.
	qs, ks := ApplyRotary(q.Narrow(2, 0, 1), 1, 10000), ApplyRotary(k.Narrow(2, 0, 1), 4, 10000)
	q0, k0 := ApplyRotary(q.Narrow(2, 0, 1), 0, 10000), ApplyRotary(k.Narrow(2, 0, 1), 3, 10000)
	assertClose(t, "relative", []float64{score(qs, ks, 0, 0)}, []float64{score(q0, k0, 0, 0)}, 1e-13)
	assertClose(t, "offset", values(t, ApplyRotary(q.Narrow(2, 2, 4), 2, 10000)), values(t, rq.Narrow(2, 2, 4)), 1e-15)
	// Position 0 is the identity.
	assertClose(t, "position 0", values(t, rk.Narrow(2, 0, 1)), values(t, k.Narrow(2, 0, 1)), 0)
	cos, sin := RotaryTables(3, 4, 0, 10000)
	assertClose(t, "cos", values(t, cos.Narrow(0, 1, 1)), []float64{math.Cos(1), math.Cos(0.01), math.Cos(1), math.Cos(0.01)}, 1e-15)
	assertClose(t, "sin", values(t, sin.Narrow(0, 2, 1)), []float64{math.Sin(2), math.Sin(0.02), math.Sin(2), math.Sin(0.02)}, 1e-15)
}

// torch's state-dict names, in torch's order (named_parameters of
// nn.TransformerDecoderLayer in torch 1.13), and torch's defaults.
func TestTransformerNamesAndDefaults(t *testing.T) {
	l := NewTransformerDecoderLayer(8, 2)
	var names []string
	for _, p := range l.Parameters() {
		names = append(names, p.Name)
	}
	want := []string{"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
		"multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias", "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias",
		"linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
		"norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias", "norm3.weight", "norm3.bias"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %v\nwant %v", names, want)
	}
	if s := l.Linear1.Weight.Shape(); !slices.Equal(s, []int{2048, 8}) {
		t.Errorf("linear1.weight %v, want torch's dim_feedforward 2048", s)
	}
	if l.Dropout1.P != 0.1 || l.SelfAttn.Dropout != 0.1 || l.Norm3.Eps != 1e-5 || l.NormFirst {
		t.Errorf("dropout %v, attention dropout %v, eps %v, norm_first %v; want torch's 0.1, 0.1, 1e-5, false",
			l.Dropout1.P, l.SelfAttn.Dropout, l.Norm3.Eps, l.NormFirst)
	}
	if m := NewMultiheadAttention(8, 2, NoBias()); len(m.Parameters()) != 2 || m.Dropout != 0 {
		t.Errorf("NoBias MultiheadAttention has %d parameters, dropout %v", len(m.Parameters()), m.Dropout)
	}
	if s := l.SelfAttn.InProjWeight.Shape(); !slices.Equal(s, []int{24, 8}) {
		t.Errorf("in_proj_weight %v", s)
	}
}

// Dropout of the attention weights acts in training mode only.
func TestMultiheadAttentionDropout(t *testing.T) {
	lathe.Seed(11)
	m := NewMultiheadAttention(8, 2, DropoutProb(0.5))
	x := lathe.RandN(lathe.CPU, lathe.Float32, 2, 5, 8)
	train := values(t, m.Forward(x))
	m.Train(false)
	eval := values(t, m.Forward(x))
	m.Dropout = 0
	m.Train(true)
	assertClose(t, "eval = no dropout", eval, values(t, m.Forward(x)), 0)
	if slices.Equal(train, eval) {
		t.Error("training mode with dropout 0.5 gave the evaluation output")
	}
}

// A second derivative through an encoder layer, with the fused attention
// on the causal path: d/dw Σ(∂L/∂x)² against central differences.
func TestEncoderSecondDerivative(t *testing.T) {
	lathe.Seed(13)
	l := NewTransformerEncoderLayer(4, 2, DimFeedforward(6), DropoutProb(0), Activation("gelu"), WithDType(lathe.Float64))
	x := lathe.RandN(lathe.CPU, lathe.Float64, 1, 3, 4).RequireGrad()
	u := lathe.RandN(lathe.CPU, lathe.Float64, 1, 3, 4)
	w := l.SelfAttn.InProjWeight
	penalty := func(create bool) *lathe.Tensor {
		loss := l.Encode(x, AttentionMasks{Causal: true}).Mul(u).Sum()
		var opts []lathe.GradOption
		if create {
			opts = append(opts, lathe.CreateGraph())
		}
		g, err := lathe.Grad(loss, []*lathe.Tensor{x}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return g[0].Square().Sum()
	}
	g, err := lathe.Grad(penalty(true), []*lathe.Tensor{w})
	if err != nil {
		t.Fatal(err)
	}
	analytic := values(t, g[0])
	base := values(t, w)
	const h = 1e-6
	for _, i := range []int{0, 13, 30, 47} {
		at := func(d float64) float64 {
			v := slices.Clone(base)
			v[i] += d
			*w = *lathe.FromSlice(lathe.CPU, v, 12, 4).RequireGrad()
			return values(t, penalty(false))[0]
		}
		fd := (at(h) - at(-h)) / (2 * h)
		if math.Abs(fd-analytic[i]) > 1e-6*(1+math.Abs(fd)) {
			t.Errorf("∂/∂w[%d]: analytic %.10g, finite differences %.10g", i, analytic[i], fd)
		}
	}
}

// Layers shared by goroutines give each the same result as one alone.
func TestTransformerConcurrent(t *testing.T) {
	lathe.Seed(17)
	l := NewTransformerEncoderLayer(8, 2, DimFeedforward(16), DropoutProb(0))
	x := lathe.RandN(lathe.CPU, lathe.Float32, 2, 5, 8)
	want := values(t, l.Encode(x, AttentionMasks{Causal: true}))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := l.Encode(x, AttentionMasks{Causal: true}).Float32s()
			if err == nil && !slices.Equal(float64s(got), want) {
				err = errors.New("a goroutine's result differs")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func float64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}

// Every argument a caller can get wrong gives an error that names the
// layer and the argument, never a panic, and leaves a cache as it was.
func TestTransformerBadInputs(t *testing.T) {
	f32 := lathe.Float32
	x := func(shape ...int) *lathe.Tensor { return lathe.Zeros(lathe.CPU, f32, shape...) }
	released := func() *lathe.Tensor {
		r := x(2, 5, 8)
		r.Release()
		return r
	}
	boolMask := func(shape ...int) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Bool, shape...) }
	enc := NewTransformerEncoderLayer(8, 2, DimFeedforward(16))
	dec := NewTransformerDecoderLayer(8, 2, DimFeedforward(16))
	mha := NewMultiheadAttention(8, 2)
	encode := func(src *lathe.Tensor, m AttentionMasks) *lathe.Tensor { return enc.Encode(src, m) }
	weights := func(m AttentionMasks) *lathe.Tensor {
		_, w := mha.AttendWeights(x(2, 5, 8), x(2, 4, 8), x(2, 4, 8), m, true)
		return w
	}
	var cache KVCache
	mha.Step(x(2, 3, 8), &cache)
	cached := cache.K

	type badCase struct {
		name string
		got  *lathe.Tensor
		kind error
		want string // in the message: the layer and the argument
	}
	cases := []badCase{
		{"encoder/d_model", encode(x(2, 5, 7), AttentionMasks{}), lathe.ErrShape, `transformer_encoder_layer: argument "src"`},
		{"encoder/rank1", encode(x(8), AttentionMasks{}), lathe.ErrShape, `transformer_encoder_layer: argument "src"`}, // [5, 8] is one sequence, as torch takes it
		{"encoder/rank4", encode(x(1, 2, 5, 8), AttentionMasks{}), lathe.ErrShape, `transformer_encoder_layer: argument "src"`},
		{"encoder/nil_src", encode(nil, AttentionMasks{}), lathe.ErrValue, `"src"`},
		{"encoder/released_src", encode(released(), AttentionMasks{}), lathe.ErrReleased, `"src"`},
		{"encoder/float64_src", encode(lathe.Zeros(lathe.CPU, lathe.Float64, 2, 5, 8), AttentionMasks{}), lathe.ErrDType, `"src"`},
		{"encoder/nhead", NewTransformerEncoderLayer(8, 3).Forward(x(2, 5, 8)), lathe.ErrShape, `transformer_encoder_layer: argument "nhead"`},
		{"encoder/nhead0", NewTransformerEncoderLayer(8, 0).Forward(x(2, 5, 8)), lathe.ErrShape, `"nhead"`},
		{"encoder/d_model0", NewTransformerEncoderLayer(0, 1).Forward(x(2, 5, 8)), lathe.ErrShape, `"d_model"`},
		{"encoder/d_model_huge", NewTransformerEncoderLayer(math.MaxInt/2, 1).Forward(x(2, 5, 8)), lathe.ErrShape, `"d_model"`},
		{"encoder/dim_feedforward", NewTransformerEncoderLayer(8, 2, DimFeedforward(-1)).Forward(x(2, 5, 8)), lathe.ErrShape, `"dim_feedforward"`},
		{"encoder/dim_feedforward_huge", NewTransformerEncoderLayer(8, 2, DimFeedforward(math.MaxInt)).Forward(x(2, 5, 8)), lathe.ErrShape, `"dim_feedforward"`},
		{"encoder/activation", NewTransformerEncoderLayer(8, 2, Activation("tanh")).Forward(x(2, 5, 8)), lathe.ErrValue, `"activation"`},
		{"encoder/dropout", NewTransformerEncoderLayer(8, 2, DropoutProb(1.5)).Forward(x(2, 5, 8)), lathe.ErrValue, `"dropout"`},
		{"encoder/foreign_option", NewTransformerEncoderLayer(8, 2, Stride(2)).Forward(x(2, 5, 8)), lathe.ErrValue, `"stride"`},
		{"encoder/nil_layer", (*TransformerEncoderLayer)(nil).Forward(x(2, 5, 8)), lathe.ErrValue, `transformer_encoder_layer`},
		{"encoder/src_mask_shape", encode(x(2, 5, 8), AttentionMasks{Attn: boolMask(5, 4)}), lathe.ErrShape, `argument "src_mask"`},
		{"encoder/src_mask_3d_heads", encode(x(2, 5, 8), AttentionMasks{Attn: boolMask(2, 5, 5)}), lathe.ErrShape, `argument "src_mask"`},
		{"encoder/src_mask_int", encode(x(2, 5, 8), AttentionMasks{Attn: lathe.Zeros(lathe.CPU, lathe.Int32, 5, 5)}), lathe.ErrDType, `argument "src_mask"`},
		{"encoder/src_mask_released", encode(x(2, 5, 8), AttentionMasks{Attn: func() *lathe.Tensor {
			m := boolMask(5, 5)
			m.Release()
			return m
		}()}), lathe.ErrReleased, `"src_mask"`},
		{"encoder/key_padding_int", encode(x(2, 5, 8), AttentionMasks{KeyPadding: lathe.Zeros(lathe.CPU, lathe.Int32, 2, 5)}), lathe.ErrDType, `argument "src_key_padding_mask"`},
		{"encoder/key_padding_shape", encode(x(2, 5, 8), AttentionMasks{KeyPadding: boolMask(5, 2)}), lathe.ErrShape, `argument "src_key_padding_mask"`},
		{"decoder/forward", dec.Forward(x(2, 5, 8)), lathe.ErrValue, `transformer_decoder_layer: argument "memory"`},
		{"decoder/memory_d_model", dec.Decode(x(2, 5, 8), x(2, 4, 6), AttentionMasks{}, AttentionMasks{}), lathe.ErrShape, `argument "memory"`},
		{"decoder/memory_batch", dec.Decode(x(2, 5, 8), x(3, 4, 8), AttentionMasks{}, AttentionMasks{}), lathe.ErrShape, `argument "memory"`},
		{"decoder/nil_memory", dec.Decode(x(2, 5, 8), nil, AttentionMasks{}, AttentionMasks{}), lathe.ErrValue, `"memory"`},
		{"decoder/memory_mask_shape", dec.Decode(x(2, 5, 8), x(2, 4, 8), AttentionMasks{}, AttentionMasks{Attn: boolMask(5, 5)}), lathe.ErrShape,
			`transformer_decoder_layer: argument "memory_mask"`},
		{"decoder/memory_key_padding", dec.Decode(x(2, 5, 8), x(2, 4, 8), AttentionMasks{}, AttentionMasks{KeyPadding: boolMask(2, 5)}), lathe.ErrShape,
			`argument "memory_key_padding_mask"`},
		{"decoder/tgt_mask", dec.Decode(x(2, 5, 8), x(2, 4, 8), AttentionMasks{Attn: boolMask(5, 4)}, AttentionMasks{}), lathe.ErrShape, `argument "tgt_mask"`},
		{"decoder/nhead", NewTransformerDecoderLayer(6, 4).Forward(x(2, 5, 6)), lathe.ErrShape, `transformer_decoder_layer: argument "nhead"`},
		{"mha/num_heads", NewMultiheadAttention(8, 3).Forward(x(2, 5, 8)), lathe.ErrShape, `multihead_attention: argument "num_heads"`},
		{"mha/embed_dim", mha.Forward(x(2, 5, 6)), lathe.ErrShape, `multihead_attention: argument "query"`},
		{"mha/key_value_lengths", mha.Attend(x(2, 5, 8), x(2, 4, 8), x(2, 3, 8), AttentionMasks{}), lathe.ErrShape, `argument "value"`},
		{"mha/weights_mask", weights(AttentionMasks{Attn: boolMask(5, 5)}), lathe.ErrShape, `argument "attn_mask"`},
		{"mha/weights_nil_key", func() *lathe.Tensor {
			_, w := mha.AttendWeights(x(2, 5, 8), nil, x(2, 4, 8), AttentionMasks{}, false)
			return w
		}(), lathe.ErrValue, `argument "key"`},
		{"mha/released_weight", func() *lathe.Tensor {
			m := NewMultiheadAttention(8, 2)
			m.InProjWeight.Release()
			return m.Forward(x(2, 5, 8))
		}(), lathe.ErrReleased, ``},
		{"mha/nil", (*MultiheadAttention)(nil).Forward(x(2, 5, 8)), lathe.ErrValue, `multihead_attention`},
		{"mha/by_hand", (&MultiheadAttention{EmbedDim: 8, NumHeads: 2, InProjWeight: x(24, 8)}).Forward(x(2, 5, 8)), lathe.ErrValue, `argument "m"`},
		{"mha/rotary_base", func() *lathe.Tensor {
			m := NewMultiheadAttention(8, 2)
			m.RotaryBase = -1
			return m.Forward(x(2, 5, 8))
		}(), lathe.ErrValue, `argument "base"`},
		{"encoder/by_hand", (&TransformerEncoderLayer{SelfAttn: mha}).Forward(x(2, 5, 8)), lathe.ErrValue, `transformer_encoder_layer: argument "l"`},
		{"decoder/by_hand", (&TransformerDecoderLayer{}).Decode(x(2, 5, 8), x(2, 4, 8), AttentionMasks{}, AttentionMasks{}), lathe.ErrValue,
			`transformer_decoder_layer: argument "l"`},
		{"mha/step_nil_cache", mha.Step(x(2, 1, 8), nil), lathe.ErrValue, `argument "cache"`},
		{"mha/step_batch", mha.Step(x(3, 1, 8), &cache), lathe.ErrShape, `argument "cache"`},
		{"mha/step_dtype", mha.Step(lathe.Zeros(lathe.CPU, lathe.Float64, 2, 1, 8), &cache), lathe.ErrShape, `argument "cache"`},
		{"mha/step_x", mha.Step(x(2, 1, 5), &cache), lathe.ErrShape, `argument "x"`},
		{"rotary/odd", ApplyRotary(x(1, 1, 4, 5), 0, 10000), lathe.ErrShape, `rotary_embedding: argument "dim"`},
		{"rotary/offset", ApplyRotary(x(1, 1, 4, 6), -1, 10000), lathe.ErrValue, `argument "offset"`},
		{"rotary/base", ApplyRotary(x(1, 1, 4, 6), 0, math.NaN()), lathe.ErrValue, `argument "base"`},
		{"rotary/int", ApplyRotary(lathe.Zeros(lathe.CPU, lathe.Int64, 4, 6), 0, 10000), lathe.ErrDType, `argument "x"`},
		{"rotary/rank1", ApplyRotary(x(6), 0, 10000), lathe.ErrShape, `argument "x"`},
		{"rms_norm/shape", NewRMSNorm([]int{8}).Forward(x(2, 5)), lathe.ErrShape, `rms_norm: argument "x"`},
		{"rms_norm/negative", NewRMSNorm([]int{-1}).Forward(x(2, 5)), lathe.ErrShape, `rms_norm: argument "shape"`},
		{"rms_norm/nil", NewRMSNorm([]int{8}).Forward(nil), lathe.ErrValue, `argument "x"`},
	}
	// A mask on another device than the query, where a second device opens.
	if dev := lathe.WGPU(0); slices.Contains(lathe.Devices(), dev) {
		cases = append(cases,
			badCase{"encoder/src_mask_device", encode(x(2, 5, 8), AttentionMasks{Attn: boolMask(5, 5).To(dev)}), lathe.ErrDevice, `argument "src_mask"`},
			badCase{"encoder/key_padding_device", encode(x(2, 5, 8), AttentionMasks{KeyPadding: boolMask(2, 5).To(dev)}), lathe.ErrDevice,
				`argument "src_key_padding_mask"`},
			badCase{"encoder/src_device", encode(x(2, 5, 8).To(dev), AttentionMasks{}), lathe.ErrDevice, `argument "src"`},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.got.Err()
			if !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want kind %v", err, c.kind)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not name %s", err, c.want)
			}
		})
	}
	if cache.K != cached || cache.Len() != 3 {
		t.Errorf("failed steps changed the cache: %d positions", cache.Len())
	}
	if err := Err(NewTransformerEncoderLayer(8, 3)); err == nil {
		t.Error("Err of an encoder layer with 3 heads for width 8 is nil")
	}
}

// Empty batches and sequences pass through with their shapes and
// gradients; float16 and bfloat16 layers run and stay near float32's.
func TestTransformerEmptyAndHalf(t *testing.T) {
	lathe.Seed(19)
	enc := NewTransformerEncoderLayer(8, 2, DimFeedforward(16), DropoutProb(0))
	for _, shape := range [][]int{{0, 5, 8}, {2, 0, 8}} {
		x := lathe.Zeros(lathe.CPU, lathe.Float32, shape...).RequireGrad()
		for _, masks := range []AttentionMasks{{Causal: true}, {KeyPadding: lathe.Zeros(lathe.CPU, lathe.Bool, shape[0], shape[1])}} {
			y := enc.Encode(x, masks)
			if !slices.Equal(y.Shape(), shape) {
				t.Fatalf("%v: shape %v, error %v", shape, y.Shape(), y.Err())
			}
			if err := y.Sum().Backward(); err != nil {
				t.Fatalf("%v: backward: %v", shape, err)
			}
		}
	}
	x := lathe.RandN(lathe.CPU, lathe.Float32, 2, 5, 8)
	masks := AttentionMasks{Causal: true, KeyPadding: lathe.FromSlice(lathe.CPU, []bool{false, false, false, false, false, false, false, false, true, true}, 2, 5)}
	want := values(t, enc.Encode(x, masks))
	for _, dt := range []lathe.DType{lathe.Float16, lathe.BFloat16} {
		half := NewTransformerEncoderLayer(8, 2, DimFeedforward(16), DropoutProb(0), WithDType(dt))
		for i, p := range half.Parameters() {
			*p.T = *enc.Parameters()[i].T.Detach().Cast(dt).RequireGrad()
		}
		got := values(t, half.Encode(x.Cast(dt), masks))
		assertClose(t, dt.String(), got, want, 0.05)
	}
}
