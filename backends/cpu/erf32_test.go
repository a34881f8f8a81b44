package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// TestErf32Ulps compares erf with float64 math.Erf rounded to float32, in
// ulps, on every 61st non-negative float32 up to +Inf (61 is prime, so the
// sample meets every low mantissa pattern) and on every one with
// LATHE_ERF32_EXHAUSTIVE=1 (about 20 s). Both paths are measured: erfRows
// on runs of 4096 (the C loop where the machine has AVX2) and the Go erf32.
// erf is odd and both take the sign apart, so the negative half is the
// mirror image.
func TestErf32Ulps(t *testing.T) {
	step := uint64(61)
	if os.Getenv("LATHE_ERF32_EXHAUSTIVE") != "" {
		step = 1
	}
	const maxUlps = 1
	ulps := func(a, b float32) uint32 {
		x, y := math.Float32bits(a), math.Float32bits(b)
		return max(x, y) - min(x, y)
	}
	last := uint64(math.Float32bits(float32(math.Inf(1))))
	src, dst := make([]float32, 0, 4096), make([]float32, 4096)
	var worst [2]uint32
	var at [2]float32
	check := func() {
		erfRows(dst[:len(src)], src)
		for i, x := range src {
			want := erf64to32(x)
			for p, got := range []float32{dst[i], erf32(x)} {
				if d := ulps(got, want); d > worst[p] {
					worst[p], at[p] = d, x
				}
			}
		}
		src = src[:0]
	}
	for b := uint64(0); b <= last; b += step {
		if src = append(src, math.Float32frombits(uint32(b))); len(src) == cap(src) {
			check()
		}
	}
	check()
	for p, name := range []string{"erfRows", "erf32"} {
		t.Logf("%s: max error %d ulp (at x = %g), every %d-th float32 in [0, +Inf]", name, worst[p], at[p], step)
		if worst[p] > maxUlps {
			t.Errorf("%s is %d ulps from math.Erf at x = %g; want <= %d", name, worst[p], at[p], maxUlps)
		}
	}
}

func TestErf32Special(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct{ x, want float32 }{
		{0, 0}, {float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1))},
		{inf, 1}, {-inf, -1}, {100, 1}, {-100, -1}, {-0.5, erf64to32(-0.5)},
		{-2.5, erf64to32(-2.5)}, {-3.5, erf64to32(-3.5)}, {1e-40, erf64to32(1e-40)},
	} {
		got := erf32(c.x)
		if math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("erf32(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if nan := erf32(float32(math.NaN())); nan == nan {
		t.Errorf("erf32(NaN) = %g, want NaN", nan)
	}
}

func erf64to32(x float32) float32 { return float32(math.Erf(float64(x))) }

// BenchmarkErf32 is erf on 64K standard-normal float32s: erfRows against
// math.Erf through float64, the path it replaces.
func BenchmarkErf32(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src, dst := make([]float32, 1<<16), make([]float32, 1<<16)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	b.Run("erf32", func(b *testing.B) {
		b.SetBytes(4 << 16)
		for b.Loop() {
			erfRows(dst, src)
		}
	})
	b.Run("math.Erf", func(b *testing.B) {
		f := via64[float32](math.Erf)
		b.SetBytes(4 << 16)
		for b.Loop() {
			for i, v := range src {
				dst[i] = f(v)
			}
		}
	})
}

// TestGeluRows compares geluRows (from vectorMin on, where the machine has
// AVX2, shim.c's float32 lanes; below, gelu32's float64) with float64's
// GELU, x/2·erfc(-x/√2), rounded to float32: within 8 ulps (the float32
// kernel's worst over every float32 in [-16, 16] is 7, near x = -0.065),
// or 8 of the smallest subnormal where the result is below float32's
// normal range. Runs of every length up to 300 and one of 4096 take
// random values and ±Inf and NaN; then a sweep of the float32s in
// [-16, 16], every 997th bit pattern.
func TestGeluRows(t *testing.T) { eachWidth(t, testGeluRows) }

