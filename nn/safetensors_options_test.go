package nn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// f32 is a float32 tensor on the cpu, for the models of these tests.
func f32(v ...float32) *lathe.Tensor { return lathe.FromSlice(lathe.CPU, v, len(v)) }

// TestLoadNonStrict: a non-strict Load reads the tensors that the file and
// the model share, leaves the model's others as they were, skips the file's
// others (one of a dtype lathe lacks, one between two that are read), and
// names both lists, sorted, as load_state_dict(strict=False) does.
func TestLoadNonStrict(t *testing.T) {
	// The file: "a" f32 [2], "x" F16 [2] (4 bytes lathe cannot hold),
	// "c" f32 [1], "z" f32 [1].
	header := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"x":{"dtype":"F16","shape":[2],"data_offsets":[8,12]},` +
		`"c":{"dtype":"F32","shape":[1],"data_offsets":[12,16]},` +
		`"z":{"dtype":"F32","shape":[1],"data_offsets":[16,20]}}`
	var data []byte
	for _, v := range []float32{10, 20} {
		data = appendF32(data, v)
	}
	data = append(data, 1, 2, 3, 4)
	data = appendF32(appendF32(data, 30), 40)
	file := stFile(header, data)

	model := tensors{{"a", f32(1, 2)}, {"b", f32(3)}, {"c", f32(4)}}
	if err := Load(bytes.NewReader(file), model); err == nil || !strings.Contains(err.Error(), "NonStrict") {
		t.Fatalf("strict Load: %v, want an error whose fix names nn.NonStrict", err)
	}
	var keys Keys
	if err := Load(bytes.NewReader(file), model, NonStrict(&keys)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys.Missing, []string{"b"}) || !slices.Equal(keys.Unexpected, []string{"x", "z"}) {
		t.Fatalf("keys %+v, want missing [b], unexpected [x z]", keys)
	}
	for i, want := range [][]float64{{10, 20}, {3}, {30}} {
		if got := values(t, model[i].T); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", model[i].Name, got, want)
		}
	}
	// keys may be nil.
	if err := Load(bytes.NewReader(file), model, NonStrict(nil)); err != nil {
		t.Fatal(err)
	}
}

// TestLoadNonStrictStillChecks: what both hold must still match in shape
// and dtype, and the file must still be whole; on such an error the model
// is unchanged.
func TestLoadNonStrictStillChecks(t *testing.T) {
	good := `"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
	data := appendF32(appendF32(nil, 10), 20)
	for _, c := range []struct {
		name string
		file []byte
		kind error
	}{
		{"shape", stFile(`{"a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}}`, data), lathe.ErrShape},
		{"dtype", stFile(`{"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}`, data), lathe.ErrDType},
		{"gap", stFile(`{`+good+`,"u":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}}`, append(data, make([]byte, 8)...)), lathe.ErrValue},
		{"truncated unexpected", stFile(`{`+good+`,"u":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, append(data, 0)), lathe.ErrValue},
		{"trailing bytes", stFile(`{`+good+`}`, append(data, 0)), lathe.ErrValue},
	} {
		t.Run(c.name, func(t *testing.T) {
			model := tensors{{"a", f32(1, 2)}, {"b", f32(3)}}
			keys := Keys{Missing: []string{"untouched"}}
			err := Load(bytes.NewReader(c.file), model, NonStrict(&keys))
			if !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want %v", err, c.kind)
			}
			if got := values(t, model[0].T); !slices.Equal(got, []float64{1, 2}) {
				t.Fatalf("a = %v after a failed Load, want [1 2]", got)
			}
			if !slices.Equal(keys.Missing, []string{"untouched"}) {
				t.Fatalf("a failed Load set the keys to %+v", keys)
			}
		})
	}
}

// TestLoadCastDType: with CastDType a float64 file loads into a float32
// model (and an int64 one into int32, a float32 one into float64), each
// value converted as Cast converts it; without it the mismatch is an
// ErrDType whose fix names the option.
func TestLoadCastDType(t *testing.T) {
	src := tensors{
		{"w", lathe.FromSlice(lathe.CPU, []float64{0.1, -1e300, 2.5}, 3)},
		{"n", lathe.FromSlice(lathe.CPU, []int64{7, -3}, 2)},
		{"v", lathe.FromSlice(lathe.CPU, []float32{0.1, 3}, 2)},
	}
	file := save(t, src)
	dst := func() tensors {
		return tensors{
			{"w", lathe.Zeros(lathe.CPU, lathe.Float32, 3).RequireGrad()},
			{"n", lathe.Zeros(lathe.CPU, lathe.Int32, 2)},
			{"v", lathe.Zeros(lathe.CPU, lathe.Float64, 2)},
		}
	}
	m := dst()
	err := Load(bytes.NewReader(file), m)
	if !errors.Is(err, lathe.ErrDType) || !strings.Contains(err.Error(), "CastDType") {
		t.Fatalf("Load without CastDType: %v, want an ErrDType naming nn.CastDType", err)
	}
	if err := Load(bytes.NewReader(file), m, CastDType()); err != nil {
		t.Fatal(err)
	}
	if m[0].T.DType() != lathe.Float32 || m[1].T.DType() != lathe.Int32 || m[2].T.DType() != lathe.Float64 {
		t.Fatalf("dtypes %v %v %v, want the model's", m[0].T.DType(), m[1].T.DType(), m[2].T.DType())
	}
	if !m[0].T.RequiresGrad() {
		t.Fatal("the loaded parameter lost RequireGrad")
	}
	for i, want := range [][]float64{
		{float64(float32(0.1)), math.Inf(-1), 2.5},
		{7, -3},
		{float64(float32(0.1)), 3},
	} {
		if got := values(t, m[i].T); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", m[i].Name, got, want)
		}
	}
}

func appendF32(b []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}
