package nn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// tensors is a Module that is only a list of named tensors, to save and
// load every dtype the format has (parameters are float, buffers need not be).
type tensors []Param

func (ts tensors) Forward(x *lathe.Tensor) *lathe.Tensor { return x }
func (ts tensors) Parameters() []Param                   { return ts }
func (ts tensors) To(dev lathe.Device) error             { return moveParams(ts, dev) }
func (ts tensors) Train(bool)                            {}

func seqModel(seed uint64) *Seq {
	lathe.Seed(seed)
	return Sequential(NewLinear(3, 2), ReLU{}, NewLayerNorm([]int{2}))
}

func save(t *testing.T, m Module) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Save(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func snapshot(t testing.TB, m Module) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, p := range m.Parameters() {
		out[p.Name] = values(t, p.T)
	}
	return out
}

func TestSaveLoadRoundTrip(t *testing.T) {
	src, dst := seqModel(1), seqModel(2)
	b := save(t, src)
	if n := binary.LittleEndian.Uint64(b); n%8 != 0 {
		t.Fatalf("header length %d is not padded to 8", n)
	}
	if err := Load(bytes.NewReader(b), dst); err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, src)
	for name, got := range snapshot(t, dst) {
		if !slices.Equal(got, want[name]) {
			t.Fatalf("%s: %v, want %v", name, got, want[name])
		}
	}
	for _, p := range dst.Parameters() {
		if !p.T.RequiresGrad() || !p.T.IsLeaf() || p.T.DType() != lathe.Float32 {
			t.Fatalf("%s: loaded parameter is not a float32 leaf that requires a gradient", p.Name)
		}
	}
}

func TestSaveLoadEveryDType(t *testing.T) {
	mk := func(f float64) tensors {
		return tensors{
			{"f32", lathe.FromSlice(lathe.CPU, []float32{1.5, -2, float32(f)}, 3)},
			{"f64", lathe.FromSlice(lathe.CPU, []float64{math.Pi, f, -0.0, 1e300}, 2, 2)},
			{"i32", lathe.FromSlice(lathe.CPU, []int32{-7, int32(f), math.MaxInt32}, 3, 1)},
			{"i64", lathe.FromSlice(lathe.CPU, []int64{math.MinInt64, int64(f)}, 2)},
			{"bool", lathe.FromSlice(lathe.CPU, []bool{true, false, f != 0}, 3)},
			{"f16", lathe.FromSlice(lathe.CPU, []float32{-0.5, 65504, float32(f)}, 3).Cast(lathe.Float16)},
			{"bf16", lathe.FromSlice(lathe.CPU, []float32{1e38, float32(f)}, 1, 2).Cast(lathe.BFloat16)},
			{"i8", lathe.FromSlice(lathe.CPU, []int8{-128, 127, int8(f)}, 3)},
			{"u8", lathe.FromSlice(lathe.CPU, []uint8{0, 255, uint8(f)}, 3)},
			{"scalar", lathe.Scalar(lathe.CPU, f)},
			{"scalar_bf16", lathe.Scalar(lathe.CPU, float32(f)).Cast(lathe.BFloat16)},
			{"empty", lathe.Zeros(lathe.CPU, lathe.Float32, 0, 4)},
		}
	}
	src, dst := mk(3), mk(0)
	if err := Load(bytes.NewReader(save(t, src)), dst); err != nil {
		t.Fatal(err)
	}
	for i, p := range dst {
		if !slices.Equal(p.T.Shape(), src[i].T.Shape()) || p.T.DType() != src[i].T.DType() {
			t.Fatalf("%s: %v %v, want %v %v", p.Name, p.T.DType(), p.T.Shape(), src[i].T.DType(), src[i].T.Shape())
		}
		if p.T.DType() == lathe.Bool {
			g, _ := p.T.Bools()
			w, _ := src[i].T.Bools()
			if !slices.Equal(g, w) {
				t.Fatalf("bool: %v, want %v", g, w)
			}
			continue
		}
		if g, w := values(t, p.T), values(t, src[i].T); !slices.Equal(g, w) {
			t.Fatalf("%s: %v, want %v", p.Name, g, w)
		}
	}
}

