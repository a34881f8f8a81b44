package cudaemu_test

import (
	"fmt"
	"math"
	"testing"
)

// softmax.cu's fast path (softmax_contig: _warp_ and _block_ kernels) on
// rows of contiguous elements: every place of a row's start within 16
// bytes, out placed like x (vector stores) and not (scalar stores), rows a
// stride apart that moves the alignment from row to row, short rows that
// share a warp, lengths from 1
// through a head, whole vectors and a tail to rows longer than the
// registers hold (the part read again from memory), more rows than the
// grid has groups (the grid-stride loop), and the NaN and infinity rules.

// softmaxRef is the cpu's general softmax (or log_softmax) of one row:
// x - max in the dtype (f32 rounds it), exp in the dtype's precision, the
// sum and the last step in float64. The fast path's float32 arithmetic (the
// cpu's float32 row's: per-vector sums and scaling in float32) is within
// the tests' float32 tolerance of it.
func softmaxRef(row []float64, f32 bool, log bool) []float64 {
	round := func(v float64) float64 {
		if f32 {
			return float64(float32(v))
		}
		return v
	}
	m := math.Inf(-1)
	for _, v := range row {
		if v > m || v != v {
			m = v
		}
	}
	s := 0.0
	for _, v := range row {
		s += round(math.Exp(round(v - m)))
	}
	out := make([]float64, len(row))
	for j, v := range row {
		d := round(v - m)
		if log {
			out[j] = round(d - math.Log(s))
		} else {
			out[j] = round(round(math.Exp(d)) / s)
		}
	}
	return out
}

func TestSoftmaxContig(t *testing.T) {
	h := newHost(t)

	// check runs kernel fn (prefix softmax or log_softmax, form _warp_ or
	// _block_) over nrows rows of n elements, x's rows xs apart from
	// element xoff of its storage, out's os apart from element ooff, and
	// compares with softmaxRef.
	check := func(t *testing.T, sfx, form string, log bool, x []float64, nrows, n, xs, xoff, os, ooff int, blocks, threads uint32) {
		t.Helper()
		f32 := sfx == "f32"
		name := "softmax"
		if log {
			name = "log_softmax"
		}
		size := ooff + (nrows-1)*os + n
		var xp, op uint64
		if f32 {
			x32 := make([]float32, len(x))
			for i, v := range x {
				x32[i] = float32(v)
				x[i] = float64(x32[i])
			}
			xp, op = at[float32](put(h, x32...), xoff), at[float32](garbage[float32](h, size), ooff)
		} else {
			xp, op = at[float64](put(h, x...), xoff), at[float64](garbage[float64](h, size), ooff)
		}
		h.launch(name+form+sfx, blocks, threads, op, xp, int64(nrows), int32(n), int64(os), int64(xs))
		tol := 1e-14
		var got []float64
		if f32 {
			tol = 2e-6
			for _, v := range get[float32](op, (nrows-1)*os+n) {
				got = append(got, float64(v))
			}
		} else {
			got = get[float64](op, (nrows-1)*os+n)
		}
		for r := range nrows {
			want := softmaxRef(x[xoff+r*xs:xoff+r*xs+n], f32, log)
			for j := range n {
				// log_softmax's max element is -log(sum), which the
				// sum's order moves by an ulp of the sum: an absolute
				// tolerance of the same size.
				if g := got[r*os+j]; !same(g, want[j], tol) && math.Abs(g-want[j]) > tol {
					t.Errorf("%s%s%s row %d [%d] = %.9g, want %.9g", name, form, sfx, r, j, g, want[j])
					return
				}
			}
		}
	}
	data := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = math.Sin(float64(i)*0.7) * 8
		}
		return x
	}

	t.Run("alignments-lengths", func(t *testing.T) {
		for _, sfx := range []string{"f32", "f64"} {
			for _, n := range []int{1, 3, 5, 8, 33, 70} {
				for _, xoff := range []int{0, 1, 2, 3} {
					for _, ooff := range []int{xoff, (xoff + 1) % 4} { // like x: vector stores; else scalar
						for _, log := range []bool{false, true} {
							t.Run(fmt.Sprintf("%s/n%d/x%d/out%d/log=%v", sfx, n, xoff, ooff, log), func(t *testing.T) {
								// 3 rows n+1 apart in x (each starts elsewhere
								// within 16 bytes), n apart in out; a warp per
								// row, 2 warps per block, 1 block: the second
								// warp takes row 1 and then none, the first
								// rows 0 and 2.
								x := data(xoff + 3*(n+1))
								check(t, sfx, "_warp_", log, x, 3, n, n+1, xoff, n, ooff, 1, 64)
								check(t, sfx, "_block_", log, x, 3, n, n+1, xoff, n, ooff, 2, 32)
							})
						}
					}
				}
			}
		}
	})

	t.Run("short-rows-share-a-warp", func(t *testing.T) {
		// Rows of up to 4 vectors take 4 lanes (8 rows a warp), 8 vectors
		// 8 lanes, ...: 37 rows on one block of 2 warps loop over rows with
		// a last group past the end; rows 1 apart in out, n+3 in x.
		for _, c := range []struct {
			sfx string
			n   int
		}{{"f32", 1}, {"f32", 5}, {"f32", 17}, {"f32", 100}, {"f64", 3}, {"f64", 9}, {"f64", 40}} {
			for _, log := range []bool{false, true} {
				x := data(1 + 37*(c.n+3))
				check(t, c.sfx, "_warp_", log, x, 37, c.n, c.n+3, 1, c.n, 1, 1, 64)
			}
		}
	})

	t.Run("past-the-registers", func(t *testing.T) {
		// A block of 32 threads caches 32*8 vectors: 1024 float32, 512
		// float64; longer rows read the rest from memory in each pass. The
		// warp form takes such rows too (the host sends it shorter ones).
		for _, c := range []struct {
			sfx  string
			n    int
			xoff int
		}{{"f32", 1100, 1}, {"f64", 600, 1}, {"f32", 1024 + 7, 0}} {
			for _, log := range []bool{false, true} {
				x := data(c.xoff + 2*c.n)
				check(t, c.sfx, "_block_", log, x, 2, c.n, c.n, c.xoff, c.n, c.xoff, 1, 32)
				check(t, c.sfx, "_warp_", log, x, 2, c.n, c.n, c.xoff, c.n, 0, 1, 32)
			}
		}
	})

	t.Run("nan-and-inf", func(t *testing.T) {
		nan, inf := math.NaN(), math.Inf(1)
		for _, row := range [][]float64{
			{1, nan, 2, 3, 4, 5, 6},          // NaN in the head: the row is NaN
			{1, 2, 3, 4, 5, 6, nan},          // in the tail
			{-inf, 0, 0, -inf, 1, -inf, 2},   // -inf entries get 0
			{-inf, -inf, -inf, -inf, -inf},   // all -inf: NaN, as the cpu's
			{1, inf, 2, 3, 4, 5},             // +inf: inf - inf is NaN
			{-1e30, 1e30, 0, 5, -5, 1e30, 7}, // a max far from the rest
		} {
			for _, sfx := range []string{"f32", "f64"} {
				for _, log := range []bool{false, true} {
					x := append([]float64{0}, row...)
					check(t, sfx, "_warp_", log, x, 1, len(row), 0, 1, 0, 1, 1, 32)
					check(t, sfx, "_block_", log, x, 1, len(row), 0, 1, 0, 1, 1, 64)
				}
			}
		}
	})
}
