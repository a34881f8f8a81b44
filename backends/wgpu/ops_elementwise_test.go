//go:build cgo

package wgpu_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// wgpuOrSkip returns wgpu:0, or skips where this machine cannot open it.
func wgpuOrSkip(t *testing.T) lathe.Device {
	t.Helper()
	for _, info := range lathe.DeviceStatus() {
		if info.Device == lathe.WGPU(0) {
			if !info.Available {
				testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %s", info.Detail)
			}
			return info.Device
		}
	}
	testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is not listed by lathe.DeviceStatus")
	return lathe.Device{}
}

// denseInputs are float32s over the range where the elementwise functions
// change regime (steps of 5e-5 over [-10, 10], steps of 0.1 over [-100,
// 100]) and over every decade of float32, both signs.
func denseInputs() []float32 {
	var xs []float32
	for i := -200000; i <= 200000; i++ {
		xs = append(xs, float32(i)*5e-5)
	}
	for i := -1000; i <= 1000; i++ {
		xs = append(xs, float32(i)*0.1)
	}
	for e := -38.0; e <= 38; e += 0.01 {
		v := float32(math.Pow(10, e))
		xs = append(xs, v, -v)
	}
	return xs
}

// like is a tensor of x's shape, dtype and device filled with c rounded to
// float32, so that the cpu's float64 argument is the one wgpu:0 sees.
func like(x *lathe.Tensor, c float64) *lathe.Tensor {
	return x.MulScalar(0).AddScalar(float64(float32(c)))
}

// ulps is how far a float32 result is from the exact (float64) one, in
// float32 ulps at the exact one: 0.5 is correctly rounded.
func ulps(got float32, want float64) float64 {
	w := float32(math.Abs(want))
	ulp := float64(math.Nextafter32(w, float32(math.Inf(1)))) - float64(w)
	return math.Abs(float64(got)-want) / ulp
}

