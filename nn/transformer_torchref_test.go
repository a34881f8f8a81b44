package nn

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// The transformer layers against torch 1.13: each file of
// testdata/transformer (written by build/torchref/transformer_ref.py) holds
// a module's weights under torch's state-dict names, its inputs and masks,
// and torch's output and gradients of L = Σ out·u (+ Σ weights·uw) in
// float64. Each case is loaded into lathe's module with Load and run in
// float64 and float32 on the cpu and cuda:0 and in float32 on wgpu:0 (a
// device that does not open is skipped by name).

// torchCase is one reference file: its metadata, its bytes (for Load) and
// its ref.* tensors on the cpu.
type torchCase struct {
	name string
	meta map[string]string
	raw  []byte
	refs map[string]*lathe.Tensor
}

func readTorchCases(t *testing.T) []torchCase {
	paths, err := filepath.Glob("testdata/transformer/*.safetensors")
	if err != nil || len(paths) < 31 {
		t.Fatalf("reference files: %d, %v (run build/torchref/transformer_ref.py)", len(paths), err)
	}
	var cases []torchCase
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		entries, meta, err := readHeaderMeta(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		data := raw[8+binary.LittleEndian.Uint64(raw):]
		c := torchCase{name: strings.TrimSuffix(filepath.Base(p), ".safetensors"), meta: meta, raw: raw, refs: map[string]*lathe.Tensor{}}
		for name, e := range entries {
			if !strings.HasPrefix(name, "ref.") {
				continue
			}
			dt, _ := stDType(e.DType)
			shape := make([]int, len(e.Shape))
			for i, s := range e.Shape {
				shape[i] = int(s)
			}
			c.refs[strings.TrimPrefix(name, "ref.")] = decode(bytes.NewReader(data[e.Offsets[0]:e.Offsets[1]]), dt, shape)
		}
		cases = append(cases, c)
	}
	return cases
}

func (c torchCase) int(t *testing.T, key string) int {
	n, err := strconv.Atoi(c.meta[key])
	if err != nil {
		t.Fatalf("metadata %s: %v", key, err)
	}
	return n
}

func (c torchCase) float(t *testing.T, key string) float64 {
	f, err := strconv.ParseFloat(c.meta[key], 64)
	if err != nil {
		t.Fatalf("metadata %s: %v", key, err)
	}
	return f
}

// on is ref name in dt (a Bool mask stays Bool) on dev, or nil if the case
// has none.
func (c torchCase) on(name string, dt lathe.DType, dev lathe.Device) *lathe.Tensor {
	r, ok := c.refs[name]
	if !ok {
		return nil
	}
	if r.DType() != lathe.Bool {
		r = r.Cast(dt)
	}
	return r.To(dev)
}

