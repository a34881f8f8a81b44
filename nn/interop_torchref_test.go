package nn

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// Checkpoint interoperability with PyTorch 1.13, layer by layer, as a user
// who downloads published weights meets it. testdata/interop (written by
// build/torchref/interop.py) holds, per case, a torch module's state_dict
// as torch names and shapes it (buffers included; F32, or F16/BF16 where
// the case says), and in refs.safetensors the case's inputs and torch's
// outputs. Each case checks that:
//   - lathe's module has exactly torch's state-dict names, shapes and
//     dtypes, and Load reads the file strictly (with CastDType into a
//     float32 model for a half-precision file, and without it into a model
//     of the file's dtype);
//   - the forward outputs match torch's in eval mode and, where the case
//     has them, a training-mode step and the buffers after it;
//   - Save of the loaded module writes the file's names, dtypes, shapes
//     and bytes back, so torch's load_state_dict(strict=True) takes it.

type interopCase struct {
	name string
	cfg  map[string]any
	// names is torch's state dict, in torch's order: name, dtype, shape.
	names [][3]any
	raw   []byte
	refs  map[string]*lathe.Tensor
}

func readInterop(t *testing.T) []interopCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "interop", "refs.safetensors"))
	if err != nil {
		t.Fatalf("%v (run build/torchref/interop.py)", err)
	}
	entries, meta, err := readHeaderMeta(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	data := raw[8+binary.LittleEndian.Uint64(raw):]
	var cases []interopCase
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range meta {
			if !yield(k) {
				return
			}
		}
	}) {
		c := interopCase{name: name, refs: map[string]*lathe.Tensor{}}
		if err := json.Unmarshal([]byte(meta[name]), &c.cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, n := range c.cfg["names"].([]any) {
			n := n.([]any)
			c.names = append(c.names, [3]any{n[0], n[1], n[2]})
		}
		if c.raw, err = os.ReadFile(filepath.Join("testdata", "interop", name+".safetensors")); err != nil {
			t.Fatal(err)
		}
		for k, e := range entries {
			if !strings.HasPrefix(k, name+"/") {
				continue
			}
			dt, _ := stDType(e.DType)
			shape := make([]int, len(e.Shape))
			for i, s := range e.Shape {
				shape[i] = int(s)
			}
			c.refs[strings.TrimPrefix(k, name+"/")] = decode(bytes.NewReader(data[e.Offsets[0]:e.Offsets[1]]), dt, shape)
		}
		cases = append(cases, c)
	}
	if len(cases) < 71 {
		t.Fatalf("%d reference cases (run build/torchref/interop.py)", len(cases))
	}
	return cases
}

func (c interopCase) bool(key string) bool { b, _ := c.cfg[key].(bool); return b }

func (c interopCase) float(key string, def float64) float64 {
	if f, ok := c.cfg[key].(float64); ok {
		return f
	}
	return def
}

func (c interopCase) ref(t *testing.T, key string) *lathe.Tensor {
	t.Helper()
	r, ok := c.refs[key]
	if !ok {
		t.Fatalf("no reference %q", key)
	}
	return r
}

// fileDType is the dtype of the case's float tensors in its file.
func (c interopCase) fileDType() lathe.DType {
	for _, n := range c.names {
		if dt, _ := stDType(n[1].(string)); dt.IsFloat() {
			return dt
		}
	}
	return lathe.Float32
}

// interopRun is a module built for a case and how to run it: the outputs
// by reference key.
type interopRun struct {
	m   Module
	run func() map[string]*lathe.Tensor
}

