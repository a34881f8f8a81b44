package cudaemu_test

import (
	"slices"
	"testing"
)

// index.cu's kernels, with the indices out of range that the backend
// refuses on the host before it launches (a kernel that meets one must not
// touch memory with it). (gather along dim 1 with an int64 index is
// TestKernelsMatchCPU's gather case, on every dtype.)
func TestIndex(t *testing.T) {
	h := newHost(t)

	t.Run("index_select/int32-out-of-range", func(t *testing.T) {
		// index_select along dim 0 of a [4,3] tensor through the gather
		// kernel: idx's stride along dim 0, 0 along dim 1; 7 is out of
		// range and gathers 0.
		x := make([]float32, 12)
		for i := range x {
			x[i] = float32(i)
		}
		idx := []int32{3, 0, 3, 7}
		out := zeros[float32](h, 12)
		L := layout([]int64{4, 3}, []int64{3, 1}, []int64{0, 1}, []int64{1, 0})
		h.launch("gather_f32", 2, 4, out, put(h, x...), put(h, idx...), int64(12), L, int64(3), int64(4), int32(3))
		got := get[float32](out, 12)
		for i := range 4 {
			for j := range 3 {
				var want float32
				if idx[i] < 4 {
					want = x[int(idx[i])*3+j]
				}
				if got[i*3+j] != want {
					t.Errorf("index_select[%d][%d] = %g, want %g", i, j, got[i*3+j], want)
				}
			}
		}
	})

	t.Run("scatter/duplicates-bad-index", func(t *testing.T) {
		// Along dim 0 of a [3,2] out (zeros) with a [3,2] index: duplicates
		// keep the last in row-major order, scatter_add sums them, 9 is
		// skipped. One line along dim 0 per column: L over [2].
		idx := put[int64](h, 1, 2, 1, 2, 9, 0)
		src := put[int64](h, 10, 20, 30, 40, 50, 60)
		s, a := zeros[int64](h, 6), zeros[int64](h, 6)
		L := layout([]int64{2}, []int64{1}, []int64{1}, []int64{1})
		h.launch("scatter_i64", 1, 32, s, src, idx, int64(2), L, int64(3), int64(2), int64(2), int64(2), int64(3), int32(4))
		h.launch("scatter_add_i64", 1, 32, a, src, idx, int64(2), L, int64(3), int64(2), int64(2), int64(2), int64(3), int32(4))
		// column 0: idx 1, 1, 9 with src 10, 30, 50: row 1 = 30 (set), 40 (add);
		// column 1: idx 2, 2, 0 with src 20, 40, 60: row 2 = 40 / 60, row 0 = 60.
		if g, w := get[int64](s, 6), []int64{0, 60, 30, 0, 0, 40}; !slices.Equal(g, w) {
			t.Errorf("scatter = %v, want %v", g, w)
		}
		if g, w := get[int64](a, 6), []int64{0, 60, 40, 0, 0, 60}; !slices.Equal(g, w) {
			t.Errorf("scatter_add = %v, want %v", g, w)
		}
	})

	t.Run("scatter_add/bool-is-or", func(t *testing.T) {
		b := put[uint8](h, 0, 1)
		h.launch("scatter_add_bool", 1, 32, b, put[uint8](h, 1, 0, 1), put[int64](h, 0, 0, 1), int64(1), layout(nil),
			int64(3), int64(1), int64(1), int64(1), int64(2), int32(4))
		if g := get[uint8](b, 2); g[0] != 1 || g[1] != 1 {
			t.Errorf("bool scatter_add of (1, 0) at 0 and 1 at 1 into (0, 1) = %v, want [1 1]", g)
		}
	})

	t.Run("one_hot/strided-index", func(t *testing.T) {
		// A [3] index read with stride 2, 4 classes; 5 threads for 12 outputs.
		idx := []int64{2, -1, 0, -1, 3}
		out := zeros[int64](h, 12)
		h.launch("one_hot", 1, 5, out, put(h, idx...), int64(12), layout([]int64{3}, []int64{1}, []int64{2}), int64(4), int32(4))
		got := get[int64](out, 12)
		for p := range 3 {
			for c := range 4 {
				var want int64
				if idx[2*p] == int64(c) {
					want = 1
				}
				if got[p*4+c] != want {
					t.Errorf("one_hot[%d][%d] = %d, want %d", p, c, got[p*4+c], want)
				}
			}
		}
	})
}
