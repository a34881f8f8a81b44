package cudaemu_test

import (
	"fmt"
	"math"
	"testing"
)

// reduce.cuh's reduce_contig (<op>_contig_<dtype>): rows of contiguous
// elements read as 16-byte vectors after a scalar head up to the first
// aligned element, split over blocks. The cases put the row's start at every
// place within 16 bytes (views at an element offset), make rows a stride
// apart that moves that place from row to row, take lengths below, at and
// past whole vectors (1, 3, 4, 5, 37, 1001), leave splits empty (a split is
// rounded up to whole vectors, so 3 splits of 5 elements are 4, 1 and 0),
// and put the extremes, ties and NaNs in the head, the vectors and the tail.

// contig launches op_contig_sfx over nrows rows of n elements at x (one
// run), rows stride elements apart, with splits splits (a finish kernel
// after them when splits > 1), on blocks blocks of threads threads, and
// returns the nrows results.
func contig[Out elem](h *host, op, sfx string, x uint64, nrows, n, stride, splits int64, blocks, threads uint32, corr float64) []Out {
	h.t.Helper()
	return reduceSplits[Out](h, op+"_contig_"+sfx, op+"_finish_"+sfx, nrows, splits, blocks, threads, corr, x, nrows, n, stride)
}

// contigRuns is contig for rows of nruns runs of l elements, qstride apart
// (op_runs_sfx).
func contigRuns[Out elem](h *host, op, sfx string, x uint64, nrows, nruns, l, stride, qstride, splits int64, blocks, threads uint32, corr float64) []Out {
	h.t.Helper()
	return reduceSplits[Out](h, op+"_runs_"+sfx, op+"_finish_"+sfx, nrows, splits, blocks, threads, corr, x, nrows, nruns, l, stride, qstride)
}

// reduceSplits launches fn (args: the results, then args, then splits,
// partial and corr) and, for splits > 1, finish, and returns the nrows
// results.
func reduceSplits[Out elem](h *host, fn, finish string, nrows, splits int64, blocks, threads uint32, corr float64, args ...any) []Out {
	h.t.Helper()
	res := garbage[Out](h, int(nrows))
	partial := zeros[uint8](h, int(max(nrows*splits, 1))*32) // LATHE_ACC_MAX bytes each
	if splits == 1 {
		partial = 0
	}
	h.launch(fn, blocks, threads, append(append([]any{res}, args...), splits, partial, corr)...)
	if splits > 1 {
		h.launch(finish, 2, 32, res, partial, nrows, splits, corr)
	}
	return get[Out](res, int(nrows))
}

