package cudaemu_test

import (
	"bytes"
	"math"
	"testing"
	"unsafe"

	"github.com/lathe-ml/lathe/internal/cudaemu"
)

// reduce.cu's and moments.cu's kernels: the thread, block and split
// (block + finish) forms must agree with a plain loop, and the NaN, tie and
// infinity rules must be the cpu backend's, which random data does not
// reach.

// garbage is n elements of device memory that no check's answer is (every
// byte 0xa5: a small negative number as a float, neither NaN nor 0), so a
// kernel that writes nothing is caught.
func garbage[T elem](h *host, n int) uint64 {
	size := n * int(unsafe.Sizeof(*new(T)))
	p := zeros[uint8](h, size)
	cudaemu.Write(p, bytes.Repeat([]byte{0xa5}, size))
	return p
}

// reduce3 reduces one row of n contiguous elements at x with the kernels
// op_<form>_sfx three ways and returns the three results: the thread form
// (a block of 7 threads), the block form (one block of 96 threads, three
// warps) and the split form (3 partial results from a grid of 2 blocks of
// 64 threads, finished by 2 blocks of 32).
func reduce3[Out elem](h *host, op, sfx string, x uint64, n int64, corr float64) [3]Out {
	h.t.Helper()
	R := rows(nil, [2][]int64{}, []int64{n}, [2][]int64{{0}, {1}})
	res := garbage[Out](h, 3)
	partial := zeros[uint8](h, 3*32) // LATHE_ACC_MAX bytes each
	h.launch(op+"_thread_"+sfx, 1, 7, at[Out](res, 0), x, R, int64(1), n, corr)
	h.launch(op+"_block_"+sfx, 1, 96, at[Out](res, 1), x, R, int64(1), n, int64(1), uint64(0), corr)
	h.launch(op+"_block_"+sfx, 2, 64, at[Out](res, 2), x, R, int64(1), n, int64(3), partial, corr)
	h.launch(op+"_finish_"+sfx, 2, 32, at[Out](res, 2), partial, int64(1), int64(3), corr)
	return [3]Out(get[Out](res, 3))
}