// run builds the case's module in dt on dev, loads torch's weights and
// returns lathe's output, weights (nil if none) and the gradients of the
// loss by ref name ("grad.x", "grad.self_attn.in_proj_weight").
func (c torchCase) run(t *testing.T, dt lathe.DType, dev lathe.Device) map[string]*lathe.Tensor {
	e, h := c.int(t, "d_model"), c.int(t, "nhead")
	params := []Option{WithDType(dt), OnDevice(dev)}
	layer := append([]Option{DimFeedforward(c.int(t, "dim_feedforward")), DropoutProb(0), Activation(c.meta["activation"])}, params...)
	if c.meta["norm_first"] == "1" {
		layer = append(layer, NormFirst())
	}
	inputs := map[string]*lathe.Tensor{}
	input := func(name string) *lathe.Tensor {
		if x := c.on(name, dt, dev); x != nil {
			inputs[name] = x.RequireGrad()
		}
		return inputs[name]
	}
	x := input("x")
	causal := c.meta["causal"] == "1"
	var m Module
	var run func() (out, weights *lathe.Tensor)
	switch kind := c.meta["kind"]; kind {
	case "encoder":
		l := NewTransformerEncoderLayer(e, h, append(layer, LayerNormEps(c.float(t, "eps")))...)
		masks := AttentionMasks{Attn: c.on("src_mask", dt, dev), KeyPadding: c.on("src_key_padding_mask", dt, dev), Causal: causal}
		m, run = l, func() (*lathe.Tensor, *lathe.Tensor) { return l.Encode(x, masks), nil }
	case "decoder":
		l := NewTransformerDecoderLayer(e, h, append(layer, LayerNormEps(c.float(t, "eps")))...)
		memory := input("memory")
		tgt := AttentionMasks{Attn: c.on("tgt_mask", dt, dev), KeyPadding: c.on("tgt_key_padding_mask", dt, dev), Causal: causal}
		mem := AttentionMasks{Attn: c.on("memory_mask", dt, dev), KeyPadding: c.on("memory_key_padding_mask", dt, dev)}
		m, run = l, func() (*lathe.Tensor, *lathe.Tensor) { return l.Decode(x, memory, tgt, mem), nil }
	case "encoder_stack", "decoder_stack", "transformer":
		m, run = c.stack(t, kind, layer, params, input, dt, dev)
	case "mha", "mha_rotary":
		opts := params
		for key, opt := range map[string]Option{"add_bias_kv": AddBiasKV(), "add_zero_attn": AddZeroAttn(), "seq_first": SeqFirst()} {
			if c.meta[key] == "1" {
				opts = append(opts, opt)
			}
		}
		if _, ok := c.meta["kdim"]; ok {
			opts = append(opts, KDim(c.int(t, "kdim")), VDim(c.int(t, "vdim")))
		}
		a := NewMultiheadAttention(e, h, opts...)
		key, value := x, x
		if k := input("key"); k != nil {
			key, value = k, k
		}
		if v := input("value"); v != nil {
			value = v
		}
		masks := AttentionMasks{Attn: c.on("attn_mask", dt, dev), KeyPadding: c.on("key_padding_mask", dt, dev), Causal: causal}
		if kind == "mha_rotary" {
			a.RotaryBase = c.float(t, "rotary_base")
		}
		m, run = a, func() (*lathe.Tensor, *lathe.Tensor) {
			switch c.meta["need_weights"] {
			case "avg":
				return a.AttendWeights(x, key, value, masks, true)
			case "per_head":
				return a.AttendWeights(x, key, value, masks, false)
			}
			return a.Attend(x, key, value, masks), nil
		}
	case "rms_norm":
		var shape []int
		for _, s := range strings.Split(c.meta["shape"], ",") {
			n, _ := strconv.Atoi(s)
			shape = append(shape, n)
		}
		n := NewRMSNorm(shape, params...)
		n.Eps = c.float(t, "eps")
		m, run = n, func() (*lathe.Tensor, *lathe.Tensor) { return n.Forward(x), nil }
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	var keys Keys
	if err := Load(bytes.NewReader(c.raw), m, NonStrict(&keys), CastDType()); err != nil {
		t.Fatal(err)
	}
	if len(keys.Missing) > 0 || slices.ContainsFunc(keys.Unexpected, func(k string) bool { return !strings.HasPrefix(k, "ref.") }) {
		t.Fatalf("torch's names do not match the module's: missing %v, unexpected %v", keys.Missing, keys.Unexpected)
	}
	out, weights := run()
	got := map[string]*lathe.Tensor{"out": out}
	loss := out.Mul(c.on("u", dt, dev)).Sum()
	if weights != nil {
		got["weights"] = weights
		loss = loss.Add(weights.Mul(c.on("uw", dt, dev)).Sum())
	}
	var names []string
	var xs []*lathe.Tensor
	for _, p := range m.Parameters() {
		names, xs = append(names, p.Name), append(xs, p.T)
	}
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		names, xs = append(names, name), append(xs, inputs[name])
	}
	grads, err := lathe.Grad(loss, xs)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range grads {
		got["grad."+names[i]] = g
	}
	return got
}