func TestReduceContig(t *testing.T) {
	h := newHost(t)

	t.Run("sum/f32/alignments-lengths-splits", func(t *testing.T) {
		// Quarters sum exactly in float64 in any order, so the result is
		// exact whatever order the threads and splits add in.
		const total = 3*1010 + 8
		x := make([]float32, total)
		for i := range x {
			x[i] = float32(i%17-8) * 0.25
		}
		xp := put(h, x...)
		for _, off := range []int{0, 1, 2, 3} {
			for _, n := range []int64{1, 3, 4, 5, 37, 1001} {
				for _, splits := range []int64{1, 3} {
					for _, stride := range []int64{n, n + 1} {
						name := fmt.Sprintf("off%d/n%d/splits%d/stride%d", off, n, splits, stride)
						got := contig[float32](h, "sum", "f32", at[float32](xp, off), 3, n, stride, splits, 2, 64, 0)
						for r := range 3 {
							want := 0.0
							for j := range n {
								want += float64(x[off+r*int(stride)+int(j)])
							}
							if got[r] != float32(want) {
								t.Errorf("%s: row %d = %g, want %g", name, r, got[r], want)
							}
						}
					}
				}
			}
		}
	})

	t.Run("sum/f64-i64/full-reduction", func(t *testing.T) {
		// One row (stride 0) over many splits and few blocks: the
		// grid-stride loop over tasks, with two-element vectors.
		const n = 999
		xf, xi := make([]float64, n+1), make([]int64, n+1)
		wantf, wanti := 0.0, int64(0)
		for i := range xf {
			xf[i], xi[i] = float64(i%7)-2.5, int64(i*i)-50000
			if i >= 1 {
				wantf += xf[i]
				wanti += xi[i]
			}
		}
		for _, splits := range []int64{1, 5, 16} {
			if g := contig[float64](h, "sum", "f64", at[float64](put(h, xf...), 1), 1, n, 0, splits, 3, 32, 0); g[0] != wantf {
				t.Errorf("sum f64 in %d splits = %g, want %g", splits, g[0], wantf)
			}
			if g := contig[int64](h, "sum", "i64", at[int64](put(h, xi...), 1), 1, n, 0, splits, 3, 32, 0); g[0] != wanti {
				t.Errorf("sum i64 in %d splits = %d, want %d", splits, g[0], wanti)
			}
		}
	})

	t.Run("argmax-argmin/ties-and-nan-in-head-body-tail", func(t *testing.T) {
		// 23 elements from element 1: a head of 3, 4 vectors of 4 (elements
		// 3..18 of the row), a tail of 4 (19..22).
		for _, c := range []struct {
			name   string
			set    map[int]float32
			op     string
			splits int64
			want   int64
		}{
			{"tie-head-body", map[int]float32{14: 9, 2: 9, 20: 9}, "argmax", 1, 2},
			{"tie-body-tail", map[int]float32{21: 9, 7: 9}, "argmax", 3, 7},
			{"tail-only", map[int]float32{22: -9}, "argmin", 2, 22},
			{"nan-tail-then-body", map[int]float32{21: float32(math.NaN()), 10: float32(math.NaN()), 3: 50}, "argmax", 1, 10},
			{"nan-head", map[int]float32{0: float32(math.NaN()), 5: float32(math.NaN())}, "argmin", 3, 0},
		} {
			x := make([]float32, 24)
			for i := range x {
				x[i] = 1
			}
			for i, v := range c.set {
				x[1+i] = v
			}
			if g := contig[int64](h, c.op, "f32", at[float32](put(h, x...), 1), 1, 23, 0, c.splits, 2, 32, 0); g[0] != c.want {
				t.Errorf("%s: %s = %d, want %d", c.name, c.op, g[0], c.want)
			}
		}
	})

	t.Run("max-min/nan-and-int-extremes", func(t *testing.T) {
		x := []float64{0, 1, 2, 3, math.NaN(), 5, 6}
		// From element 1: 6 elements, a head of 1, two vectors of 2 (the
		// NaN in the second) and a tail of 1.
		xp := put(h, x...)
		for _, op := range []string{"max", "min"} {
			if g := contig[float64](h, op, "f64", at[float64](xp, 1), 1, 6, 0, 1, 1, 32, 0); !math.IsNaN(g[0]) {
				t.Errorf("%s with a NaN = %g, want NaN", op, g[0])
			}
		}
		xi := []int32{5, -7, 3, 2147483647, -2147483648, 9}
		for _, c := range []struct {
			op   string
			want int32
		}{{"max", 2147483647}, {"min", -2147483648}} {
			if g := contig[int32](h, c.op, "i32", at[int32](put(h, xi...), 1), 1, 5, 0, 2, 1, 32, 0); g[0] != c.want {
				t.Errorf("%s i32 = %d, want %d", c.op, g[0], c.want)
			}
		}
	})

	t.Run("var-logsumexp/f32", func(t *testing.T) {
		// Two rows 41 apart (the second starts at another place within
		// 16 bytes), against the two-pass variance and the shifted sum.
		x := make([]float32, 83)
		for i := range x {
			x[i] = float32(math.Sin(float64(i))*3 + 10)
		}
		xp := put(h, x...)
		v := contig[float32](h, "var", "f32", at[float32](xp, 1), 2, 40, 41, 3, 2, 32, 1)
		l := contig[float32](h, "logsumexp", "f32", at[float32](xp, 1), 2, 40, 41, 1, 2, 32, 0)
		for r := range 2 {
			row := x[1+41*r : 1+41*r+40]
			mean, m := 0.0, math.Inf(-1)
			for _, e := range row {
				mean += float64(e) / 40
				m = math.Max(m, float64(e))
			}
			m2, s := 0.0, 0.0
			for _, e := range row {
				m2 += (float64(e) - mean) * (float64(e) - mean)
				s += math.Exp(float64(e) - m)
			}
			if want := m2 / 39; !same(float64(v[r]), want, 1e-6) {
				t.Errorf("var row %d = %g, want %g", r, v[r], want)
			}
			if want := m + math.Log(s); !same(float64(l[r]), want, 1e-6) {
				t.Errorf("logsumexp row %d = %g, want %g", r, l[r], want)
			}
		}
		inf := float32(math.Inf(1))
		if g := contig[float32](h, "logsumexp", "f32", put(h, 1, 2, inf, 3, 4), 1, 5, 0, 1, 1, 32, 0); !math.IsInf(float64(g[0]), 1) {
			t.Errorf("logsumexp with +inf = %g, want +inf", g[0])
		}
	})

	t.Run("runs/sum-argmax", func(t *testing.T) {
		// Rows of 3 runs of 37 elements, runs 50 apart (each starts
		// elsewhere within 16 bytes), rows 161 apart; splits that end inside
		// runs and span run boundaries (5 splits of 24: a split meets two
		// runs), and more splits than runs.
		const nruns, l, qs, rs = 3, 37, 50, 161
		x := make([]float32, 2*rs+1)
		for i := range x {
			x[i] = float32(i%13-6) * 0.5
		}
		// Row 1's maximum at q=2 e=3 and q=1 e=36 (elements 77 and 73 of
		// the row): argmax is 73, the first, in the run before 77's.
		x[1+rs+2*qs+3], x[1+rs+1*qs+36] = 99, 99
		xp := at[float32](put(h, x...), 1)
		for _, splits := range []int64{1, 2, 5, 7} {
			got := contigRuns[float32](h, "sum", "f32", xp, 2, nruns, l, rs, qs, splits, 3, 32, 0)
			am := contigRuns[int64](h, "argmax", "f32", xp, 2, nruns, l, rs, qs, splits, 3, 32, 0)
			for r := range 2 {
				want := 0.0
				for q := range nruns {
					for e := range l {
						want += float64(x[1+r*rs+q*qs+e])
					}
				}
				if got[r] != float32(want) {
					t.Errorf("splits %d: sum row %d = %g, want %g", splits, r, got[r], want)
				}
			}
			if am[1] != 1*l+36 {
				t.Errorf("splits %d: argmax row 1 = %d, want %d", splits, am[1], 1*l+36)
			}
		}
	})

	t.Run("empty-rows-and-splits", func(t *testing.T) {
		// n = 0: every split is empty and gives the identity.
		xp := put[float64](h, 1, 2)
		for _, splits := range []int64{1, 4} {
			if g := contig[float64](h, "sum", "f64", xp, 2, 0, 0, splits, 1, 32, 0); g[0] != 0 || g[1] != 0 {
				t.Errorf("empty sum in %d splits = %v, want [0 0]", splits, g)
			}
			if g := contig[float64](h, "logsumexp", "f64", xp, 1, 0, 0, splits, 1, 32, 0); !math.IsInf(g[0], -1) {
				t.Errorf("empty logsumexp in %d splits = %g, want -inf", splits, g[0])
			}
			if g := contig[float64](h, "prod", "f64", xp, 1, 0, 0, splits, 1, 32, 0); g[0] != 1 {
				t.Errorf("empty prod in %d splits = %g, want 1", splits, g[0])
			}
		}
	})
}

