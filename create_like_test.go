package lathe

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLinspaceMatchesTorch: every case of torchLinspace (literals.py), on
// the cpu and on wgpu:0 where the dtype exists there, bit for bit.
func TestLinspaceMatchesTorch(t *testing.T) {
	dtypes := map[string]DType{"float32": Float32, "float64": Float64, "int32": Int32, "int64": Int64}
	for key, want := range torchLinspace {
		name, args, _ := strings.Cut(key, "/")
		f := strings.Split(args, ",")
		start, _ := strconv.ParseFloat(f[0], 64)
		end, _ := strconv.ParseFloat(f[1], 64)
		steps, _ := strconv.Atoi(f[2])
		for _, dev := range biDevices(t) {
			got := Linspace(dev, dtypes[name], start, end, steps)
			if errors.Is(got.Err(), ErrUnsupported) && dev != CPU {
				continue // a dtype that device lacks
			}
			v, err := got.To(CPU).Cast(Float64).Float64s()
			if err != nil {
				t.Fatalf("%s on %v: %v", key, dev, err)
			}
			// torch's vectorised kernel rounds some places differently
			// (it steps from the start of each SIMD block): a few ulps
			// of the range's larger end; integers exactly.
			tol := 0.0
			if dt := dtypes[name]; dt.IsFloat() {
				ulp := map[DType]float64{Float32: 0x1p-23, Float64: 0x1p-52}[dt]
				tol = 4 * ulp * max(math.Abs(start), math.Abs(end))
			}
			if !slices.Equal(got.Shape(), want.Shape) || len(v) != len(want.Values) {
				t.Fatalf("%s on %v: shape %v, want %v", key, dev, got.Shape(), want.Shape)
			}
			for i := range v {
				if math.Abs(v[i]-want.Values[i]) > tol {
					t.Errorf("%s on %v: [%d] = %v, want %v (±%v)", key, dev, i, v[i], want.Values[i], tol)
					break
				}
			}
		}
	}
}

// TestLinspaceWholeRange: a range wider than the dtype's largest value
// (end - start overflows) gives its values, where torch's formula gives
// NaN and Inf.
func TestLinspaceWholeRange(t *testing.T) {
	for _, c := range []struct {
		dt         DType
		start, end float64
		steps      int
		want       []float64
	}{
		{Float64, -1e308, 1e308, 3, []float64{-1e308, 0, 1e308}},
		{Float64, -1e308, 1e308, 2, []float64{-1e308, 1e308}},
		{Float64, math.MaxFloat64, -math.MaxFloat64, 5, []float64{math.MaxFloat64, math.MaxFloat64 / 2, 0, -math.MaxFloat64 / 2, -math.MaxFloat64}},
		{Float32, -3e38, 3e38, 5, []float64{float64(float32(-3e38)), float64(float32(-1.5e38)), 0, float64(float32(1.5e38)), float64(float32(3e38))}},
	} {
		for _, dev := range biDevices(t) {
			x := Linspace(dev, c.dt, c.start, c.end, c.steps)
			if errors.Is(x.Err(), ErrUnsupported) && dev != CPU {
				continue // float64 on wgpu:0
			}
			got, err := x.To(CPU).Cast(Float64).Float64s()
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("%v linspace(%g, %g, %d) on %v = %v, %v; want %v", c.dt, c.start, c.end, c.steps, dev, got, err, c.want)
			}
		}
	}
}

func TestLinspaceErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		got  *Tensor
		kind error
	}{
		{"negative steps", Linspace(CPU, Float32, 0, 1, -1), ErrValue},
		{"infinite end", Linspace(CPU, Float32, 0, math.Inf(1), 3), ErrValue},
		{"NaN start", Linspace(CPU, Float64, math.NaN(), 1, 3), ErrValue},
		{"bool", Linspace(CPU, Bool, 0, 1, 3), ErrDType},
		{"huge", Linspace(CPU, Float32, 0, 1, math.MaxInt), ErrOutOfMemory},
		// An end or start outside the dtype's range, as torch refuses it
		// ("value cannot be converted to type int8_t without overflow"),
		// where the values wrapped or overflowed.
		{"int8 end past 127", Linspace(CPU, Int8, 0, 1000, 3), ErrValue},
		{"uint8 start below 0", Linspace(CPU, Uint8, -5, 5, 3), ErrValue},
		{"int32 end past 2^31", Linspace(CPU, Int32, 0, 3e9, 3), ErrValue},
		{"float16 end past 65504", Linspace(CPU, Float16, 0, 1e6, 3), ErrValue},
		{"bfloat16 start past its max", Linspace(CPU, BFloat16, -3.4e38, 0, 3), ErrValue},
		{"float32 ends past its max", Linspace(CPU, Float32, -1e308, 1e308, 3), ErrValue},
	} {
		if err := c.got.Err(); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
}

