package cudaemu_test

import (
	"math"
	"testing"
)

// softmax.cu's kernels: rows longer than a block, read through strides,
// with one block per row and with fewer blocks than rows (the grid-stride
// row loop); and the NaN and -inf rules.
func TestSoftmax(t *testing.T) {
	h := newHost(t)

	t.Run("strided-rows", func(t *testing.T) {
		// Along dim 1 of a [2,70] float64 tensor stored transposed
		// (strides 1, 2), into a contiguous out; blocks of 64 threads.
		const n = 70
		x := make([]float64, 2*n)
		for i := range x {
			x[i] = math.Sin(float64(i)) * 30
		}
		xp := put(h, x...)
		R := rows([]int64{2}, [2][]int64{{n}, {1}}, []int64{n}, [2][]int64{{1}, {2}})
		for _, blocks := range []uint32{1, 2} {
			p, lp := zeros[float64](h, 2*n), zeros[float64](h, 2*n)
			h.launch("softmax_f64", blocks, 64, p, xp, R, int64(2), int64(n))
			h.launch("log_softmax_f64", blocks, 64, lp, xp, R, int64(2), int64(n))
			gp, glp := get[float64](p, 2*n), get[float64](lp, 2*n)
			for r := range 2 {
				m, s := math.Inf(-1), 0.0
				for j := range n {
					m = math.Max(m, x[r+2*j])
				}
				for j := range n {
					s += math.Exp(x[r+2*j] - m)
				}
				for j := range n {
					want, lwant := math.Exp(x[r+2*j]-m)/s, x[r+2*j]-m-math.Log(s)
					if g := gp[r*n+j]; !same(g, want, 1e-14) {
						t.Errorf("%d blocks: softmax[%d][%d] = %g, want %g", blocks, r, j, g, want)
					}
					if g := glp[r*n+j]; !same(g, lwant, 1e-14) {
						t.Errorf("%d blocks: log_softmax[%d][%d] = %g, want %g", blocks, r, j, g, lwant)
					}
				}
			}
		}
	})

	t.Run("nan-and-inf", func(t *testing.T) {
		// A NaN makes its row NaN; -inf entries get probability 0.
		x := put(h, 1, float32(math.NaN()), 2, float32(math.Inf(-1)), 0, 0)
		p := zeros[float32](h, 6)
		h.launch("softmax_f32", 2, 32, p, x, rows([]int64{2}, [2][]int64{{3}, {3}}, []int64{3}, [2][]int64{{1}, {1}}), int64(2), int64(3))
		g := get[float32](p, 6)
		if !math.IsNaN(float64(g[0])) || !math.IsNaN(float64(g[1])) || !math.IsNaN(float64(g[2])) {
			t.Errorf("softmax(1, NaN, 2) = %v, want all NaN", g[:3])
		}
		if g[3] != 0 || !same(float64(g[4]), 0.5, 1e-7) || !same(float64(g[5]), 0.5, 1e-7) {
			t.Errorf("softmax(-inf, 0, 0) = %v, want [0 0.5 0.5]", g[3:])
		}
	})
}
