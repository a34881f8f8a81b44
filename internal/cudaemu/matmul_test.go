package cudaemu_test

import (
	"math"
	"testing"

	"github.com/lathe-ml/lathe/internal/cudaemu"
)

// matmul.cu's tiled kernel: sizes that are not multiples of the tile, a
// transposed B, a broadcast (batch stride 0) A, and grids smaller than the
// work (the grid-stride loops), which the backend's launches never are.
func TestMatmulTiled(t *testing.T) {
	h := newHost(t)
	const M, N, K, batch = 37, 19, 23, 3
	A, B := make([]float64, M*K), make([]float64, batch*N*K)
	for i := range A {
		A[i] = math.Sin(float64(i))
	}
	for i := range B {
		B[i] = math.Cos(float64(i))
	}
	C := make([]float64, batch*M*N)
	for i := range C {
		C[i] = -1
	}
	a, b, c := put(h, A...), put(h, B...), put(h, C...)
	// A: one [M,K] matrix for every batch; B stored as [batch][N][K] and
	// read transposed as [K,N]; C contiguous [batch][M][N].
	S := bytesOf(cMatmulStrides{A: [3]int64{0, K, 1}, B: [3]int64{N * K, 1, K}, C: [3]int64{M * N, N, 1}})
	for _, grid := range [][3]uint32{{2, 3, 3}, {1, 1, 1}} {
		cudaemu.Write(c, bytesOf(C)) // -1 again, so each grid writes all of C
		h.launch3("matmul_tiled_f64", grid, [3]uint32{16, 16, 1}, a, b, c, int64(M), int64(N), int64(K), int64(batch), S)
		got := get[float64](c, len(C))
		for bi := range batch {
			for i := range M {
				for j := range N {
					want := 0.0
					for k := range K {
						want += A[i*K+k] * B[bi*N*K+j*K+k]
					}
					if g := got[bi*M*N+i*N+j]; !same(g, want, 1e-12) {
						t.Errorf("grid %v: C[%d][%d][%d] = %g, want %g", grid, bi, i, j, g, want)
					}
				}
			}
		}
	}

	// K = 0 writes zeros.
	c1 := put[float32](h, -1)
	h.launch3("matmul_tiled_f32", [3]uint32{1, 1, 1}, [3]uint32{16, 16, 1}, put[float32](h, 2), put[float32](h, 3), c1,
		int64(1), int64(1), int64(0), int64(1), bytesOf(cMatmulStrides{}))
	if g := get[float32](c1, 1)[0]; g != 0 {
		t.Errorf("K = 0 gives %g, want 0", g)
	}
}