// stack builds the case's TransformerEncoder, TransformerDecoder or
// Transformer and its run, with torch's masks; layer holds the layers'
// options.
func (c torchCase) stack(t *testing.T, kind string, layer, params []Option, input func(string) *lathe.Tensor, dt lathe.DType, dev lathe.Device) (
	Module, func() (*lathe.Tensor, *lathe.Tensor)) {
	e, h, n := c.int(t, "d_model"), c.int(t, "nhead"), c.int(t, "num_layers")
	layer = append(layer, LayerNormEps(c.float(t, "eps")))
	if c.meta["seq_first"] == "1" {
		layer = append(layer, SeqFirst())
	}
	var norm *LayerNorm
	if c.meta["norm"] == "1" {
		norm = NewLayerNorm([]int{e}, params...)
	}
	causal := c.meta["causal"] == "1"
	x := input("x")
	switch kind {
	case "encoder_stack":
		s := NewTransformerEncoder(func() *TransformerEncoderLayer { return NewTransformerEncoderLayer(e, h, layer...) }, n, norm)
		masks := AttentionMasks{Attn: c.on("mask", dt, dev), KeyPadding: c.on("src_key_padding_mask", dt, dev), Causal: causal}
		return s, func() (*lathe.Tensor, *lathe.Tensor) { return s.Encode(x, masks), nil }
	case "decoder_stack":
		s := NewTransformerDecoder(func() *TransformerDecoderLayer { return NewTransformerDecoderLayer(e, h, layer...) }, n, norm)
		memory := input("memory")
		tgt := AttentionMasks{Attn: c.on("tgt_mask", dt, dev), KeyPadding: c.on("tgt_key_padding_mask", dt, dev), Causal: causal}
		mem := AttentionMasks{Attn: c.on("memory_mask", dt, dev), KeyPadding: c.on("memory_key_padding_mask", dt, dev)}
		return s, func() (*lathe.Tensor, *lathe.Tensor) { return s.Decode(x, memory, tgt, mem), nil }
	}
	m := NewTransformer(e, h, append(layer, NumEncoderLayers(n), NumDecoderLayers(c.int(t, "num_decoder_layers")))...)
	tgt := input("tgt")
	tgtMasks := AttentionMasks{Attn: c.on("tgt_mask", dt, dev), KeyPadding: c.on("tgt_key_padding_mask", dt, dev)}
	if c.meta["square_mask"] == "1" { // torch's generate_square_subsequent_mask, made by lathe's
		tgtMasks.Attn = GenerateSquareSubsequentMask(tgt.Dim(1-m.Decoder.Layers[0].SelfAttn.batchDim()), dev)
	}
	src := AttentionMasks{Attn: c.on("src_mask", dt, dev), KeyPadding: c.on("src_key_padding_mask", dt, dev)}
	mem := AttentionMasks{Attn: c.on("memory_mask", dt, dev), KeyPadding: c.on("memory_key_padding_mask", dt, dev)}
	return m, func() (*lathe.Tensor, *lathe.Tensor) { return m.Transform(x, tgt, src, tgtMasks, mem), nil }
}

// compare checks every ref out, weights and grad.* against got, within
// tol·(1 + |want|), and returns the largest absolute difference.
func (c torchCase) compare(t *testing.T, got map[string]*lathe.Tensor, tol float64) float64 {
	worst := 0.0
	for name, ref := range c.refs {
		if name != "out" && name != "weights" && !strings.HasPrefix(name, "grad.") {
			continue
		}
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: lathe computed none", name)
			continue
		}
		want, _ := ref.Float64s()
		have, err := g.To(lathe.CPU).Cast(lathe.Float64).Float64s()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !slices.Equal(g.Shape(), ref.Shape()) {
			t.Errorf("%s: shape %v, torch's %v", name, g.Shape(), ref.Shape())
			continue
		}
		for i := range want {
			d := math.Abs(have[i] - want[i])
			if !(d <= tol*(1+math.Abs(want[i]))) {
				t.Errorf("%s[%d] = %.12g, torch %.12g", name, i, have[i], want[i])
				break
			}
			worst = max(worst, d)
		}
	}
	return worst
}

func TestTransformerMatchesTorch(t *testing.T) {
	cases := readTorchCases(t)
	for _, cfg := range []struct {
		dt  lathe.DType
		dev lathe.Device
		tol float64
	}{{lathe.Float64, lathe.CPU, 1e-10}, {lathe.Float32, lathe.CPU, 1e-4}, {lathe.Float32, lathe.WGPU(0), 1e-4},
		{lathe.Float64, lathe.CUDA(0), 1e-10}, {lathe.Float32, lathe.CUDA(0), 1e-4}} {
		t.Run(cfg.dev.String()+"/"+cfg.dt.String(), func(t *testing.T) {
			skipUnavailable(t, cfg.dev)
			worst := 0.0
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					d := c.compare(t, c.run(t, cfg.dt, cfg.dev), cfg.tol)
					t.Logf("max abs diff %.3g", d)
					worst = max(worst, d)
				})
			}
			t.Logf("%d cases, max abs diff %.3g (tolerance %g·(1+|torch|))", len(cases), worst, cfg.tol)
		})
	}
}