// TestFloatAccuracy bounds the float32 error of the functions that
// elementwise.wgsl writes out (and of the builtins it keeps), against the
// cpu's float64 results: every input of denseInputs within maxUlps, where
// the exact result is a normal float32. NaNs and infinities must match.
func TestFloatAccuracy(t *testing.T) {
	dev := wgpuOrSkip(t)
	xs := denseInputs()
	x64 := make([]float64, len(xs))
	for i, v := range xs {
		x64[i] = float64(v)
	}
	xw := lathe.FromSlice(dev, xs, len(xs))
	xc := lathe.FromSlice(lathe.CPU, x64, len(xs))
	type fn = func(*lathe.Tensor) *lathe.Tensor
	cases := []struct {
		name    string
		f       fn
		maxUlps float64
	}{
		{"exp", (*lathe.Tensor).Exp, 1.5},
		{"log", (*lathe.Tensor).Log, 3},
		{"log1p", (*lathe.Tensor).Log1p, 3},
		{"expm1", (*lathe.Tensor).Expm1, 2.5},
		{"sqrt", (*lathe.Tensor).Sqrt, 1},
		{"rsqrt", (*lathe.Tensor).Rsqrt, 2},
		{"reciprocal", (*lathe.Tensor).Reciprocal, 1},
		{"sin", (*lathe.Tensor).Sin, 2.5},
		{"cos", (*lathe.Tensor).Cos, 2.5},
		{"tanh", (*lathe.Tensor).Tanh, 3},
		{"sigmoid", (*lathe.Tensor).Sigmoid, 3},
		{"silu", (*lathe.Tensor).SiLU, 4},
		{"softplus", (*lathe.Tensor).Softplus, 4},
		{"erf", (*lathe.Tensor).Erf, 3},
		{"erfc", (*lathe.Tensor).Erfc, 4}, // CUDA's erfcf is within 4 too
		{"lgamma(x > 0)", func(x *lathe.Tensor) *lathe.Tensor { return x.Abs().Lgamma() }, 5},
		// digamma from 2, past its zero at 1.46 (whose error is absolute,
		// as torch's): torch's algorithm in float32, whose log(x) and sum
		// of 1/x cancel to a few times less (ψ(2.1) = 0.47 from terms of
		// 2.3); trigamma from 1/2, before its reflection (in float32
		// arithmetic, as torch's).
		{"digamma(x ≥ 2)", func(x *lathe.Tensor) *lathe.Tensor { return x.Abs().AddScalar(2).Digamma() }, 24},
		{"trigamma(x ≥ 1/2)", func(x *lathe.Tensor) *lathe.Tensor { return x.Abs().AddScalar(0.5).Polygamma(1) }, 5},
		{"tan", (*lathe.Tensor).Tan, 4},
		{"asin", (*lathe.Tensor).Asin, 4},
		{"acos", (*lathe.Tensor).Acos, 4},
		{"atan", (*lathe.Tensor).Atan, 4},
		{"sinh", (*lathe.Tensor).Sinh, 4},
		{"cosh", (*lathe.Tensor).Cosh, 4},
		{"asinh", (*lathe.Tensor).Asinh, 4},
		{"acosh", (*lathe.Tensor).Acosh, 4},
		{"atanh", (*lathe.Tensor).Atanh, 4},
		{"atan2(x, 0.7)", func(x *lathe.Tensor) *lathe.Tensor { return x.Atan2(like(x, 0.7)) }, 4},
		{"atan2(1.3, x)", func(x *lathe.Tensor) *lathe.Tensor { return like(x, 1.3).Atan2(x) }, 4},
		{"pow(1.7, x)", func(x *lathe.Tensor) *lathe.Tensor { return like(x, 1.7).Pow(x) }, 2},
		{"pow(|x|, 2.5)", func(x *lathe.Tensor) *lathe.Tensor { return x.Abs().PowScalar(2.5) }, 2},
		{"pow(x, 3)", func(x *lathe.Tensor) *lathe.Tensor { return x.PowScalar(3) }, 2},
		// 1/(x·x), torch's form of a scalar exponent of -2 (and the
		// cpu's): where x·x is subnormal it has lost bits (3.7 ulp at
		// x = 5.5e-20).
		{"pow(x, -2)", func(x *lathe.Tensor) *lathe.Tensor { return x.PowScalar(-2) }, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.f(xw).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.f(xc).Float64s()
			if err != nil {
				t.Fatal(err)
			}
			worst, at := 0.0, 0.0
			for i, w := range want {
				g := got[i]
				switch {
				case math.IsNaN(w) || math.IsInf(float64(float32(w)), 0):
					if math.IsNaN(w) != math.IsNaN(float64(g)) || (!math.IsNaN(w) && float32(w) != g) {
						t.Errorf("%s(%g) = %g, want %g", c.name, x64[i], g, w)
					}
					continue
				case math.Abs(w) < 0x1p-126:
					continue
				}
				if u := ulps(g, w); u > worst {
					worst, at = u, x64[i]
				}
			}
			if worst > c.maxUlps {
				t.Errorf("%s is %.2f ulp off at x = %g, want within %g", c.name, worst, at, c.maxUlps)
			}
			t.Logf("%s: within %.2f ulp (worst at x = %g)", c.name, worst, at)
		})
	}
}

