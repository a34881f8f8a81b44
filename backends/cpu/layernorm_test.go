package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLayerNormRowsFloat32 holds the AVX2 float32 layer norm (forward and
// backward) to the Go loops, which compute in float64 and round once: the
// vector loops round x - mean once and take the products after it in
// float32 (a few roundings, 4·2⁻²⁴ of the terms, which are about 1 here),
// and sum Σ dx̂ and Σ dx̂·x̂ in float32 lanes. The rows' lengths cover the
// vector steps' tails (d mod 8) and more than one block of the sums (256).
func TestLayerNormRowsFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, d := range []int{1, 3, 4, 7, 8, 9, 64, 101, 600} {
		const rows, eps = 7, 1e-5
		x, g := make([]float32, rows*d), make([]float32, rows*d)
		w, b := make([]float32, d), make([]float32, d)
		for i := range x {
			x[i] = float32(5 + 3*rng.NormFloat64())
			g[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		yv, yg := make([]float32, rows*d), make([]float32, rows*d)
		if !layerNormRowsFloat32(yv, x, w, b, d, eps) {
			t.Skip("no vector path on this machine or in this build")
		}
		layerNormRows(yg, x, w, b, d, eps)
		dxv, dxg := make([]float32, rows*d), make([]float32, rows*d)
		pv, pg := make([]float64, 2*d), make([]float64, 2*d)
		layerNormBackwardRowsFloat32(dxv, pv[:d], pv[d:], x, w, g, d, eps)
		layerNormBackwardRows(dxg, pg[:d], pg[d:], x, w, g, d, eps)
		for i := range yv {
			if tol := 1e-6 * (1 + math.Abs(float64(yg[i]))); math.Abs(float64(yv[i]-yg[i])) > tol {
				t.Errorf("d=%d: y[%d] = %v, the Go loop's %v", d, i, yv[i], yg[i])
			}
			if tol := 1e-6 * (1 + math.Abs(float64(dxg[i]))); math.Abs(float64(dxv[i]-dxg[i])) > tol {
				t.Errorf("d=%d: dx[%d] = %v, the Go loop's %v", d, i, dxv[i], dxg[i])
			}
		}
		// The partials add one float32 product per row.
		for i := range pv {
			if math.Abs(pv[i]-pg[i]) > rows*1e-6*(1+math.Abs(pg[i])) {
				t.Errorf("d=%d: partial[%d] = %v, the Go loop's %v", d, i, pv[i], pg[i])
			}
		}
	}
}