// build makes the case's lathe module with parameters of dtype dt.
// Its inputs go to dev when run (the caller moves the module).
func (c interopCase) build(t *testing.T, dt lathe.DType, dev lathe.Device) interopRun {
	t.Helper()
	if r, ok := buildConvLayerCase(c, t, dt, dev); ok {
		return r
	}
	if r, ok := buildNormLayerCase(c, t, dt, dev); ok {
		return r
	}
	if r, ok := buildExtrasCase(c, t, dt, dev); ok {
		return r
	}
	w := WithDType(dt)
	in := func(key string) *lathe.Tensor {
		r := c.ref(t, key)
		if r.DType().IsFloat() {
			r = r.Cast(dt)
		}
		return r.To(dev)
	}
	one := func(m Module, x string) interopRun {
		return interopRun{m, func() map[string]*lathe.Tensor { return map[string]*lathe.Tensor{"out": m.Forward(in(x))} }}
	}
	name := c.name
	switch {
	case strings.HasPrefix(name, "linear"):
		opts := []Option{w}
		if !c.bool("bias") {
			opts = append(opts, NoBias())
		}
		return one(NewLinear(5, 3, opts...), "x")
	case name == "conv2d":
		return one(NewConv2d(4, 6, 0, KernelSize(3, 2), Stride(2, 1), Padding(1, 0), Dilation(1, 2), Groups(2), w), "x")
	case name == "conv2d_nobias_same":
		return one(NewConv2d(3, 4, 3, PaddingSame(), NoBias(), w), "x")
	case name == "conv2d_same_even":
		return one(NewConv2d(2, 3, 0, KernelSize(2, 4), PaddingSame(), Dilation(1, 2), w), "x")
	case name == "conv2d_bf16":
		return one(NewConv2d(3, 4, 3, Padding(1), w), "x")
	case strings.HasPrefix(name, "batchnorm2d"):
		b := NewBatchNorm2d(3, w)
		b.Momentum, b.Eps = c.float("momentum", 0.1), c.float("eps", 1e-5)
		return one(b, "x")
	case name == "groupnorm":
		g := NewGroupNorm(2, 6, w)
		g.Eps = c.float("eps", 1e-5)
		return one(g, "x")
	case name == "layernorm":
		l := NewLayerNorm([]int{3, 4}, w)
		l.Eps = c.float("eps", 1e-5)
		return one(l, "x")
	case name == "embedding":
		return one(NewEmbedding(10, 4, w), "idx")
	case strings.HasPrefix(name, "rnn_"), strings.HasPrefix(name, "lstm_"), strings.HasPrefix(name, "gru_"):
		opts := []Option{w}
		if n := c.float("num_layers", 1); n != 1 {
			opts = append(opts, NumLayers(int(n)))
		}
		if c.bool("bidirectional") {
			opts = append(opts, Bidirectional())
		}
		if c.bool("batch_first") {
			opts = append(opts, BatchFirst())
		}
		if b, ok := c.cfg["bias"].(bool); ok && !b {
			opts = append(opts, NoBias())
		}
		if s, _ := c.cfg["nonlinearity"].(string); s != "" {
			opts = append(opts, Nonlinearity(s))
		}
		switch {
		case strings.HasPrefix(name, "lstm"):
			m := NewLSTM(4, 3, opts...)
			return interopRun{m, func() map[string]*lathe.Tensor {
				out, hn, cn := m.ForwardState(in("x"), in("h0"), in("c0"))
				return map[string]*lathe.Tensor{"out": out, "hn": hn, "cn": cn}
			}}
		case strings.HasPrefix(name, "gru"):
			m := NewGRU(4, 3, opts...)
			return interopRun{m, func() map[string]*lathe.Tensor {
				out, hn := m.ForwardState(in("x"), in("h0"))
				return map[string]*lathe.Tensor{"out": out, "hn": hn}
			}}
		}
		m := NewRNN(4, 3, opts...)
		return interopRun{m, func() map[string]*lathe.Tensor {
			out, hn := m.ForwardState(in("x"), in("h0"))
			return map[string]*lathe.Tensor{"out": out, "hn": hn}
		}}
	case name == "rnncell":
		m := NewRNNCell(4, 3, w)
		return interopRun{m, func() map[string]*lathe.Tensor { return map[string]*lathe.Tensor{"h": m.Step(in("x"), in("h0"))} }}
	case name == "grucell":
		m := NewGRUCell(4, 3, w)
		return interopRun{m, func() map[string]*lathe.Tensor { return map[string]*lathe.Tensor{"h": m.Step(in("x"), in("h0"))} }}
	case name == "lstmcell":
		m := NewLSTMCell(4, 3, w)
		return interopRun{m, func() map[string]*lathe.Tensor {
			h, cc := m.Step(in("x"), in("h0"), in("c0"))
			return map[string]*lathe.Tensor{"h": h, "c": cc}
		}}
	case strings.HasPrefix(name, "mha"):
		opts := []Option{w}
		if b, ok := c.cfg["bias"].(bool); ok && !b {
			opts = append(opts, NoBias())
		}
		if k := c.float("kdim", 0); k != 0 {
			opts = append(opts, KDim(int(k)))
		}
		if v := c.float("vdim", 0); v != 0 {
			opts = append(opts, VDim(int(v)))
		}
		if c.bool("add_bias_kv") {
			opts = append(opts, AddBiasKV())
		}
		m := NewMultiheadAttention(8, 2, opts...)
		return interopRun{m, func() map[string]*lathe.Tensor {
			return map[string]*lathe.Tensor{"out": m.Attend(in("q"), in("k"), in("v"), AttentionMasks{})}
		}}
	case name == "encoder_layer":
		return one(NewTransformerEncoderLayer(8, 2, DimFeedforward(16), DropoutProb(0), w), "x")
	case name == "encoder_layer_pre_gelu_seqfirst":
		l := NewTransformerEncoderLayer(8, 2, DimFeedforward(16), DropoutProb(0), Activation("gelu"), NormFirst(), LayerNormEps(1e-6), SeqFirst(), w)
		return one(l, "x")
	case name == "decoder_layer":
		l := NewTransformerDecoderLayer(8, 2, DimFeedforward(16), DropoutProb(0), w)
		return interopRun{l, func() map[string]*lathe.Tensor {
			return map[string]*lathe.Tensor{"out": l.Decode(in("tgt"), in("mem"), AttentionMasks{}, AttentionMasks{})}
		}}
	case name == "encoder":
		s := NewTransformerEncoder(func() *TransformerEncoderLayer {
			return NewTransformerEncoderLayer(8, 2, DimFeedforward(16), DropoutProb(0), w)
		}, 2, NewLayerNorm([]int{8}, w))
		return one(s, "x")
	case name == "decoder":
		s := NewTransformerDecoder(func() *TransformerDecoderLayer {
			return NewTransformerDecoderLayer(8, 2, DimFeedforward(16), DropoutProb(0), w)
		}, 2, NewLayerNorm([]int{8}, w))
		return interopRun{s, func() map[string]*lathe.Tensor {
			return map[string]*lathe.Tensor{"out": s.Decode(in("tgt"), in("mem"), AttentionMasks{}, AttentionMasks{})}
		}}
	case name == "transformer":
		m := NewTransformer(8, 2, NumEncoderLayers(1), NumDecoderLayers(1), DimFeedforward(16), DropoutProb(0), w)
		return interopRun{m, func() map[string]*lathe.Tensor {
			return map[string]*lathe.Tensor{"out": m.Transform(in("src"), in("tgt"), AttentionMasks{}, AttentionMasks{}, AttentionMasks{})}
		}}
	case name == "sequential_nested":
		m := Sequential(NewConv2d(3, 4, 3, Padding(1), w), NewBatchNorm2d(4, w), ReLU{}, NewMaxPool2d(2),
			Sequential(Flatten{}, NewLinear(16, 5, w), GELU{Tanh: true}), NewLayerNorm([]int{5}, w))
		return one(m, "x")
	case name == "stateless":
		m := Sequential(NewAvgPool2d(2, Stride(1), Padding(1), ExcludePadding()),
			NewUpsample(ScaleFactor(2), Mode("bilinear")), NewAdaptiveAvgPool2d(3, 2),
			LeakyReLU{Slope: 0.2}, SiLU{}, Tanh{}, Sigmoid{}, NewDropout(0.5), GELU{})
		return one(m, "x")
	}
	t.Fatalf("no lathe module for case %q", name)
	return interopRun{}
}