// TestIntEdges checks the int forms where int32 wraps or a bound lies past
// int32's range, against the cpu.
func TestIntEdges(t *testing.T) {
	dev := wgpuOrSkip(t)
	xs := []int32{math.MinInt32, -70000, -3, -1, 0, 1, 2, 46341, math.MaxInt32}
	cases := []struct {
		name string
		f    func(*lathe.Tensor) *lathe.Tensor
	}{
		{"neg", (*lathe.Tensor).Neg},
		{"abs", (*lathe.Tensor).Abs},
		{"square", (*lathe.Tensor).Square},
		{"sign", (*lathe.Tensor).Sign},
		{"clamp(-1e10, 5)", func(x *lathe.Tensor) *lathe.Tensor { return x.Clamp(-1e10, 5) }},
		{"clamp(-3, 1e10)", func(x *lathe.Tensor) *lathe.Tensor { return x.Clamp(-3, 1e10) }}, // a fractional bound gives float32, as torch
		{"clamp(-inf, -1e10)", func(x *lathe.Tensor) *lathe.Tensor { return x.Clamp(math.Inf(-1), -1e10) }},
		{"pow(x, 3)", func(x *lathe.Tensor) *lathe.Tensor { return x.PowScalar(3) }},
		{"x*x+x", func(x *lathe.Tensor) *lathe.Tensor { return x.Mul(x).Add(x) }},
		{"maximum(x, -2)", func(x *lathe.Tensor) *lathe.Tensor { return x.MaximumScalar(-2) }},
	}
	for _, c := range cases {
		got, err := c.f(lathe.FromSlice(dev, xs, len(xs))).Int32s()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := c.f(lathe.FromSlice(lathe.CPU, xs, len(xs))).Int32s()
		if err != nil {
			t.Fatalf("%s on the cpu: %v", c.name, err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s(%d) = %d, want %d as on the cpu", c.name, xs[i], got[i], want[i])
			}
		}
	}
	neg := lathe.FromSlice(dev, []int32{2, -1, 3, 4}, 2, 2).Transpose(0, 1)
	// The exponents are checked on the device and reported at the next
	// read-back.
	_, err := lathe.FromSlice(dev, []int32{1, 2, 3, 4}, 2, 2).Pow(neg).Int32s()
	if !errors.Is(err, lathe.ErrValue) {
		t.Errorf("int pow with a negative exponent in a strided view: error %v, want an ErrValue", err)
	}
	// So is an integer divisor of zero, with the cpu's text (the cpu
	// fails at the call, the device at the read-back).
	for _, dt := range []lathe.DType{lathe.Int32, lathe.Int64} {
		x := lathe.FromSlice(dev, []int32{5, -7, 3, 4}, 2, 2).Cast(dt)
		zero := lathe.FromSlice(dev, []int32{2, 3, 0, -2}, 2, 2).Cast(dt).Transpose(0, 1)
		_, err := x.Remainder(zero).Cast(lathe.Int64).Int64s()
		_, cpuErr := x.To(lathe.CPU).Remainder(zero.To(lathe.CPU)).Cast(lathe.Int64).Int64s()
		if !errors.Is(err, lathe.ErrValue) || cpuErr == nil || !strings.HasPrefix(err.Error(), strings.Split(cpuErr.Error(), " [called")[0]) {
			t.Errorf("%s remainder by zero: error %v, want the cpu's %v", dt, err, cpuErr)
		}
	}
}

// TestFModExact holds float32 fmod and remainder on wgpu:0 to the cpu's
// (exact: the remainder of two floats is a float) bit for bit, for every
// pair of dividends and divisors from the largest float32 to the least
// subnormal, both signs: math.wgsl reduces by frexp and ldexp, which are
// not exact on subnormals on lavapipe (fuzzing found fmod(2, 1e-40) giving
// 0.0572), so a subnormal divisor is scaled into the normal range first.
func TestFModExact(t *testing.T) {
	dev := wgpuOrSkip(t)
	mags := []float32{math.MaxFloat32, 3e38, 2, 1, 0.5, 0.1, 1.2e-38, 0x1p-126, math.Nextafter32(0x1p-126, 0),
		1e-39, 1e-40, 3e-41, 1e-44, math.SmallestNonzeroFloat32}
	var as, bs []float32
	for _, a := range mags {
		for _, b := range mags {
			as, bs = append(as, a, -a, a, -a), append(bs, b, b, -b, -b)
		}
	}
	n := len(as)
	for _, op := range []struct {
		name string
		f    func(a, b *lathe.Tensor) *lathe.Tensor
	}{{"fmod", (*lathe.Tensor).FMod}, {"remainder", (*lathe.Tensor).Remainder}} {
		got, err := op.f(lathe.FromSlice(dev, as, n), lathe.FromSlice(dev, bs, n)).Float32s()
		if err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		want, err := op.f(lathe.FromSlice(lathe.CPU, as, n), lathe.FromSlice(lathe.CPU, bs, n)).Float32s()
		if err != nil {
			t.Fatalf("%s on the cpu: %v", op.name, err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s(%g, %g) = %g, want %g as on the cpu", op.name, as[i], bs[i], got[i], want[i])
			}
		}
	}
}