// A file written from a torch state dict (build/torchref/nnpkg_ref.py).
func TestLoadTorchFile(t *testing.T) {
	f, err := os.Open("testdata/torch_seq.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := seqModel(5)
	if err := Load(f, m); err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{
		"0.bias":   {-0.011439144611358643, 0.45777493715286255},
		"0.weight": {-0.004322517663240433, 0.3097158372402191, -0.4751853346824646, -0.4248946011066437, -0.2223689705133438, 0.15482072532176971},
		"2.bias":   {0.25, 0.125},
		"2.weight": {1.5, -0.5},
	}
	got := snapshot(t, m)
	for name, w := range want {
		assertClose(t, name, got[name], w, 0)
	}
	y := m.Forward(lathe.FromSlice(lathe.CPU, []float32{1, -2, 0.5, 0.3, 0.2, 0.1}, 2, 3))
	assertClose(t, "forward", values(t, y), []float64{-1.2499024868011475, -0.3749675452709198, -1.2496658563613892, -0.37488868832588196}, 1e-6)
}

// stFile assembles a safetensors file from a header and data.
func stFile(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// TestLoadDamaged: every damaged file is an error that leaves the model as
// it was, and names the tensor where one is at fault.
func TestLoadDamaged(t *testing.T) {
	// A two-tensor model: "a" f32 [2] and "b" f32 [1], 12 bytes of data.
	model := func() tensors {
		return tensors{
			{"a", lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()},
			{"b", lathe.FromSlice(lathe.CPU, []float32{3}, 1).RequireGrad()},
		}
	}
	data := make([]byte, 12)
	entry := func(dt, shape, off string) string {
		return `{"dtype":"` + dt + `","shape":` + shape + `,"data_offsets":` + off + `}`
	}
	good := `{"a":` + entry("F32", "[2]", "[0,8]") + `,"b":` + entry("F32", "[1]", "[8,12]") + `}`
	if err := Load(bytes.NewReader(stFile(good, data)), model()); err != nil {
		t.Fatalf("the undamaged file fails: %v", err)
	}
	huge := binary.LittleEndian.AppendUint64(nil, 1<<62)
	cases := []struct {
		name, arg string // arg: the tensor the error must name ("" for none)
		file      []byte
	}{
		{"empty", "", nil},
		{"short-length", "", []byte{1, 2, 3}},
		{"header-length-huge", "", append(huge, '{', '}')},
		{"header-length-past-end", "", stFile(good, data)[:8]},
		{"header-length-zero", "", stFile("", nil)},
		{"bad-json", "a", stFile(`{"a":{"dtype":"F32",`, data)},
		{"not-object", "", stFile(`[1, 2]  `, data)},
		{"two-values", "", stFile(good+` {}`, data)},
		{"entry-not-object", "a", stFile(`{"a":7,"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"unknown-field", "a", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1},"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"missing-field", "a", stFile(`{"a":{"dtype":"F32","shape":[2]},"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"unknown-dtype", "a", stFile(`{"a":`+entry("F17", "[2]", "[0,4]")+`,"b":`+entry("F32", "[1]", "[4,8]")+`}`, data[:8])},
		{"wrong-dtype", "a", stFile(`{"a":`+entry("F64", "[2]", "[0,16]")+`,"b":`+entry("F32", "[1]", "[16,20]")+`}`, make([]byte, 20))},
		{"wrong-shape", "a", stFile(`{"a":`+entry("F32", "[1,2]", "[0,8]")+`,"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"negative-size", "a", stFile(`{"a":`+entry("F32", "[-2]", "[0,8]")+`,"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"size-mismatch", "a", stFile(`{"a":`+entry("F32", "[2]", "[0,4]")+`,"b":`+entry("F32", "[1]", "[4,8]")+`}`, data[:8])},
		{"offsets-reversed", "a", stFile(`{"a":`+entry("F32", "[2]", "[8,0]")+`,"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"offsets-three", "a", stFile(`{"a":`+entry("F32", "[2]", "[0,4,8]")+`,"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"offsets-negative", "a", stFile(`{"a":`+entry("F32", "[2]", "[-8,0]")+`,"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"overlap", "b", stFile(`{"a":`+entry("F32", "[2]", "[0,8]")+`,"b":`+entry("F32", "[1]", "[4,8]")+`}`, data[:8])},
		{"gap", "b", stFile(`{"a":`+entry("F32", "[2]", "[0,8]")+`,"b":`+entry("F32", "[1]", "[12,16]")+`}`, make([]byte, 16))},
		{"not-from-zero", "a", stFile(`{"a":`+entry("F32", "[2]", "[4,12]")+`,"b":`+entry("F32", "[1]", "[12,16]")+`}`, make([]byte, 16))},
		{"offset-huge", "a", stFile(`{"a":`+entry("F32", "[2]", "[18446744073709551608,18446744073709551615]")+`,"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"missing-tensor", "b", stFile(`{"a":`+entry("F32", "[2]", "[0,8]")+`}`, data[:8])},
		{"extra-tensor", "c", stFile(good[:len(good)-1]+`,"c":`+entry("F32", "[0]", "[12,12]")+`}`, data)},
		{"duplicate-name", "a", stFile(`{"a":`+entry("F32", "[2]", "[0,8]")+`,"a":`+entry("F32", "[2]", "[0,8]")+`,"b":`+entry("F32", "[1]", "[8,12]")+`}`, data)},
		{"bad-metadata", "__metadata__", stFile(`{"__metadata__":{"format":1},`+good[1:], data)},
		{"data-truncated", "b", stFile(good, data[:11])},
		{"trailing-bytes", "", stFile(good, append(slices.Clone(data), 0))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := model()
			before := snapshot(t, m)
			err := Load(bytes.NewReader(c.file), m)
			var le *lathe.Error
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *lathe.Error", err)
			}
			if le.Arg != c.arg || le.Op != "load" {
				t.Fatalf("error %q names op %q, tensor %q; want load, %q", err, le.Op, le.Arg, c.arg)
			}
			for name, v := range snapshot(t, m) {
				if !slices.Equal(v, before[name]) {
					t.Fatalf("a failed load changed %s", name)
				}
			}
		})
	}
	t.Run("metadata-ok", func(t *testing.T) {
		if err := Load(bytes.NewReader(stFile(`{"__metadata__":{"format":"pt"},`+good[1:], data)), model()); err != nil {
			t.Fatal(err)
		}
	})
}

// A tensor in a dtype of the format that lathe lacks is an ErrDType that
// names the tensor and the dtype, not a damaged file; a dtype string the
// format does not have is still damage (an ErrValue).
func TestLoadDTypeLatheLacks(t *testing.T) {
	model := func() tensors {
		return tensors{{"w", lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2)}}
	}
	file := func(dt string, size int) []byte {
		header := `{"w":{"dtype":"` + dt + `","shape":[2],"data_offsets":[0,` + strconv.Itoa(2*size) + `]}}`
		return stFile(header, make([]byte, 2*size))
	}
	for _, c := range []struct {
		dt   string
		size int // bytes per element (sub-byte dtypes: 1, enough for the test)
	}{
		{"I16", 2}, {"U16", 2}, {"U32", 4}, {"U64", 8},
		{"C64", 8}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1}, {"F4", 1}, {"F6_E2M3", 1},
	} {
		t.Run(c.dt, func(t *testing.T) {
			m := model()
			err := Load(bytes.NewReader(file(c.dt, c.size)), m)
			var le *lathe.Error
			if !errors.As(err, &le) || !errors.Is(err, lathe.ErrDType) {
				t.Fatalf("got %v, want an ErrDType", err)
			}
			if want := `argument "w" is ` + c.dt + `, which lathe cannot hold yet`; le.Arg != "w" || le.Found != c.dt || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q (arg %q, found %q) does not say %q", err, le.Arg, le.Found, want)
			}
			if got, _ := m[0].T.Float32s(); !slices.Equal(got, []float32{1, 2}) {
				t.Fatalf("a failed load changed w to %v", got)
			}
		})
	}
	for _, dt := range []string{"F17", "f16", "FLOAT16", "", "F8"} {
		t.Run("unknown/"+dt, func(t *testing.T) {
			err := Load(bytes.NewReader(file(dt, 2)), model())
			if !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), "not a safetensors dtype") {
				t.Fatalf("got %v, want an ErrValue for a dtype the format lacks", err)
			}
		})
	}
}

// Every truncation and every single-byte change of a real file either loads
// or fails with an error; none panics.
func TestLoadCorruptNeverPanics(t *testing.T) {
	file := save(t, seqModel(1))
	for n := range len(file) {
		if err := Load(bytes.NewReader(file[:n]), seqModel(2)); err == nil {
			t.Fatalf("a file truncated to %d of %d bytes loaded", n, len(file))
		}
	}
	hlen := int(binary.LittleEndian.Uint64(file))
	for i := range 8 + hlen { // the data bytes may take any value
		for _, v := range []byte{0, '"', '}', '9', 0xff} {
			bad := slices.Clone(file)
			bad[i] = v
			_ = Load(bytes.NewReader(bad), seqModel(2))
		}
	}
}

func FuzzLoad(f *testing.F) {
	var buf bytes.Buffer
	if err := Save(&buf, seqModel(1)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(stFile(`{}`, nil))
	// The same tensors in bfloat16 and float16, which the casting Load reads.
	for _, dt := range []lathe.DType{lathe.BFloat16, lathe.Float16} {
		var narrow tensors
		for _, p := range seqModel(1).Parameters() {
			narrow = append(narrow, Param{p.Name, p.T.Detach().Cast(dt)})
		}
		var nb bytes.Buffer
		if err := Save(&nb, narrow); err != nil {
			f.Fatal(err)
		}
		f.Add(nb.Bytes())
	}
	if b, err := os.ReadFile("testdata/torch_narrow.safetensors"); err == nil {
		f.Add(b)
	}
	before := snapshot(f, seqModel(2))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Strict, non-strict, and non-strict casting: a failed Load leaves
		// the model as it was; a non-strict one names as missing only
		// tensors the model has and left alone.
		for _, opts := range [][]LoadOption{nil, {NonStrict(nil)}, {NonStrict(nil), CastDType()}} {
			m := seqModel(2)
			var keys Keys
			if opts != nil {
				opts[0] = NonStrict(&keys)
			}
			err := Load(bytes.NewReader(b), m, opts...)
			after := snapshot(t, m)
			for name, v := range before {
				if (err != nil || slices.Contains(keys.Missing, name)) && !slices.Equal(after[name], v) {
					t.Fatalf("Load(%d options) changed %s though it %s", len(opts), name, map[bool]string{true: "failed: " + fmt.Sprint(err), false: "was missing"}[err != nil])
				}
			}
		}
	})
}

func TestSaveErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := Save(&buf, NewLinear(-1, 2)); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("failed layer: %v", err)
	}
	dup := tensors{{"x", lathe.Zeros(lathe.CPU, lathe.Float32, 1)}, {"x", lathe.Zeros(lathe.CPU, lathe.Float32, 1)}}
	if err := Save(&buf, dup); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("duplicate names: %v", err)
	}
	if err := Save(failWriter{}, seqModel(1)); err == nil {
		t.Fatal("a failing writer gave no error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestLoadKeepsGradients: loading a model's weights keeps each
// parameter's gradient, as torch's load_state_dict does; Load dropped them.
func TestLoadKeepsGradients(t *testing.T) {
	m := NewLinear(3, 2)
	if err := m.Forward(lathe.Ones(lathe.CPU, lathe.Float32, 1, 3)).Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	before, err := m.Weight.Grad().Float32s()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Save(&buf, NewLinear(3, 2)); err != nil {
		t.Fatal(err)
	}
	if err := Load(&buf, m); err != nil {
		t.Fatal(err)
	}
	if m.Weight.Grad() == nil {
		t.Fatal("the weight lost its gradient")
	}
	after, err := m.Weight.Grad().Float32s()
	if err != nil || !slices.Equal(after, before) {
		t.Errorf("the weight's gradient after Load: %v, %v; want %v", after, err, before)
	}
	if !m.Weight.RequiresGrad() {
		t.Error("the weight no longer requires a gradient")
	}
}