func TestReduce(t *testing.T) {
	h := newHost(t)
	inf := math.Inf(1)

	t.Run("sum/int32-in-int64", func(t *testing.T) {
		x := make([]int32, 1000)
		var want int64
		for i := range x {
			x[i] = int32(i%13 - 6)
			want += int64(x[i])
		}
		for k, g := range reduce3[int32](h, "sum", "i32", put(h, x...), 1000, 0) {
			if int64(g) != want {
				t.Errorf("form %d = %d, want %d", k, g, want)
			}
		}
	})

	t.Run("sum/float32-in-float64", func(t *testing.T) {
		x := make([]float32, 777)
		var want float64
		for i := range x {
			x[i] = float32(0.1) * float32(i%10)
			want += float64(x[i])
		}
		for k, g := range reduce3[float32](h, "sum", "f32", put(h, x...), 777, 0) {
			if g != float32(want) {
				t.Errorf("form %d = %.9g, want %.9g", k, g, float32(want))
			}
		}
	})

	t.Run("max-min/nan-wins", func(t *testing.T) {
		x := make([]float64, 300)
		for i := range x {
			x[i] = 1
		}
		x[123], x[250] = 7, math.NaN()
		for k, g := range reduce3[float64](h, "max", "f64", put(h, x...), 300, 0) {
			if !math.IsNaN(g) {
				t.Errorf("max with a NaN, form %d = %g, want NaN", k, g)
			}
		}
		x[250] = -3
		xp := put(h, x...)
		for k, g := range reduce3[float64](h, "max", "f64", xp, 300, 0) {
			if g != 7 {
				t.Errorf("max form %d = %g, want 7", k, g)
			}
		}
		for k, g := range reduce3[float64](h, "min", "f64", xp, 300, 0) {
			if g != -3 {
				t.Errorf("min form %d = %g, want -3", k, g)
			}
		}
		// Integers start from no value, not -inf.
		xi := make([]int64, 200)
		for i := range xi {
			xi[i] = -9000000000
		}
		xi[17] = -9000000001
		for k, g := range reduce3[int64](h, "min", "i64", put(h, xi...), 200, 0) {
			if g != -9000000001 {
				t.Errorf("min i64 form %d = %d, want -9000000001", k, g)
			}
		}
	})

	t.Run("argmax-argmin/first-tie-first-nan", func(t *testing.T) {
		x := make([]float32, 500)
		x[310], x[90], x[400] = 5, 5, 5
		for k, g := range reduce3[int64](h, "argmax", "f32", put(h, x...), 500, 0) {
			if g != 90 {
				t.Errorf("argmax form %d = %d, want 90 (the first of equal maxima)", k, g)
			}
		}
		x[450], x[200] = float32(math.NaN()), float32(math.NaN())
		xp := put(h, x...)
		for _, op := range []string{"argmax", "argmin"} {
			for k, g := range reduce3[int64](h, op, "f32", xp, 500, 0) {
				if g != 200 {
					t.Errorf("%s with NaNs form %d = %d, want 200 (the first NaN)", op, k, g)
				}
			}
		}
		xi := make([]int32, 300)
		for i := range xi {
			xi[i] = 4
		}
		xi[299], xi[100] = -1, -1
		for k, g := range reduce3[int64](h, "argmin", "i32", put(h, xi...), 300, 0) {
			if g != 100 {
				t.Errorf("argmin i32 form %d = %d, want 100", k, g)
			}
		}
	})

	t.Run("var-std/two-pass", func(t *testing.T) {
		// Against the two-pass formula, on values far from 0, with
		// corrections 1 and 0.
		x := make([]float64, 1001)
		mean := 0.0
		for i := range x {
			x[i] = 1e6 + math.Sin(float64(i))
			mean += x[i]
		}
		mean /= 1001
		m2 := 0.0
		for _, v := range x {
			m2 += (v - mean) * (v - mean)
		}
		xp := put(h, x...)
		for k, g := range reduce3[float64](h, "var", "f64", xp, 1001, 1) {
			if !same(g, m2/1000, 1e-9) {
				t.Errorf("var form %d = %.17g, want %.17g", k, g, m2/1000)
			}
		}
		for k, g := range reduce3[float64](h, "std", "f64", xp, 1001, 0) {
			if want := math.Sqrt(m2 / 1001); !same(g, want, 1e-9) {
				t.Errorf("std form %d = %.17g, want %.17g", k, g, want)
			}
		}
		for k, g := range reduce3[float64](h, "var", "f64", put(h, 3.0), 1, 1) {
			if !math.IsNaN(g) && !math.IsInf(g, 0) {
				t.Errorf("var of one element, correction 1, form %d = %g, want NaN or inf", k, g)
			}
		}
	})

	t.Run("logsumexp/shift-inf-nan", func(t *testing.T) {
		// Shifted by the max; infinities and NaN are the result.
		for _, c := range []struct {
			x    []float64
			want float64
		}{
			{[]float64{0, 0}, math.Log(2)},
			{[]float64{1000, 1000, -inf}, 1000 + math.Log(2)},
			{[]float64{-inf, -inf}, -inf},
			{[]float64{inf, 1, -inf}, inf},
			{[]float64{1, math.NaN(), inf}, math.NaN()},
			{[]float64{-1000, 0, -1000}, math.Log1p(2 * math.Exp(-1000))},
		} {
			var x []float64
			for range 40 { // long enough for blocks
				x = append(x, c.x...)
			}
			want := c.want
			if !math.IsInf(want, 0) && !math.IsNaN(want) {
				want += math.Log(40)
			}
			for k, g := range reduce3[float64](h, "logsumexp", "f64", put(h, x...), int64(len(x)), 0) {
				if !same(g, want, 1e-14) {
					t.Errorf("logsumexp(%v x 40) form %d = %.17g, want %.17g", c.x, k, g, want)
				}
			}
		}
		for k, g := range reduce3[float64](h, "logsumexp", "f64", put(h, 0.0), 0, 0) {
			if !math.IsInf(g, -1) {
				t.Errorf("empty logsumexp form %d = %g, want -inf", k, g)
			}
		}
	})

	t.Run("prod-and-empty", func(t *testing.T) {
		x := put[int64](h, 2, 3, 4)
		for _, c := range []struct {
			op   string
			n    int64
			want int64
		}{{"prod", 3, 24}, {"prod", 0, 1}, {"sum", 0, 0}} {
			for k, g := range reduce3[int64](h, c.op, "i64", x, c.n, 0) {
				if g != c.want {
					t.Errorf("%s of %d elements form %d = %d, want %d", c.op, c.n, k, g, c.want)
				}
			}
		}
	})

	t.Run("sum/strided-rows-grid-stride", func(t *testing.T) {
		// Sum over dims 0 and 2 of a [3,4,5] tensor stored as [4][5][3]
		// (strides 1, 15, 3): 4 rows, fewer threads (thread form) and
		// blocks (block form) than rows.
		x := make([]float64, 60)
		for i := range x {
			x[i] = float64(i) * 0.5
		}
		xp := put(h, x...)
		R := rows([]int64{4}, [2][]int64{{1}, {15}}, []int64{3, 5}, [2][]int64{{0, 0}, {1, 3}})
		out, outb := garbage[float64](h, 4), garbage[float64](h, 4)
		h.launch("sum_thread_f64", 2, 3, out, xp, R, int64(4), int64(15), 0.0)
		h.launch("sum_block_f64", 3, 32, outb, xp, R, int64(4), int64(15), int64(1), uint64(0), 0.0)
		got, gotb := get[float64](out, 4), get[float64](outb, 4)
		for j := range 4 {
			want := 0.0
			for i := range 3 {
				for k := range 5 {
					want += x[i+j*15+k*3]
				}
			}
			if got[j] != want || gotb[j] != want {
				t.Errorf("row %d = %g (thread), %g (block), want %g", j, got[j], gotb[j], want)
			}
		}
	})

	t.Run("cumsum/block", func(t *testing.T) {
		// 3 rows of 1000 read transposed (element j of row r at r + 3j),
		// by a grid of 2 blocks (so one takes two rows) of 64 threads
		// (chunks of 256: three full and a partial one) and of 32: the
		// values are eighths, whose sums the float64 accumulator holds
		// exactly in any order, so the block form must give the serial
		// sums bit for bit; int32 wraps in its int64 accumulator and is
		// rounded per element, as the thread form does.
		const nrows, n = 3, 1000
		R := rows([]int64{nrows}, [2][]int64{{n}, {1}}, []int64{n}, [2][]int64{{1}, {nrows}})
		f := make([]float32, nrows*n)
		w := make([]int32, nrows*n)
		for i := range f {
			f[i] = float32(i%29-14) / 8
			w[i] = int32(i%7-3) * (1 << 29)
		}
		for _, threads := range []uint32{64, 32} {
			outf, outw := garbage[float32](h, nrows*n), garbage[int32](h, nrows*n)
			h.launch("cumsum_block_f32", 2, threads, outf, put(h, f...), R, int64(nrows), int64(n))
			h.launch("cumsum_block_i32", 2, threads, outw, put(h, w...), R, int64(nrows), int64(n))
			gotf, gotw := get[float32](outf, nrows*n), get[int32](outw, nrows*n)
			for r := range nrows {
				sf, sw := 0.0, int64(0)
				for j := range n {
					sf += float64(f[r+nrows*j])
					sw += int64(w[r+nrows*j])
					if g := gotf[r*n+j]; g != float32(sf) {
						t.Fatalf("%d threads: float32 row %d element %d = %g, want %g", threads, r, j, g, sf)
					}
					if g := gotw[r*n+j]; g != int32(sw) {
						t.Fatalf("%d threads: int32 row %d element %d = %d, want %d", threads, r, j, g, int32(sw))
					}
				}
			}
		}
	})

	t.Run("cumsum/transposed-int32", func(t *testing.T) {
		// Along dim 0 of a [3,2] int32 tensor read transposed (x[i][j] at
		// i + 3j) into a contiguous out; int64 accumulation, rounded per
		// element.
		out := garbage[int32](h, 6)
		R := rows([]int64{2}, [2][]int64{{1}, {3}}, []int64{3}, [2][]int64{{2}, {1}})
		h.launch("cumsum_i32", 1, 32, out, put[int32](h, 1, 2, 3, 4, 5, 6), R, int64(2), int64(3))
		want := []int32{1, 4, 3, 9, 6, 15} // out[i][j] at 2i + j
		for i, g := range get[int32](out, 6) {
			if g != want[i] {
				t.Errorf("cumsum[%d] = %d, want %d", i, g, want[i])
			}
		}
	})
}