// interopClose compares got with torch's float32 want: within 1e-5
// relative (2e-5 absolute near 0).
func interopClose(t *testing.T, what string, got, want *lathe.Tensor) {
	t.Helper()
	if err := got.Err(); err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Errorf("%s: shape %v, torch's %v", what, got.Shape(), want.Shape())
		return
	}
	g, err := got.To(lathe.CPU).Cast(lathe.Float64).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	w, _ := want.Cast(lathe.Float64).Float64s()
	worst, at := 0.0, -1
	for i := range w {
		d := math.Abs(g[i]-w[i]) / math.Max(1, math.Abs(w[i]))
		if !(d <= worst) {
			worst, at = d, i
		}
	}
	if worst > 2e-5 {
		t.Errorf("%s: differs from torch by %.3g (relative) at %d: %v, torch %v", what, worst, at, g[at], w[at])
	}
}

// checkNames compares the module's state (Parameters and Buffers) with
// torch's state dict: the same names, shapes and dtypes.
func checkNames(t *testing.T, m Module, names [][3]any, fileDT lathe.DType) {
	t.Helper()
	torch := map[string]string{}
	for _, n := range names {
		var shape []int
		for _, s := range n[2].([]any) {
			shape = append(shape, int(s.(float64)))
		}
		dt := n[1].(string)
		torch[n[0].(string)] = dt + shapeString(shape)
	}
	ours := map[string]string{}
	for _, p := range state(m) {
		ours[p.Name] = stNames[p.T.DType()] + shapeString(p.T.Shape())
	}
	for k, v := range torch {
		if o, ok := ours[k]; !ok {
			t.Errorf("torch's %s %s is not in lathe's module", k, v)
		} else if o != v {
			t.Errorf("%s is %s in lathe's module but %s in torch's", k, o, v)
		}
	}
	for k, v := range ours {
		if _, ok := torch[k]; !ok {
			t.Errorf("lathe's %s %s is not in torch's state dict", k, v)
		}
	}
}

