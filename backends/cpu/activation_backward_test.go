package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGeluBackwardRows compares float32 gelu_backward, on runs of every
// length up to 300 and one of 4096 (the C loop from vectorMin on, where the
// machine has AVX2, and the Go loop below it and in the tails), with the
// float64 geluBackward (math.Erf) rounded to float32: within an ulp of it,
// or of 2e-8·|g|, below half an ulp of g: where the terms of gelu' cancel
// (x near -0.75), and below x = -5.54, where erf32's polynomial gives erf =
// -1 and so drops Φ(x) < 1.5e-8, as gelu does (and PyTorch's float32 1 +
// erf). Infinities and NaN give torch's NaN.
func TestGeluBackwardRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	ulps := func(a, b float32) uint32 {
		x, y := math.Float32bits(a), math.Float32bits(b)
		return max(x, y) - min(x, y)
	}
	for _, n := range append(lengths(300), 4096) {
		g, x, dst := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			g[i] = float32(rng.NormFloat64())
			x[i] = float32(rng.NormFloat64() * 3)
		}
		if n > 8 {
			x[0], x[1], x[2], x[3] = float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -7
		}
		geluBackwardRows.vv(dst, g, x)
		for i := range dst {
			want := float32(geluBackward(float64(g[i]), float64(x[i])))
			got := dst[i]
			if want != want {
				if got == got {
					t.Fatalf("n=%d: gelu_backward(%g, %g) = %g, want NaN", n, g[i], x[i], got)
				}
				continue
			}
			if ulps(got, want) > 1 && math.Abs(float64(got-want)) > 2e-8*math.Abs(float64(g[i])) {
				t.Fatalf("n=%d: gelu_backward(%g, %g) = %g, want %g (%d ulps)", n, g[i], x[i], got, want, ulps(got, want))
			}
		}
	}
}

func lengths(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// BenchmarkGeluBackward32 is float32 gelu_backward on 64K values, one
// thread: the row loop against the per-element Go function.
func BenchmarkGeluBackward32(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	g, x, dst := make([]float32, 1<<16), make([]float32, 1<<16), make([]float32, 1<<16)
	for i := range x {
		g[i], x[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(8 << 16)
		for b.Loop() {
			geluBackwardRows.vv(dst, g, x)
		}
	})
	b.Run("go", func(b *testing.B) {
		b.SetBytes(8 << 16)
		for b.Loop() {
			for i := range dst {
				dst[i] = geluBackward32(g[i], x[i])
			}
		}
	})
}
