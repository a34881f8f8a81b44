package lathe

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

// Scalars an integer dtype cannot hold (issue 15, defect 6). PyTorch 1.13
// refuses a fill value out of the dtype's range (torch.full((2,), 3e9,
// dtype=torch.int32), masked_fill, F.pad: "value cannot be converted to
// type int without overflow") and compares a tensor with a scalar exactly
// (torch.ones(2, dtype=torch.int32) < 3e9 is all true, == 1.5 all false);
// lathe, which does not promote, refuses a scalar operand that the dtype
// cannot hold where torch would promote (int32 + 3e9).
func TestScalarOutOfRange(t *testing.T) {
	mask := func(dev Device) *Tensor { return FromSlice(CPU, []bool{true, false}, 2).To(dev) }
	cases := []struct {
		name  string
		found string // the value as the error names it
		run   func(dev Device) *Tensor
	}{
		{"full/int32/3e9", "3e+09", func(dev Device) *Tensor { return Full(dev, Int32, 3e9, 2) }},
		{"full/int32/-2^31-1", "-2.147483649e+09", func(dev Device) *Tensor { return Full(dev, Int32, -1<<31-1, 2) }},
		{"full/int32/max+0.5", "2.1474836475e+09", func(dev Device) *Tensor { return Full(dev, Int32, 1<<31-0.5, 2) }},
		{"full/int32/nan", "NaN", func(dev Device) *Tensor { return Full(dev, Int32, math.NaN(), 2) }},
		{"full/int32/inf", "+Inf", func(dev Device) *Tensor { return Full(dev, Int32, math.Inf(1), 2) }},
		{"full/int64/1e19", "1e+19", func(dev Device) *Tensor { return Full(dev, Int64, 1e19, 2) }},
		{"full/int64/2^63", "9.223372036854776e+18", func(dev Device) *Tensor { return Full(dev, Int64, 1<<63, 2) }},
		{"full/float32/1e39", "1e+39", func(dev Device) *Tensor { return Full(dev, Float32, 1e39, 2) }},
		{"add_scalar/int32/2^32", "4.294967296e+09", func(dev Device) *Tensor { return Ones(dev, Int32, 2).AddScalar(1 << 32) }},
		{"mul_scalar/int32/3e9", "3e+09", func(dev Device) *Tensor { return Ones(dev, Int32, 2).MulScalar(3e9) }},
		{"maximum_scalar/int64/1e19", "1e+19", func(dev Device) *Tensor { return Ones(dev, Int64, 2).MaximumScalar(1e19) }},
		{"minimum_scalar/int64/-1e19", "-1e+19", func(dev Device) *Tensor { return Ones(dev, Int64, 2).MinimumScalar(-1e19) }},
		{"masked_fill/int32/3e9", "3e+09", func(dev Device) *Tensor { return Ones(dev, Int32, 2).MaskedFill(mask(dev), 3e9) }},
		{"masked_fill/int64/1e19", "1e+19", func(dev Device) *Tensor { return Ones(dev, Int64, 2).MaskedFill(mask(dev), 1e19) }},
		{"masked_fill/int32/nan", "NaN", func(dev Device) *Tensor { return Ones(dev, Int32, 2).MaskedFill(mask(dev), math.NaN()) }},
		{"masked_fill/float32/1e39", "1e+39", func(dev Device) *Tensor { return Ones(dev, Float32, 2).MaskedFill(mask(dev), 1e39) }},
		{"pad/int32/3e9", "3e+09", func(dev Device) *Tensor { return Ones(dev, Int32, 2).Pad([]int{1, 1}, 3e9) }},
		{"pad/int64/-1e19", "-1e+19", func(dev Device) *Tensor { return Ones(dev, Int64, 2).Pad([]int{1, 1}, -1e19) }},
	}
	for _, dev := range Devices() {
		for _, c := range cases {
			t.Run(dev.String()+"/"+c.name, func(t *testing.T) {
				if strings.Contains(c.name, "int64") && !strings.HasPrefix(c.name, "full/") {
					skipWithoutInt64(t, dev)
				}
				got := c.run(dev)
				err := got.Err()
				if err == nil {
					v, _ := got.Float64s()
					t.Fatalf("no error (values %v), want ErrValue", v)
				}
				var e *Error
				if !errors.Is(err, ErrValue) || !errors.As(err, &e) {
					t.Fatalf("error %v, want an ErrValue", err)
				}
				dt := "int32"
				if strings.Contains(c.name, "int64") {
					dt = "int64"
				} else if strings.Contains(c.name, "float32") {
					dt = "float32"
				}
				if e.Found != c.found || !strings.Contains(err.Error(), c.found) || !strings.Contains(err.Error(), dt) ||
					!strings.Contains(err.Error(), "range") || e.Arg == "" {
					t.Fatalf("error %q (found %q), want it to name the argument, %s, %s and its range", err, e.Found, c.found, dt)
				}
			})
		}
	}
}