func testGeluRows(t *testing.T) {
	want := func(x float32) float32 {
		v := float64(x)
		return float32(0.5 * v * math.Erfc(-v/math.Sqrt2))
	}
	check := func(n int, src, dst []float32) {
		t.Helper()
		for i, x := range src {
			w, got := want(x), dst[i]
			if w != w || math.IsInf(float64(x), -1) { // gelu(-Inf) = -Inf·0: NaN, as torch's
				if got == got {
					t.Fatalf("n=%d: gelu(%g) = %g, want NaN", n, x, got)
				}
				continue
			}
			if ulps(got, w) > 8 && math.Abs(float64(got-w)) > 8*math.SmallestNonzeroFloat32 {
				t.Fatalf("n=%d: gelu(%g) = %g, want %g (%d ulps)", n, x, got, w, ulps(got, w))
			}
		}
	}
	inf := float32(math.Inf(1))
	rowsCases(geluRows, 3, 4, []float32{inf, -inf, float32(math.NaN())}, -16, 16, check)
}

// TestExpRows compares expRows (from vectorMin on, where the machine has
// AVX2, shim.c's float32 lanes; below, math.Exp's float64) with float64's
// e^x rounded to float32: within 2 ulps, or 2 of the smallest subnormal
// below float32's normal range; +Inf past 88.72, 0 far below, NaN for
// NaN. Runs of every length up to 300 and one of 4096, then every 997th
// float32 in [-110, 90].
func TestExpRows(t *testing.T) {
	check := func(n int, src, dst []float32) {
		t.Helper()
		for i, x := range src {
			w, got := float32(math.Exp(float64(x))), dst[i]
			if w != w {
				if got == got {
					t.Fatalf("n=%d: exp(%g) = %g, want NaN", n, x, got)
				}
				continue
			}
			if got != w && (math.IsInf(float64(w), 0) || math.IsInf(float64(got), 0) ||
				ulps(got, w) > 2 && math.Abs(float64(got-w)) > 2*math.SmallestNonzeroFloat32) {
				t.Fatalf("n=%d: exp(%g) = %g, want %g (%d ulps)", n, x, got, w, ulps(got, w))
			}
		}
	}
	inf := float32(math.Inf(1))
	rowsCases(expRows, 5, 30, []float32{inf, -inf, float32(math.NaN()), 88.72283, 88.72284, -103.97}, -110, 90, check)
}

// TestSqrtRows: sqrtRows gives float64's square root rounded to float32,
// bit for bit (NaN as any NaN), over every 997th float32 bit pattern (both
// signs, subnormals, ±Inf, NaNs) and runs of every length up to 300.
func TestSqrtRows(t *testing.T) {
	var src []float32
	for b := uint64(0); b < 1<<32; b += 997 {
		src = append(src, math.Float32frombits(uint32(b)))
	}
	src = append(src, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)))
	check := func(src []float32) {
		t.Helper()
		dst := make([]float32, len(src))
		sqrtRows(dst, src)
		for i, x := range src {
			w, got := sqrt32(x), dst[i]
			if math.Float32bits(got) != math.Float32bits(w) && !(w != w && got != got) {
				t.Fatalf("n=%d: sqrt(%g) = %g, want %g", len(src), x, got, w)
			}
		}
	}
	check(src)
	for n := range 300 {
		check(src[1000 : 1000+n])
	}
}

// sweep is every 997th float32 bit pattern in [lo, hi] (lo < 0 < hi): the
// negative ones down from lo to the smallest normal, the rest up from +0.
func sweep(lo, hi float32) []float32 {
	var xs []float32
	for b := math.Float32bits(lo); b > math.Float32bits(-0x1p-126); b -= 997 {
		xs = append(xs, math.Float32frombits(b))
	}
	for b := uint32(0); b < math.Float32bits(hi); b += 997 {
		xs = append(xs, math.Float32frombits(b))
	}
	return xs
}

// rowsCases runs rows over random runs (normal values times scale) of
// every length up to 300 and one of 4096, the first values of each long
// enough run replaced by specials, then over sweep(lo, hi), and hands
// each to check.
func rowsCases(rows func(dst, src []float32), seed uint64, scale float64, specials []float32, lo, hi float32, check func(n int, src, dst []float32)) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for _, n := range append(lengths(300), 4096) {
		src, dst := make([]float32, n), make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * scale)
		}
		if n > len(specials) {
			copy(src, specials)
		}
		rows(dst, src)
		check(n, src, dst)
	}
	xs := sweep(lo, hi)
	dst := make([]float32, len(xs))
	rows(dst, xs)
	check(len(xs), xs, dst)
}
