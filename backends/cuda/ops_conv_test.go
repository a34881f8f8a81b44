package cuda

import (
	"math/rand/v2"
	"testing"
)

// TestStridedGemm: the column-major GEMM that stridedGemm gives cuBLAS,
// run by a reference interpreter of cuBLAS's semantics over one flat
// memory (addresses are element indices), computes batchedProduct's
// row-major products: conv's three (a broadcast weight, a transposed
// weight, transposed columns), a product with a padded leading dim, and
// one row. Layouts that are not BLAS matrices are refused.
func TestStridedGemm(t *testing.T) {
	const o, c, k, l, n = 3, 4, 2, 5, 2 // conv: channels out, in, taps, positions, images
	const ck = c * k
	cases := []struct {
		name    string
		m, n, k int
		batch   int
		s       cMatmulStrides
	}{
		{"conv forward", o, l, ck, n, cMatmulStrides{A: [3]int64{0, ck, 1}, B: [3]int64{c * k * l, l, 1}, C: [3]int64{o * l, l, 1}}},
		{"conv input backward", ck, l, o, n, cMatmulStrides{A: [3]int64{0, 1, ck}, B: [3]int64{o * l, l, 1}, C: [3]int64{c * k * l, l, 1}}},
		{"conv weight backward", o, ck, l, n, cMatmulStrides{A: [3]int64{o * l, l, 1}, B: [3]int64{c * k * l, 1, l}, C: [3]int64{o * ck, ck, 1}}},
		{"padded leading dims", 3, 4, 5, 2, cMatmulStrides{A: [3]int64{40, 7, 1}, B: [3]int64{50, 9, 1}, C: [3]int64{30, 6, 1}}},
		{"one row", 1, 4, 3, 1, cMatmulStrides{A: [3]int64{0, 99, 1}, B: [3]int64{0, 4, 1}, C: [3]int64{0, 99, 1}}},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range cases {
		const aAt, bAt, cAt, span = 0, 1000, 2000, 1000
		mem := make([]float64, 3*span)
		for i := range 2 * span {
			mem[i] = float64(rng.IntN(9) - 4)
		}
		g, ok := stridedGemm(aAt, bAt, cAt, tc.m, tc.n, tc.k, tc.batch, tc.s)
		if !ok {
			t.Errorf("%s: refused", tc.name)
			continue
		}
		runColumnMajor(mem, g)
		for bi := range tc.batch {
			for i := range tc.m {
				for j := range tc.n {
					want := 0.0
					for p := range tc.k {
						want += mem[aAt+int64At(tc.s.A, bi, i, p)] * mem[bAt+int64At(tc.s.B, bi, p, j)]
					}
					if got := mem[cAt+int64At(tc.s.C, bi, i, j)]; got != want {
						t.Fatalf("%s: C[%d][%d][%d] = %v, want %v (%+v)", tc.name, bi, i, j, got, want, g)
					}
				}
			}
		}
	}
	for _, s := range []cMatmulStrides{
		{A: [3]int64{0, 2, 2}, B: [3]int64{0, 4, 1}, C: [3]int64{0, 4, 1}}, // A neither row- nor column-major
		{A: [3]int64{0, 3, 1}, B: [3]int64{0, 4, 1}, C: [3]int64{0, 1, 3}}, // C column-major
	} {
		if g, ok := stridedGemm(0, 0, 0, 3, 4, 3, 1, s); ok {
			t.Errorf("%+v: took %+v", s, g)
		}
	}
	if _, ok := stridedGemm(0, 0, 0, 3, 4, 0, 1, cMatmulStrides{A: [3]int64{0, 1, 1}, B: [3]int64{0, 4, 1}, C: [3]int64{0, 4, 1}}); ok {
		t.Error("k = 0 went to cuBLAS")
	}
}

func int64At(s [3]int64, b, i, j int) int { return b*int(s[0]) + i*int(s[1]) + j*int(s[2]) }

// runColumnMajor is cuBLAS's gemmStridedBatched with alpha 1 and beta 0 on
// mem: C = op(A) op(B), every matrix column-major with its leading dim.
func runColumnMajor(mem []float64, g gemmArgs) {
	opA := func(base, i, p int) float64 { // op(A) is m x k
		if g.transA {
			return mem[base+p+i*g.lda]
		}
		return mem[base+i+p*g.lda]
	}
	opB := func(base, p, j int) float64 { // op(B) is k x n
		if g.transB {
			return mem[base+j+p*g.ldb]
		}
		return mem[base+p+j*g.ldb]
	}
	for bi := range g.batch {
		a, b, c := int(g.a)+bi*int(g.strideA), int(g.b)+bi*int(g.strideB), int(g.c)+bi*int(g.strideC)
		for i := range g.m {
			for j := range g.n {
				sum := 0.0
				for p := range g.k {
					sum += opA(a, i, p) * opB(b, p, j)
				}
				mem[c+i+j*g.ldc] = sum
			}
		}
	}
}