// Values at the ends of a dtype's range, and float32's infinities, fit.
func TestScalarInRange(t *testing.T) {
	mask := func(dev Device) *Tensor { return FromSlice(CPU, []bool{true, false}, 2).To(dev) }
	for _, dev := range Devices() {
		t.Run(dev.String(), func(t *testing.T) {
			if v, err := Full(dev, Int32, -1<<31, 2).AddScalar(1<<31 - 1).Int32s(); err != nil || v[0] != -1 {
				t.Errorf("full(-2^31) + (2^31-1) = %v, %v; want -1", v, err)
			}
			if Zeros(dev, Int64).Err() == nil {
				if v, err := Ones(dev, Int64, 2).MaskedFill(mask(dev), -1<<63).Int64s(); err != nil || v[0] != math.MinInt64 || v[1] != 1 {
					t.Errorf("masked_fill(-2^63) = %v, %v", v, err)
				}
			}
			if v, err := Ones(dev, Float32, 1).Pad([]int{1, 0}, math.Inf(-1)).Float32s(); err != nil || !math.IsInf(float64(v[0]), -1) {
				t.Errorf("pad(-Inf) = %v, %v", v, err)
			}
			// A scalar operand of a float op rounds as torch's does: f32 + 1e39 is +Inf.
			if v, err := Ones(dev, Float32, 1).AddScalar(1e39).Float32s(); err != nil || !math.IsInf(float64(v[0]), 1) {
				t.Errorf("1 + 1e39 in float32 = %v, %v; want +Inf", v, err)
			}
		})
	}
}

// Comparisons of an integer or bool tensor with a scalar are exact, as
// PyTorch's: torch.ones(2, dtype=torch.int32) < 3e9 is all true, and
// torch.ones(2, dtype=torch.int64) >= 1e19 all false.
func TestCompareScalarExact(t *testing.T) {
	i32 := []int32{math.MinInt32, -2, -1, 0, 1, 2, math.MaxInt32}
	i64 := []int64{math.MinInt64, -2, -1, 0, 1, 2, 1 << 53, 1<<53 + 1, math.MaxInt64}
	scalars := []float64{0, 1, 1.5, -1.5, 2, -0.5, 3e9, -3e9, 1 << 31, -1 << 31, 1<<31 - 1, -1<<31 - 1, 1e19, -1e19,
		1 << 53, 1 << 63, -1 << 63, math.Inf(1), math.Inf(-1), math.NaN()}
	compare := []struct {
		name string
		op   func(x *Tensor, s float64) *Tensor
		want func(c int) bool // from the sign of x - s
	}{
		{"eq", (*Tensor).EqScalar, func(c int) bool { return c == 0 }},
		{"ne", (*Tensor).NeScalar, func(c int) bool { return c != 0 }},
		{"lt", (*Tensor).LtScalar, func(c int) bool { return c < 0 }},
		{"le", (*Tensor).LeScalar, func(c int) bool { return c <= 0 }},
		{"gt", (*Tensor).GtScalar, func(c int) bool { return c > 0 }},
		{"ge", (*Tensor).GeScalar, func(c int) bool { return c >= 0 }},
	}
	inputs := []struct {
		name string
		x    func(dev Device) *Tensor
		vals []int64
	}{
		{"int32", func(dev Device) *Tensor { return FromSlice(CPU, i32).To(dev) }, int32sTo64(i32)},
		{"int64", func(dev Device) *Tensor { return FromSlice(CPU, i64).To(dev) }, i64},
	}
	for _, dev := range Devices() {
		for _, in := range inputs {
			x := in.x(dev)
			if in.name == "int64" && Zeros(dev, Int64).Err() != nil {
				t.Logf("%s has no int64: its cases skipped", dev)
				continue
			}
			for _, cmp := range compare {
				for _, s := range scalars {
					name := dev.String() + "/" + cmp.name + "/" + in.name + "/" + ftoa(s)
					got, err := cmp.op(x, s).Bools()
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					for i, v := range in.vals {
						want := cmp.name == "ne" // NaN is unordered: only ne holds
						if !math.IsNaN(s) {
							want = cmp.want(new(big.Float).SetInt64(v).Cmp(big.NewFloat(s)))
						}
						if got[i] != want {
							t.Errorf("%s: x=%d gives %v, want %v", name, v, got[i], want)
						}
					}
				}
			}
		}
		// A bool is 0 or 1: it equals no other scalar.
		b := FromSlice(CPU, []bool{false, true}).To(dev)
		for _, c := range []struct {
			s      float64
			eq, ne [2]bool
		}{{0, [2]bool{true, false}, [2]bool{false, true}}, {1, [2]bool{false, true}, [2]bool{true, false}},
			{3e9, [2]bool{}, [2]bool{true, true}}, {0.5, [2]bool{}, [2]bool{true, true}}, {-1, [2]bool{}, [2]bool{true, true}}} {
			eq, err1 := b.EqScalar(c.s).Bools()
			ne, err2 := b.NeScalar(c.s).Bools()
			if err1 != nil || err2 != nil || [2]bool(eq) != c.eq || [2]bool(ne) != c.ne {
				t.Errorf("%s: bool == %g gives %v (%v), != gives %v (%v); want %v, %v", dev, c.s, eq, err1, ne, err2, c.eq, c.ne)
			}
		}
		// A bool tensor compares as 0 and 1, and an int32 divides in
		// float32, as torch's.
		if got, err := b.LtScalar(3e9).Bools(); err != nil || !got[0] || !got[1] {
			t.Errorf("%s: bool < 3e9 gives %v (%v), want all true", dev, got, err)
		}
		if got, err := b.GeScalar(0.5).Bools(); err != nil || got[0] || !got[1] {
			t.Errorf("%s: bool ≥ 0.5 gives %v (%v), want [false true]", dev, got, err)
		}
		q := Ones(dev, Int32, 2).DivScalar(4)
		if got, err := q.Float32s(); err != nil || q.DType() != Float32 || got[0] != 0.25 {
			t.Errorf("%s: int32 / 4 gives %v %v (%v), want float32 0.25", dev, q.DType(), got, err)
		}
	}
}

