package cudaemu_test

import (
	"math"
	"testing"
)

// unfold.cu's kernels: unfold against a direct im2col, and fold, exactly,
// against the adjoint's definition (each column entry added to the place
// it was read from, in column order).
func TestUnfoldFold(t *testing.T) {
	h := newHost(t)
	// 2 planes of 7x6; kernel 3x2, stride (2, 1), padding (1, 0), dilation
	// (1, 2): 4x4 positions.
	G := poolGeom(7, 6, 4, 4, [2]int64{3, 2}, [2]int64{2, 1}, [2]int64{1, 0}, [2]int64{1, 2}, 0, 0)
	const planes, K, L = 2, 6, 16
	x, y := make([]float64, planes*42), make([]float64, planes*K*L)
	for i := range x {
		x[i] = math.Sin(float64(i) + 0.5)
	}
	for i := range y {
		y[i] = math.Cos(float64(i) * 0.7)
	}
	col, back := zeros[float64](h, len(y)), zeros[float64](h, len(x))
	h.launch("unfold_f64", 3, 32, col, put(h, x...), int64(len(y)), bytesOf(G))
	h.launch("fold_f64", 3, 32, back, put(h, y...), int64(len(x)), bytesOf(G))
	gotCol, gotBack := get[float64](col, len(y)), get[float64](back, len(x))
	want := make([]float64, len(x))
	for pl := range planes {
		for kh := range 3 {
			for kw := range 2 {
				for oh := range 4 {
					for ow := range 4 {
						r, c := oh*2-1+kh, ow+kw*2
						inside := r >= 0 && r < 7 && c >= 0 && c < 6
						at := (pl*K+kh*2+kw)*L + oh*4 + ow
						v := 0.0
						if inside {
							v = x[pl*42+r*6+c]
							want[pl*42+r*6+c] += y[at]
						}
						if gotCol[at] != v {
							t.Errorf("unfold[%d] = %g, want %g", at, gotCol[at], v)
						}
					}
				}
			}
		}
	}
	for i, w := range want {
		if gotBack[i] != w {
			t.Errorf("fold[%d] = %.17g, want %.17g", i, gotBack[i], w)
		}
	}
}
