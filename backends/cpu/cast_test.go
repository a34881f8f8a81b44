package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvertVector: shim.c's conversions give Go's bits (the loops that
// run where they do not), on runs long enough to take them and with a
// tail past the last full vector, over the values a conversion can get
// wrong: NaN, ±Inf, ±0, subnormals, halves (ties), values past int32 and
// at its ends, and int32s that float32 must round.
func TestConvertVector(t *testing.T) {
	if !haveAVX2 {
		t.Skip("the C conversions need AVX2, which this cpu lacks")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 0x1p-149, -0x1p-1074, 0x1p-1030,
		2.5, -2.5, 0.5, -0.999, 2147483647, 2147483647.5, 2147483648, -2147483648, -2147483648.9, -2147483649, 3e9, -1e20,
		16777217, 1e300, 3.4028235677973366e38}
	const n = 1000 + 3
	f64 := make([]float64, n)
	i32 := make([]int32, n)
	for i := range f64 {
		if i%3 == 0 {
			f64[i] = special[(i/3)%len(special)]
		} else {
			f64[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)))
		}
		i32[i] = int32(rng.Uint32())
	}
	i32[1], i32[2] = math.MaxInt32, math.MinInt32
	f32 := make([]float32, n)
	for i, v := range f64 {
		f32[i] = float32(v)
	}
	check := func(name string, got, want []uint64) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: element %d: got bits %#x, want %#x", name, i, got[i], want[i])
				return
			}
		}
	}
	converted := func(dst, src any) {
		t.Helper()
		if !convertVector(dst, src) {
			t.Fatalf("convertVector(%T, %T) refused a run of %d", dst, src, n)
		}
	}
	bits32 := func(v []float32) []uint64 {
		b := make([]uint64, len(v))
		for i, x := range v {
			b[i] = uint64(math.Float32bits(x))
		}
		return b
	}
	bits64 := func(v []float64) []uint64 {
		b := make([]uint64, len(v))
		for i, x := range v {
			b[i] = math.Float64bits(x)
		}
		return b
	}
	ints := func(v []int32) []uint64 {
		b := make([]uint64, len(v))
		for i, x := range v {
			b[i] = uint64(uint32(x))
		}
		return b
	}

	{
		got, want := make([]float64, n), make([]float64, n)
		converted(got, f32)
		for i, v := range f32 {
			want[i] = float64(v)
		}
		check("float32 to float64", bits64(got), bits64(want))
	}
	{
		got, want := make([]float32, n), make([]float32, n)
		converted(got, f64)
		for i, v := range f64 {
			want[i] = float32(v)
		}
		check("float64 to float32", bits32(got), bits32(want))
	}
	{
		got, want := make([]float32, n), make([]float32, n)
		converted(got, i32)
		for i, v := range i32 {
			want[i] = float32(v)
		}
		check("int32 to float32", bits32(got), bits32(want))
	}
	{
		got, want := make([]float64, n), make([]float64, n)
		converted(got, i32)
		for i, v := range i32 {
			want[i] = float64(v)
		}
		check("int32 to float64", bits64(got), bits64(want))
	}
	{
		got, want := make([]int32, n), make([]int32, n)
		converted(got, f32)
		for i, v := range f32 {
			want[i] = floatToInt32(float64(v))
		}
		check("float32 to int32", ints(got), ints(want))
	}
	{
		got, want := make([]int32, n), make([]int32, n)
		converted(got, f64)
		for i, v := range f64 {
			want[i] = floatToInt32(v)
		}
		check("float64 to int32", ints(got), ints(want))
	}
	if convertVector(make([]float64, vectorMin-1), make([]float32, vectorMin-1)) {
		t.Error("convertVector took a run shorter than vectorMin")
	}
	if convertVector(make([]int64, n), make([]float32, n)) {
		t.Error("convertVector took float32 to int64, which shim.c has no loop for")
	}
}