func int32sTo64(v []int32) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// skipWithoutInt64 skips a test of int64 tensors on a device that has none
// (every device lathe opens has int64; wgpu holds it as two 32-bit words).
func skipWithoutInt64(t *testing.T, dev Device) {
	t.Helper()
	if err := Zeros(dev, Int64).Err(); err != nil {
		t.Skipf("%s has no int64: %v", dev, err)
	}
}

// TestScalarOpsOnLongRows: a tensor with a scalar is one row, which the
// cpu shares out between its cores in runs (a contiguous tensor without
// the strided walk); every element gets the op's value, whichever run it
// falls in, and a transposed view's too.
func TestScalarOpsOnLongRows(t *testing.T) {
	const n = 1<<19 + 3
	Seed(3)
	x := RandN(CPU, Float32, n)
	xs, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  *Tensor
		want func(v float32) float32
	}{
		{"maximum", x.MaximumScalar(0.25), func(v float32) float32 { return max(v, 0.25) }},
		{"remainder", x.RemainderScalar(0.75), func(v float32) float32 {
			r := float32(math.Mod(float64(v), 0.75))
			if r != 0 && r < 0 {
				r += 0.75
			}
			return r
		}},
		{"pow 3", x.PowScalar(3), func(v float32) float32 { return v * v * v }}, // torch's kernel takes x·x·x
		{"mul", x.MulScalar(0.1), func(v float32) float32 { return v * float32(0.1) }},
		{"sub", x.SubScalar(3), func(v float32) float32 { return v - 3 }},
		{"mul a one-element view", x.Mul(Arange(CPU, Float32, 0, 8, 1).Narrow(0, 5, 1)), func(v float32) float32 { return v * 5 }},
		{"transposed", x.Narrow(0, 0, 1<<19).Reshape(512, 1024).Transpose(0, 1).AddScalar(1).Transpose(0, 1).Reshape(1 << 19), nil},
	} {
		got, err := c.got.Float32s()
		if err != nil {
			t.Fatal(c.name, err)
		}
		want := c.want
		if want == nil { // the strided walk: x + 1 through a transposed view
			want = func(v float32) float32 { return v + 1 }
		}
		for i, v := range xs[:len(got)] {
			if w := want(v); got[i] != w {
				t.Fatalf("%s: element %d of %d: %g, want %g", c.name, i, n, got[i], w)
			}
		}
	}
}
