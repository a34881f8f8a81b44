package nn

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/lathe-ml/lathe"
)

// The narrow dtypes against a file that torch's tensors were written into
// (build/torchref/narrow_st.py): edge values of float16, bfloat16, int8 and
// uint8, and torch's casts between them and float32.

// torchNarrow reads testdata/torch_narrow.safetensors and returns its bytes
// and each tensor's data, by name.
func torchNarrow(t *testing.T) ([]byte, map[string]stEntry, map[string][]byte) {
	t.Helper()
	file, err := os.ReadFile("testdata/torch_narrow.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := readHeader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	start := 8 + binary.LittleEndian.Uint64(file)
	data := map[string][]byte{}
	for name, e := range entries {
		data[name] = file[start+e.Offsets[0] : start+e.Offsets[1]]
	}
	return file, entries, data
}

// rawBytes is t's elements as the little-endian bytes Save writes, read
// with the dtype's own accessor (HalfBits for the 16-bit floats, so that
// nothing is widened on the way).
func rawBytes(t *testing.T, x *lathe.Tensor) []byte {
	t.Helper()
	var out []byte
	var err error
	switch x.DType() {
	case lathe.Float16, lathe.BFloat16:
		var d []uint16
		d, err = x.HalfBits()
		for _, v := range d {
			out = binary.LittleEndian.AppendUint16(out, v)
		}
	case lathe.Int8:
		var d []int8
		d, err = x.Int8s()
		for _, v := range d {
			out = append(out, byte(v))
		}
	case lathe.Uint8:
		out, err = x.Uint8s()
	case lathe.Float32:
		var d []float32
		d, err = x.Float32s()
		for _, v := range d {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	default:
		t.Fatalf("rawBytes: %v", x.DType())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLoadSaveTorchNarrow loads every tensor of the file into a model of
// the file's dtypes and shapes, checks each bit, and saves the model back
// to the same bytes: the script writes as Save does (sorted names, compact
// header padded to 8), so the whole file must match, NaN payloads and a
// signalling NaN included.
func TestLoadSaveTorchNarrow(t *testing.T) {
	file, entries, data := torchNarrow(t)
	var m tensors
	for name, e := range entries {
		dt, ok := stDType(e.DType)
		if !ok {
			t.Fatalf("%s: dtype %s", name, e.DType)
		}
		shape := make([]int, len(e.Shape))
		for i, s := range e.Shape {
			shape[i] = int(s)
		}
		m = append(m, Param{name, lathe.Zeros(lathe.CPU, dt, shape...)})
	}
	if err := Load(bytes.NewReader(file), m); err != nil {
		t.Fatal(err)
	}
	for _, p := range m {
		if got := rawBytes(t, p.T); !bytes.Equal(got, data[p.Name]) {
			t.Errorf("%s (%v): loaded % x, want % x", p.Name, p.T.DType(), got, data[p.Name])
		}
	}
	if got := save(t, m); !bytes.Equal(got, file) {
		t.Errorf("Save wrote\n%q\nwant\n%q", got, file)
	}
}

// TestLoadCastTorchNarrow loads the 16-bit tensors into float32 (published
// bf16 weights into a float32 model) and a float32 tensor into float16 and
// bfloat16, with CastDType, and compares with torch's .float(), .half()
// and .bfloat16() of the same tensors, bit for bit except inside NaNs:
// lathe's casts quiet a NaN and keep its sign and payload, torch's
// bfloat16.float() keeps a signalling NaN signalling and its float.bfloat16()
// makes every NaN 0xffff.
func TestLoadCastTorchNarrow(t *testing.T) {
	file, _, data := torchNarrow(t)
	for _, c := range []struct {
		name, ref string
		dt        lathe.DType
		n         int
	}{
		{"f16", "f16_f32", lathe.Float32, 16},
		{"bf16", "bf16_f32", lathe.Float32, 16},
		{"f32", "f32_f16", lathe.Float16, 12},
		{"f32", "f32_bf16", lathe.BFloat16, 12},
	} {
		t.Run(c.name+"_to_"+c.dt.String(), func(t *testing.T) {
			shape := []int{c.n}
			if c.name != "f32" {
				shape = []int{2, 8}
			}
			m := tensors{{c.name, lathe.Zeros(lathe.CPU, c.dt, shape...)}}
			var keys Keys
			if err := Load(bytes.NewReader(file), m, NonStrict(&keys), CastDType()); err != nil {
				t.Fatal(err)
			}
			if len(keys.Missing) != 0 {
				t.Fatalf("missing %v", keys.Missing)
			}
			got, want := rawBytes(t, m[0].T), data[c.ref]
			size := len(want) / c.n
			for i := 0; i < c.n; i++ {
				g, w := got[i*size:(i+1)*size], want[i*size:(i+1)*size]
				if bytes.Equal(g, w) || isNaN(c.dt, g) && isNaN(c.dt, w) {
					continue
				}
				t.Errorf("[%d] = % x, want torch's % x", i, g, w)
			}
		})
	}
}

// isNaN reports whether b, the little-endian bytes of one element of dt, is
// a NaN.
func isNaN(dt lathe.DType, b []byte) bool {
	switch dt {
	case lathe.Float32:
		return math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	case lathe.Float16:
		return binary.LittleEndian.Uint16(b)&0x7fff > 0x7c00
	case lathe.BFloat16:
		return binary.LittleEndian.Uint16(b)&0x7fff > 0x7f80
	}
	return false
}