// checkSaved compares Save's file of m with torch's: the same names,
// dtypes, shapes and data bytes. The names in filled, which the torch file
// lacks and torch's load_state_dict fills in, must hold the value given;
// those in as1d, 0-d tensors that the torch file holds with shape [1], are
// saved 0-d, as torch's module holds them.
func checkSaved(t *testing.T, m Module, torchRaw []byte, filled map[string]any, as1d []any) {
	t.Helper()
	var buf bytes.Buffer
	if err := Save(&buf, m); err != nil {
		t.Fatalf("save: %v", err)
	}
	read := func(raw []byte) (map[string]stEntry, []byte) {
		e, _, err := readHeaderMeta(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		return e, raw[8+binary.LittleEndian.Uint64(raw):]
	}
	ours, od := read(buf.Bytes())
	theirs, td := read(torchRaw)
	for k, e := range theirs {
		o, ok := ours[k]
		switch {
		case !ok:
			t.Errorf("saved file lacks torch's %s", k)
		case slices.Contains(as1d, any(k)) && slices.Equal(e.Shape, []int64{1}):
			if o.DType != e.DType || len(o.Shape) != 0 || !bytes.Equal(od[o.Offsets[0]:o.Offsets[1]], td[e.Offsets[0]:e.Offsets[1]]) {
				t.Errorf("saved %s is %s%v, want torch's %s[] with its value", k, o.DType, o.Shape, e.DType)
			}
		case o.DType != e.DType || !slices.Equal(o.Shape, e.Shape):
			t.Errorf("saved %s is %s%v, torch's %s%v", k, o.DType, o.Shape, e.DType, e.Shape)
		case !bytes.Equal(od[o.Offsets[0]:o.Offsets[1]], td[e.Offsets[0]:e.Offsets[1]]):
			t.Errorf("saved %s has other bytes than torch's", k)
		}
	}
	for k, e := range ours {
		if _, ok := theirs[k]; ok {
			continue
		}
		v, ok := filled[k].(float64)
		switch dt, _ := stDType(e.DType); {
		case !ok:
			t.Errorf("saved file has %s, which torch's state dict lacks", k)
		case dt != lathe.Int64 || len(e.Shape) != 0:
			t.Errorf("saved %s is %s%v, torch's I64[]", k, e.DType, e.Shape)
		default:
			if got := int64(binary.LittleEndian.Uint64(od[e.Offsets[0]:])); got != int64(v) {
				t.Errorf("saved %s is %d, where torch's load_state_dict sets %v", k, got, v)
			}
		}
	}
}

func TestInteropTorchCheckpoints(t *testing.T) {
	cases := readInterop(t)
	for _, dev := range []lathe.Device{lathe.CPU, lathe.WGPU(0), lathe.CUDA(0)} {
		t.Run(dev.String(), func(t *testing.T) {
			skipUnavailable(t, dev)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.check(t, dev) })
			}
		})
	}
}

// check runs the case's checks with the module on dev.
func (c interopCase) check(t *testing.T, dev lathe.Device) {
	fileDT := c.fileDType()
	// The model in the file's dtype loads strictly and saves the file back.
	r := c.build(t, fileDT, dev)
	if err := r.m.To(dev); err != nil {
		t.Fatal(err)
	}
	if err := Err(r.m); err != nil {
		t.Fatal(err)
	}
	checkNames(t, r.m, c.names, fileDT)
	if err := Load(bytes.NewReader(c.raw), r.m); err != nil {
		t.Fatalf("strict load: %v", err)
	}
	filled, _ := c.cfg["filled"].(map[string]any)
	as1d, _ := c.cfg["as_1d"].([]any)
	checkSaved(t, r.m, c.raw, filled, as1d)
	if fileDT != lathe.Float32 {
		// A float32 model reads a half-precision file with CastDType,
		// as torch's load_state_dict copies into float32 weights.
		r = c.build(t, lathe.Float32, dev)
		if err := r.m.To(dev); err != nil {
			t.Fatal(err)
		}
		if err := Load(bytes.NewReader(c.raw), r.m, CastDType()); err != nil {
			t.Fatalf("load with CastDType: %v", err)
		}
	}
	r.m.Train(false)
	outs := r.run()
	for k, got := range outs {
		interopClose(t, k, got, c.ref(t, k))
	}
	if _, ok := c.refs["train.out"]; !ok {
		return
	}
	r.m.Train(true)
	interopClose(t, "train.out", r.run()["out"], c.ref(t, "train.out"))
	for _, p := range Buffers(r.m) {
		want := c.ref(t, "train."+p.Name)
		if p.T.DType() == lathe.Int64 {
			g, _ := p.T.To(lathe.CPU).Int64s()
			w, _ := want.Int64s()
			if !slices.Equal(g, w) || !slices.Equal(p.T.Shape(), want.Shape()) {
				t.Errorf("train.%s: %v%v, torch's %v%v", p.Name, g, p.T.Shape(), w, want.Shape())
			}
			continue
		}
		interopClose(t, "train."+p.Name, p.T, want)
	}
}