// TestArangeIntegerArguments: an integer dtype's start, stop and step
// are integers, and bool has no arange, as in torch; arange(0, 3, 0.5) in
// int32 gave 0, 0, 1, 1, 2, 2, and in bool 0 to 3 gave false, true, true.
func TestArangeIntegerArguments(t *testing.T) {
	for _, c := range []struct {
		name string
		got  *Tensor
		kind error
	}{
		{"int32 step 0.5", Arange(CPU, Int32, 0, 3, 0.5), ErrValue},
		{"int64 step 1.5", Arange(CPU, Int64, 0, 6, 1.5), ErrValue},
		{"int64 start -0.5", Arange(CPU, Int64, -0.5, 2, 1), ErrValue},
		{"int64 stop 2.5", Arange(CPU, Int64, 0, 2.5, 1), ErrValue},
		{"uint8 step 0.5", Arange(CPU, Uint8, 0, 2, 0.5), ErrValue},
		{"bool", Arange(CPU, Bool, 0, 2, 1), ErrDType},
	} {
		if err := c.got.Err(); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
	// Integral ones, and non-integral ones in a float dtype, as before.
	if got, err := Arange(CPU, Int64, -3, 4, 2).Int64s(); err != nil || !slices.Equal(got, []int64{-3, -1, 1, 3}) {
		t.Errorf("int64 arange(-3, 4, 2) = %v, %v; want [-3 -1 1 3]", got, err)
	}
	if got, err := Arange(CPU, Float32, 0, 1.5, 0.5).Float32s(); err != nil || !slices.Equal(got, []float32{0, 0.5, 1}) {
		t.Errorf("float32 arange(0, 1.5, 0.5) = %v, %v; want [0 0.5 1]", got, err)
	}
}

// TestLikeConstructors: each takes x's shape, dtype and device, and a
// failed or released x gives an error naming the op.
func TestLikeConstructors(t *testing.T) {
	for _, dev := range biDevices(t) {
		x := Zeros(dev, Float32, 2, 3).Transpose(0, 1) // a view: the result is contiguous
		for name, got := range map[string]*Tensor{
			"zeros_like": ZerosLike(x), "ones_like": OnesLike(x), "full_like": FullLike(x, -2.5),
			"rand_like": RandLike(x), "randn_like": RandNLike(x),
		} {
			if err := got.Err(); err != nil {
				t.Fatalf("%s on %v: %v", name, dev, err)
			}
			if got.Device() != dev || got.DType() != Float32 || !slices.Equal(got.Shape(), []int{3, 2}) {
				t.Errorf("%s on %v: %v %v %v, want x's", name, dev, got.Device(), got.DType(), got.Shape())
			}
			v, _ := got.Float32s()
			want := map[string]float32{"zeros_like": 0, "ones_like": 1, "full_like": -2.5}
			if w, ok := want[name]; ok && slices.ContainsFunc(v, func(e float32) bool { return e != w }) {
				t.Errorf("%s on %v: %v", name, dev, v)
			}
		}
	}
	dead := Ones(CPU, Int32, 2)
	dead.Release()
	for name, got := range map[string]*Tensor{
		"zeros_like": ZerosLike(dead), "full_like": FullLike(dead, 1), "rand_like": RandLike(dead), "randn_like": RandNLike(dead),
	} {
		if err := got.Err(); !errors.Is(err, ErrReleased) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s of a released tensor: %v", name, err)
		}
	}
	if err := FullLike(Ones(CPU, Int32, 2), 3e9).Err(); !errors.Is(err, ErrValue) {
		t.Errorf("full_like of int32 with 3e9: %v, want ErrValue", err)
	}
	// An int32 x's error names the op called, not Rand or RandN, which
	// rand_like and randn_like call.
	for name, got := range map[string]*Tensor{"rand_like": RandLike(Ones(CPU, Int32, 2)), "randn_like": RandNLike(Ones(CPU, Int32, 2))} {
		if err := got.Err(); !errors.Is(err, ErrDType) || !strings.HasPrefix(err.Error(), "lathe: "+name+":") {
			t.Errorf("%s of int32: %v, want ErrDType from %s", name, err, name)
		}
	}
}

func TestFlattenDimsErrors(t *testing.T) {
	x := Zeros(CPU, Float32, 2, 3)
	if err := x.Flatten(0).Err(); !errors.Is(err, ErrValue) {
		t.Errorf("Flatten(0): %v, want ErrValue", err)
	}
	if err := x.Flatten(1, 0).Err(); !errors.Is(err, ErrValue) {
		t.Errorf("Flatten(1, 0): %v, want ErrValue", err)
	}
	if err := x.Flatten(0, 5).Err(); !errors.Is(err, ErrIndex) {
		t.Errorf("Flatten(0, 5): %v, want ErrIndex", err)
	}
}
