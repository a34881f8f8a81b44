package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestActBackwardRows compares the float32 backward ops, on runs of every
// length up to 300 and one of 4096 (the C loop from vectorMin on, where the
// machine has AVX2, and the Go loop below it), with the float64 functions
// (math.Erf and math.Exp) rounded to float32: within an ulp, or of 2e-8·|g|,
// below half an ulp of g. gelu_backward's C loop is float32 arithmetic
// (vec_unary.h's gelu_grad<W>, in both widths), held to g·(Φ(x) + x·φ(x)) with Φ from math.Erfc:
// within 8 ulps or 3e-7·|g| (its worst over the float32s in [-16, 16] with
// g = 1 is 2.2e-7, at x = 0.024, and where the terms cancel, x near -0.75,
// only the absolute bound can hold). Infinities and NaN give torch's NaN.
func TestActBackwardRows(t *testing.T) { eachWidth(t, testActBackwardRows) }

func testActBackwardRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	ulps := func(a, b float32) uint32 {
		x, y := math.Float32bits(a), math.Float32bits(b)
		return max(x, y) - min(x, y)
	}
	for _, c := range []struct {
		name string
		f    func(g, x float64) float64
	}{{"gelu_backward", geluBackward}, {"gelu_tanh_backward", geluTanhBackward}, {"silu_backward", siluBackward},
		{"relu_backward", reluBackward[float64]}} {
		rows := float32Binary[c.name]
		for _, n := range append(lengths(300), 4096) {
			g, x, dst := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range x {
				g[i] = float32(rng.NormFloat64())
				x[i] = float32(rng.NormFloat64() * 4)
			}
			if n > 8 {
				x[0], x[1], x[2], x[3], x[4] = float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -7, 3e30
			}
			rows.vv(dst, g, x)
			for i := range dst {
				want := float32(c.f(float64(g[i]), float64(x[i])))
				got := dst[i]
				if want != want {
					if got == got {
						t.Fatalf("%s, n=%d: (%g, %g) gives %g, want NaN", c.name, n, g[i], x[i], got)
					}
					continue
				}
				ulpBound, absBound := uint32(1), 2e-8
				if c.name == "gelu_backward" && n >= vectorMin && haveAVX2 {
					v := float64(x[i])
					want = float32(float64(g[i]) * (0.5*math.Erfc(-v*invSqrt2) + v*math.Exp(-v*v/2)*invSqrt2Pi))
					ulpBound, absBound = 8, 3e-7
				}
				if ulps(got, want) > ulpBound && math.Abs(float64(got-want)) > absBound*math.Abs(float64(g[i])) {
					t.Fatalf("%s, n=%d: (%g, %g) gives %g, want %g (%d ulps)", c.name, n, g[i], x[i], got, want, ulps(got, want))
				}
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

// BenchmarkActBackward32 is each float32 backward op on 64K values, one
// thread: the row loop against the per-element Go function.
func BenchmarkActBackward32(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	g, x, dst := make([]float32, 1<<16), make([]float32, 1<<16), make([]float32, 1<<16)
	for i := range x {
		g[i], x[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	for _, name := range []string{"gelu_backward", "gelu_tanh_backward", "silu_backward", "relu_backward"} {
		rows := float32Binary[name]
		b.Run(name+"/rows", func(b *testing.B) {
			b.SetBytes(8 << 16)
			for b.Loop() {
				rows.vv(dst, g, x)
			}
		})
		b.Run(name+"/go", func(b *testing.B) {
			b.SetBytes(8 << 16)
			for b.Loop() {
				for i := range dst {
					dst[i] = rows.at(g[i], x[i])
				}
			}
		})
	}
}

// TestExpandedGradient: a backward op whose gradient is one value expanded
// over x (what a sum or a mean hands back: stride 0) gives the same bits as
// with that gradient written out, through the row kernels' C loops
// (splatRows) rather than a call per element: runs shorter and longer than
// splatChunk, with a tail, for each activation's backward and maximum.
func TestExpandedGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{7, vectorMin + 5, 3*splatChunk + 11} {
		x := tensorOf(dispatch.Float32, make([]float32, n), n)
		for i := range span[float32](x) {
			span[float32](x)[i] = float32(rng.NormFloat64() * 3)
		}
		g := float32(rng.NormFloat64())
		scalar := tensorOf(dispatch.Float32, []float32{g}, 1)
		expanded := scalar.View([]int{n}, []int{0}, 0)
		dense := tensorOf(dispatch.Float32, slices.Repeat([]float32{g}, n), n)
		for _, op := range []*dispatch.Op[dispatch.None]{ops.ReLUBackward, ops.GELUBackward, ops.GELUTanhBackward, ops.SiLUBackward, ops.Maximum} {
			got := span[float32](call(t, op, dispatch.None{}, expanded, x))
			want := span[float32](call(t, op, dispatch.None{}, dense, x))
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s, n=%d: [%d] = %v with the gradient expanded, %v written out", op.Name, n, i, got[i], want[i])
				}
			}
		}
	}
}

// TestSplatRowsHeap: splatRows' copies of the scalar take Go heap in
// proportion to the row, not a whole chunk's 8 KiB for every row (an
// expanded gradient of short rows, as a mean over the last dim hands
// back, took 8 KiB a row).
func TestSplatRowsHeap(t *testing.T) {
	dst, q := make([]float32, 8), make([]float32, 8)
	vv := func(dst, p, q []float32) {
		for i := range dst {
			dst[i] = p[i] * q[i]
		}
	}
	const calls = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		splatRows(dst, 2, q, vv)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > 256 {
		t.Errorf("a row of 8 took %d bytes of Go heap, want at most 256", per)
	}
}
