package lathe

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestLogspaceMatchesTorch: every case of torchLogspace (build/torchref/
// logspace.py), on the cpu and on wgpu:0 where the dtype exists there:
// integers exactly, floats within an ulp of the dtype (Go's math.Pow and
// C's pow may round a float64 an ulp apart).
func TestLogspaceMatchesTorch(t *testing.T) {
	dtypes := map[string]DType{"float32": Float32, "float64": Float64, "bfloat16": BFloat16,
		"int32": Int32, "int64": Int64, "int8": Int8, "uint8": Uint8}
	if len(torchLogspace) < 50 {
		t.Fatalf("only %d torch cases", len(torchLogspace))
	}
	for key, want := range torchLogspace {
		name, args, _ := strings.Cut(key, "/")
		f := strings.Split(args, ",")
		start, _ := strconv.ParseFloat(f[0], 64)
		end, _ := strconv.ParseFloat(f[1], 64)
		steps, _ := strconv.Atoi(f[2])
		base, _ := strconv.ParseFloat(f[3], 64)
		dt := dtypes[name]
		for _, dev := range biDevices(t) {
			got := Logspace(dev, dt, start, end, steps, base)
			if errors.Is(got.Err(), ErrUnsupported) && dev != CPU {
				continue // a dtype that device lacks
			}
			v, err := got.To(CPU).Cast(Float64).Float64s()
			if err != nil {
				t.Fatalf("%s on %v: %v", key, dev, err)
			}
			if len(v) != len(want) || len(got.Shape()) != 1 || got.DType() != dt {
				t.Fatalf("%s on %v: %d values of %v, dtype %v; want %d, 1-D, %v", key, dev, len(v), got.Shape(), got.DType(), len(want), dt)
			}
			ulp := map[DType]float64{Float32: 0x1p-23, Float64: 0x1p-51, BFloat16: 0x1p-7}[dt]
			for i := range v {
				if tol := ulp * math.Abs(want[i]); !(math.Abs(v[i]-want[i]) <= tol) && !(math.IsNaN(v[i]) && math.IsNaN(want[i])) && v[i] != want[i] {
					t.Errorf("%s on %v: [%d] = %v, want %v (±%v)", key, dev, i, v[i], want[i], tol)
					break
				}
			}
		}
	}
}

// TestLogspaceErrors: each refusal's kind and argument.
func TestLogspaceErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		out  *Tensor
		kind error
		arg  string
	}{
		{"negative steps", Logspace(CPU, Float32, 0, 1, -1, 10), ErrValue, "steps"},
		{"inf end", Logspace(CPU, Float32, 0, math.Inf(1), 3, 10), ErrValue, "start"},
		{"nan start", Logspace(CPU, Float64, math.NaN(), 1, 3, 10), ErrValue, "start"},
		{"nan base", Logspace(CPU, Float32, 0, 1, 3, math.NaN()), ErrValue, "base"},
		{"bool", Logspace(CPU, Bool, 0, 1, 3, 10), ErrDType, "dtype"},
		{"bad dtype", Logspace(CPU, DType(99), 0, 1, 3, 10), ErrDType, "dtype"},
		{"int8 wraps in torch", Logspace(CPU, Int8, 0, 10, 4, 2), ErrValue, "end"},
		{"uint8 negative base", Logspace(CPU, Uint8, 0, 1, 3, -2), ErrValue, "end"},
		{"int64 past 2^63", Logspace(CPU, Int64, 0, 63, 2, 2), ErrValue, "end"},
		{"int8 start", Logspace(CPU, Int8, 300, 1, 2, 2), ErrValue, "start"},
		{"huge", Logspace(CPU, Float32, 0, 1, 1<<60, 10), ErrOutOfMemory, "steps"},
	} {
		moreOpsErr(t, c.name, c.out.Err(), c.kind, "logspace", c.arg)
	}
	// What torch gives past a float dtype's range: +Inf, not an error.
	v, err := Logspace(CPU, Float32, 0, 40, 2, 10).Float32s()
	if err != nil || !math.IsInf(float64(v[1]), 1) || v[0] != 1 {
		t.Errorf("float32 logspace(0, 40, 2) = %v, %v; want [1 +Inf]", v, err)
	}
	if v, err := Logspace(CPU, Int64, 0, 62, 2, 2).Int64s(); err != nil || v[1] != 1<<62 {
		t.Errorf("int64 logspace(0, 62, 2, base 2) = %v, %v; want [1 2^62]", v, err)
	}
}
