package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/attnref"
)

// TestAttentionDropoutKernels holds the fused kernels with dropout,
// forward and backward, to internal/attnref's float64 attention with the
// same mask: several key blocks (the backward's separate query pass) and
// one (its dQ in the key pass), grouped heads, causal rows, an additive
// mask, rows that start mid-way through a Philox block (Lk not a multiple
// of 4), in float64 and in float32 (the C rows where the machine has
// them).
func TestAttentionDropoutKernels(t *testing.T) {
	cases := []struct {
		s      attnref.Sizes
		causal bool
		masked bool
		p      float64
	}{
		{attnref.Sizes{N: 2, Hq: 2, Hk: 1, Lq: 70, Lk: 301, E: 8, Ev: 5}, false, false, 0.3},
		{attnref.Sizes{N: 1, Hq: 2, Hk: 2, Lq: 130, Lk: 203, E: 4, Ev: 3}, true, false, 0.5},
		{attnref.Sizes{N: 1, Hq: 4, Hk: 2, Lq: 66, Lk: 99, E: 6, Ev: 6}, true, false, 0.9},
		{attnref.Sizes{N: 2, Hq: 2, Hk: 2, Lq: 20, Lk: 150, E: 3, Ev: 2}, false, true, 0.2},
	}
	for _, c := range cases {
		for _, dt := range []dispatch.DType{dispatch.Float64, dispatch.Float32} {
			t.Run(fmt.Sprintf("%+v/causal=%v/masked=%v/p=%v/%s", c.s, c.causal, c.masked, c.p, dt), func(t *testing.T) {
				s := c.s
				rng := rand.New(rand.NewPCG(uint64(s.Lq), uint64(s.Lk)))
				normal := func(n int) []float64 {
					x := make([]float64, n)
					for i := range x {
						x[i] = rng.NormFloat64()
					}
					return x
				}
				q, k, v := normal(s.N*s.Hq*s.Lq*s.E), normal(s.N*s.Hk*s.Lk*s.E), normal(s.N*s.Hk*s.Lk*s.Ev)
				var maskVals []float64
				maskFn := func(n, h, i, j int) float64 {
					if c.causal && j > i {
						return math.Inf(-1)
					}
					if maskVals != nil {
						return maskVals[((n*s.Hq+h)*s.Lq+i)*s.Lk+j]
					}
					return 0
				}
				if c.masked {
					maskVals = normal(s.N * s.Hq * s.Lq * s.Lk)
				}
				const key = 0x0123456789abcdef
				a := ops.AttentionParams{Scale: 0.4, Causal: c.causal, Dropout: ops.Mask{P: c.p, Key: key}}
				ref := attnref.New(s, a.Scale, q, k, v, maskFn)
				ref.DropP, ref.DropKey = c.p, key
				args := []*dispatch.Tensor{
					floatTensor(dt, q, []int{s.N, s.Hq, s.Lq, s.E}),
					floatTensor(dt, k, []int{s.N, s.Hk, s.Lk, s.E}),
					floatTensor(dt, v, []int{s.N, s.Hk, s.Lk, s.Ev}),
				}
				fwd, bwd := ops.Attention, ops.AttentionBackward
				if c.masked {
					args = append(args, floatTensor(dt, maskVals, []int{s.N, s.Hq, s.Lq, s.Lk}))
					fwd, bwd = ops.AttentionMasked, ops.AttentionMaskedBackward
				}
				out, err := dispatch.Call(fwd, a, args...)
				if err != nil {
					t.Fatal(err)
				}
				grad := normal(out.Numel())
				back, err := dispatch.Call(bwd, a, append(args, out, floatTensor(dt, grad, out.Shape))...)
				if err != nil {
					t.Fatal(err)
				}
				tol := 1e-10
				if dt == dispatch.Float32 {
					tol = 1e-4
				}
				gotOut := toF64(out)
				closeTo(t, "forward", gotOut, ref.Forward(), tol)
				closeTo(t, "backward", toF64(back), ref.Backward(gotOut, grad), tol)
			})
		}
	}
}

// closeTo fails t where got and want differ by more than tol relative to
// 1 + |want|.
func closeTo(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestDropBlockRows holds dropout.c's block rows to the Go rows, bit for
// bit, in float32 and float64: rows that start at each word of a Philox
// block, shorter and longer than a turn of 32 words, causal rows that see
// none, some or all of their keys, in place and into another block.
func TestDropBlockRows(t *testing.T) {
	if !haveAVX2 {
		t.Skip("cpu: no AVX2, so no C rows")
	}
	testDropBlockRows[float32](t)
	testDropBlockRows[float64](t)
}

func testDropBlockRows[T float](t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, cols := range []int{1, 5, 31, 33, 70, 128} {
		for first := range uint64(5) {
			for _, causal := range []bool{false, true} {
				for _, inPlace := range []bool{false, true} {
					const ld, rows = 130, 9
					b := probBlock{ld: ld, rows: rows, cols: cols, causal: causal, diag: -3, first: first + 1<<33, step: 77}
					src := make([]T, ld*rows)
					for i := range src {
						src[i] = T(rng.NormFloat64())
					}
					c, g := slices.Clone(src), slices.Clone(src)
					cIn, gIn := src, src
					if inPlace {
						cIn, gIn = c, g
					}
					const key, threshold, scale = 0xfeedface12345678, 1 << 31, 2
					if !dropoutBlockC(c, cIn, b, key, threshold, T(scale)) {
						t.Fatal("dropout.c refused the block")
					}
					dropBlockRows(g, gIn, b, key, threshold, T(scale))
					for i := range c {
						if math.Float64bits(float64(c[i])) != math.Float64bits(float64(g[i])) {
							t.Fatalf("cols %d first %d causal %v in place %v: [%d] = %v in C, %v in Go", cols, first, causal, inPlace, i, c[i], g[i])
						}
					}
				}
			}
		}
	}
}