// reduce.cuh's reduce_cols (<op>_cols_<dtype>): out[a*C + c] reduces
// x[a*sA + k*sK + c] over k. Columns past a 32-wide tile's end (C = 37),
// planes apart by more than their size, K not a multiple of the warps or
// of the splits, the grid-stride loop over tasks, and argmax's first index
// when the ties sit in different warps and splits.
func TestReduceCols(t *testing.T) {
	h := newHost(t)
	const A, C, K, sK, sA = 2, 37, 45, 40, 45*40 + 3 // rows of 37 columns stored 40 apart
	x := make([]float64, A*sA)
	for i := range x {
		x[i] = float64(i%11) - 5
	}
	cols := func(op string, splits int64, blocks uint32) []float64 {
		res := garbage[float64](h, A*C)
		partial := zeros[uint8](h, A*C*int(splits)*32)
		if splits == 1 {
			partial = 0
		}
		xp := put(h, x...)
		h.launch(op+"_cols_f64", blocks, 64, res, xp, int64(A), int64(C), int64(K), int64(sA), int64(sK), splits, partial, 0.0)
		if splits > 1 {
			h.launch(op+"_finish_f64", 3, 32, res, partial, int64(A*C), splits, 0.0)
		}
		return get[float64](res, A*C)
	}
	argcols := func(op string, splits int64) []int64 {
		res := garbage[int64](h, A*C)
		partial := zeros[uint8](h, A*C*int(splits)*32)
		xp := put(h, x...)
		h.launch(op+"_cols_f64", 5, 96, res, xp, int64(A), int64(C), int64(K), int64(sA), int64(sK), splits, partial, 0.0)
		if splits > 1 {
			h.launch(op+"_finish_f64", 3, 32, res, partial, int64(A*C), splits, 0.0)
		}
		return get[int64](res, A*C)
	}
	for _, splits := range []int64{1, 4} {
		for _, blocks := range []uint32{1, 7} {
			got := cols("sum", splits, blocks)
			for a := range A {
				for c := range C {
					want := 0.0
					for k := range K {
						want += x[a*sA+k*sK+c]
					}
					if g := got[a*C+c]; g != want {
						t.Errorf("sum splits %d blocks %d: out[%d][%d] = %g, want %g", splits, blocks, a, c, g, want)
					}
				}
			}
		}
	}
	// Ties: column 36 of plane 1 has its maximum at k = 30 and k = 7 (other
	// warps of a 3-warp block, other splits of 4: 12 each); a NaN at k = 40
	// and k = 44 in column 0 of plane 0.
	x[sA+30*sK+36], x[sA+7*sK+36] = 100, 100
	x[40*sK], x[44*sK] = math.NaN(), math.NaN()
	for _, splits := range []int64{1, 4} {
		am, mx := argcols("argmax", splits), cols("max", splits, 2)
		if am[C+36] != 7 || am[0] != 40 {
			t.Errorf("argmax splits %d: [1][36] = %d (want 7), [0][0] = %d (want 40, the first NaN)", splits, am[C+36], am[0])
		}
		if mx[C+36] != 100 || !math.IsNaN(mx[0]) {
			t.Errorf("max splits %d: [1][36] = %g (want 100), [0][0] = %g (want NaN)", splits, mx[C+36], mx[0])
		}
	}
}
