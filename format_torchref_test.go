package lathe

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"testing"
)

// reprCase is one case of testdata/repr/cases.json, written by
// build/torchref/repr.py from torch 1.13's repr: how to build the tensor
// (float64 values from arange, linspace or a list, cast to dtype,
// reshaped, maybe transposed) and what String must print on each device.
//
// lathe's suffixes are its own ("dtype=int32" for torch's
// "dtype=torch.int32", device='wgpu:0', the dtype before the device), so
// Want is not torch's repr but torch's data part followed by lathe's
// suffixes, placed by torch's own _add_suffixes; the script checks that
// the same parts with torch's suffixes give torch's repr exactly. The data
// part, and where the suffixes go, are therefore compared with torch
// exactly; only the suffixes' words differ, by design.
type reprCase struct {
	Name   string
	Make   string
	Args   []float64
	Values []reprValue
	DType  string
	Shape  []int
	T      bool
	Want   map[string]string
}

// reprValue is a float64 that the JSON may spell "nan", "inf", "-inf" or
// "-0".
type reprValue float64

func (v *reprValue) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		f, err := strconv.ParseFloat(s, 64)
		*v = reprValue(f)
		return err
	}
	return json.Unmarshal(b, (*float64)(v))
}

// build makes the case's tensor on dev: its values in float64 and cast on
// the cpu (as the script does in torch, and as wgpu has no float64), then
// moved, reshaped and transposed on dev.
func (c reprCase) build(t *testing.T, dev Device) *Tensor {
	var x *Tensor
	switch c.Make {
	case "arange":
		x = Arange(CPU, Float64, c.Args[0], c.Args[1], c.Args[2])
	case "linspace":
		x = Linspace(CPU, Float64, c.Args[0], c.Args[1], int(c.Args[2]))
	case "values":
		vs := make([]float64, len(c.Values))
		for i, v := range c.Values {
			vs[i] = float64(v)
		}
		x = FromSlice(CPU, vs)
	default:
		t.Fatalf("unknown recipe %q", c.Make)
	}
	dt, ok := map[string]DType{"float32": Float32, "float64": Float64, "float16": Float16, "bfloat16": BFloat16,
		"int32": Int32, "int64": Int64, "int8": Int8, "uint8": Uint8, "bool": Bool}[c.DType]
	if !ok {
		t.Fatalf("unknown dtype %q", c.DType)
	}
	x = x.Cast(dt).To(dev)
	if c.Shape != nil {
		x = x.Reshape(c.Shape...)
	}
	if c.T {
		x = x.MT()
	}
	return x
}

// TestStringTorch: String prints each case of testdata/repr/cases.json as
// torch 1.13's repr does (with lathe's suffixes), on every device: the
// number format that torch's _Formatter picks from the finite nonzero
// values, one width for all, rows wrapped at 80 columns, "..." in
// summaries, and a suffix on a new line where it would pass 80 columns.
func TestStringTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/repr/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []reprCase }
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 40 {
		t.Fatalf("testdata/repr/cases.json has %d cases, want at least 40", len(file.Cases))
	}
	for _, dev := range Devices() {
		for _, c := range file.Cases {
			t.Run(dev.String()+"/"+c.Name, func(t *testing.T) {
				want, ok := c.Want[dev.String()]
				if !ok {
					t.Fatalf("no expected string for %v", dev)
				}
				x := c.build(t, dev)
				if err := x.Err(); errors.Is(err, ErrUnsupported) {
					t.Skipf("%s on %v: %v", c.DType, dev, err)
				}
				if got := x.String(); got != want {
					t.Errorf("prints\n%s\nwant (torch 1.13)\n%s", got, want)
				}
			})
		}
	}
}
