package cudaemu_test

import (
	"math"
	"slices"
	"testing"
)

// norm.cu's kernels at their launch contracts' edges: the grid-stride
// loops over rows, columns and elements with fewer blocks than the work
// (on a GPU the host caps a grid at 65536 blocks, which the backend's
// small cases never reach), giving the same bits as a full grid, since no
// sum's order depends on the grid; and the layer norm against a float64
// reference.
func TestNormGridStride(t *testing.T) {
	h := newHost(t)
	const rows, d = 5, 37
	x, g := make([]float64, rows*d), make([]float64, rows*d)
	for i := range x {
		x[i] = math.Sin(float64(i)*1.3)*4 + 2
		g[i] = math.Cos(float64(i) * 0.7)
	}
	w, b := x[:d], g[:d]
	xp, gp, wp, bp := put(h, x...), put(h, g...), put(h, w...), put(h, b...)
	const eps = 1e-5

	t.Run("layer_norm", func(t *testing.T) {
		var outs [][]float64
		for _, blocks := range []uint32{1, 2, rows} {
			y := zeros[float64](h, rows*d)
			h.launch("layer_norm_f64", blocks, 32, y, xp, wp, bp, int64(rows), int64(d), eps)
			outs = append(outs, get[float64](y, rows*d))
		}
		for i := 1; i < len(outs); i++ {
			if !slices.Equal(outs[0], outs[i]) {
				t.Errorf("grid %d gives other bits than one block", i)
			}
		}
		for r := range rows {
			row := x[r*d : (r+1)*d]
			m, q := 0.0, 0.0
			for _, v := range row {
				m += v
			}
			m /= d
			for _, v := range row {
				q += (v - m) * (v - m)
			}
			rstd := 1 / math.Sqrt(q/d+eps)
			for j, v := range row {
				if want, got := (v-m)*rstd*w[j]+b[j], outs[0][r*d+j]; !same(got, want, 1e-13) {
					t.Errorf("y[%d][%d] = %g, want %g", r, j, got, want)
				}
			}
		}
	})

	t.Run("column_sums", func(t *testing.T) {
		// batch_norm_sum over x as [N=5, K=37] (S=37, one channel) in
		// chunks of 2 rows: 3 partials per column, with 1 block of 32
		// threads (a grid-stride loop over the columns) and with 2.
		const chunk, np = 2, 3
		var outs [][]float64
		for _, blocks := range []uint32{1, 2} {
			partial := zeros[float64](h, 2*np*d)
			h.launch3("batch_norm_sum_f64", [3]uint32{blocks, np, 1}, [3]uint32{32, 1, 1}, partial, xp,
				int64(rows), int64(d), int64(d), int64(chunk))
			outs = append(outs, get[float64](partial, 2*np*d))
		}
		if !slices.Equal(outs[0], outs[1]) {
			t.Errorf("1 and 2 blocks give other partials")
		}
		for p := range np {
			for k := range d {
				want := 0.0
				for r := p * chunk; r < min(rows, (p+1)*chunk); r++ {
					want += x[r*d+k]
				}
				if got := outs[0][2*(p*d+k)]; got != want {
					t.Errorf("partial[%d][%d] = %g, want %g", p, k, got, want)
				}
			}
		}
	})

	t.Run("channel_walk", func(t *testing.T) {
		// dx = a·g + k·(x - mean) + d over [N=5, C=3, S=...]: x as
		// [5, 3, 12] (180 of the 185 values) with a block of 32 threads
		// and a grid of 1, 2 and 6 blocks: the walk's steps cross planes
		// and channels.
		const n, c, s = 180, 3, 12
		coef := put(h, 0.5, -1, 2, 0.25, 0.125, 3, 1, 2, 3, -0.5, 0, 0.5)
		var outs [][]float64
		for _, blocks := range []uint32{1, 2, 6} {
			dx := zeros[float64](h, n)
			h.launch("batch_norm_grad_f64", blocks, 32, dx, gp, xp, coef, int64(n), int64(c), int64(s), int64(0))
			outs = append(outs, get[float64](dx, n))
		}
		cf := []float64{0.5, -1, 2, 0.25, 0.125, 3, 1, 2, 3, -0.5, 0, 0.5}
		for i := range n {
			ch := i / s % c
			want := cf[ch]*g[i] + cf[c+ch]*(x[i]-cf[2*c+ch]) + cf[3*c+ch]
			for bi, o := range outs {
				if !same(o[i], want, 1e-15) {
					t.Errorf("grid %d: dx[%d] = %g, want %g", bi, i, o[i], want)
				}
			}
		}
	})
}