// TestPowSpecials holds float32 pow on the cpu and on wgpu:0 to Go's
// math.Pow (which the cpu rounds from) where the answer is exact (and the
// scalar form, one exponent at a time, to torch's scalar exponents): IEEE's
// special cases, and a negative base with |y| ≥ 2²⁴, where every float32
// is an even integer, so the sign is + and the magnitude is |x|^y (1 for
// -1, where math.wgsl's powf once split y·log2|x| = y·0 and got NaN past
// 8e34, issue 15 defect 15).
func TestPowSpecials(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	negZero := math.Copysign(0, -1)
	cases := []struct{ x, y, want float64 }{
		{-1, 1e34, 1}, {-1, -1e34, 1}, {-1, 3e38, 1}, {-1, -3e38, 1},
		{-1, 1 << 24, 1}, {-1, 1<<24 + 2, 1}, {-1, -(1<<24 + 2), 1}, {-1, 1<<24 - 1, -1},
		{-1, 3, -1}, {-1, 0.5, nan}, {-1, inf, 1}, {-1, -inf, 1},
		{-2, 1e30, inf}, {-0.5, 1e30, 0}, {-2, -1e30, 0}, {-0.5, -1e30, inf},
		{-2, 1 << 24, inf}, {-0.5, 1 << 24, 0}, {2, 3e38, inf}, {0.5, 3e38, 0},
		{nan, 0, 1}, {nan, negZero, 1}, {inf, 0, 1}, {1, nan, 1}, {1, inf, 1}, {1, -inf, 1},
		{nan, 1, nan}, {2, nan, nan}, {0.5, inf, 0}, {0.5, -inf, inf}, {2, inf, inf}, {2, -inf, 0},
		{0, -1, inf}, {negZero, -1, -inf}, {negZero, -2, inf}, {negZero, 3, negZero}, {negZero, 2, 0},
		{0, -inf, inf}, {0, inf, 0}, {inf, -1, 0}, {inf, 0.5, inf},
		{-inf, 3, -inf}, {-inf, 2, inf}, {-inf, -3, negZero}, {-inf, -2, 0}, {-inf, 0.5, inf},
	}
	xs, ys := make([]float32, len(cases)), make([]float32, len(cases))
	for i, c := range cases {
		xs[i], ys[i] = float32(c.x), float32(c.y)
		if g := float32(math.Pow(float64(xs[i]), float64(ys[i]))); !samePow(g, c.want) {
			t.Fatalf("the table says pow(%g, %g) = %g, Go's math.Pow %g", c.x, c.y, c.want, g)
		}
	}
	// The scalar form takes 2, 3, -2, -1, 0.5 and -0.5 apart, as torch's
	// pow with a scalar exponent: (-Inf)^0.5 is √-Inf, NaN.
	scalarWant := func(x, y, want float64) float64 {
		switch y {
		case 2:
			return x * x
		case 3:
			return x * x * x
		case -2:
			return 1 / (x * x)
		case -1:
			return 1 / x
		case 0.5:
			return math.Sqrt(x)
		case -0.5:
			return 1 / math.Sqrt(x)
		}
		return want
	}
	check := func(t *testing.T, form string, got []float32, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		for i, c := range cases {
			want := c.want
			if form == "pow_scalar" {
				want = scalarWant(c.x, c.y, want)
			}
			if !samePow(got[i], want) {
				t.Errorf("%s: pow(%g, %g) = %g, want %g", form, c.x, c.y, got[i], want)
			}
		}
	}
	for _, dev := range []lathe.Device{lathe.CPU, lathe.WGPU(0)} {
		t.Run(dev.String(), func(t *testing.T) {
			if dev != lathe.CPU {
				wgpuOrSkip(t)
			}
			x, y := lathe.FromSlice(dev, xs, len(xs)), lathe.FromSlice(dev, ys, len(ys))
			got, err := x.Pow(y).Float32s()
			check(t, "pow", got, err)
			// The scalar form, one exponent at a time, as the fuzzer calls it.
			got = make([]float32, len(cases))
			for i := range cases {
				v, err := lathe.FromSlice(dev, xs[i:i+1], 1).PowScalar(float64(ys[i])).Float32s()
				if err != nil {
					t.Fatalf("pow_scalar(%g): %v", ys[i], err)
				}
				got[i] = v[0]
			}
			check(t, "pow_scalar", got, nil)
		})
	}
}

// samePow reports whether got is want: NaN for NaN, and a zero of want's
// sign.
func samePow(got float32, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(float64(got))
	}
	return float64(got) == want && math.Signbit(float64(got)) == math.Signbit(want)
}
