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

	t.Run("scatter_sorted/bad-indices", func(t *testing.T) {
		// One line of 8 places into an out of 4, its index sorted first
		// (perm: the stable ascending order, as argsort gives it), with
		// values below 0 and at or past 4 among the runs. The bad values'
		// runs write nothing, and the others are the walk's: the last src
		// of a value for scatter, the sum for scatter_add. out lies
		// between guards that must keep their sentinel.
		idx := []int64{2, -3, 1, 9, 2, 4, 1, -1}
		perm := []int64{1, 7, 2, 6, 0, 4, 5, 3}
		src := put[int64](h, 10, 20, 30, 40, 50, 60, 70, 80)
		const guard, sentinel = 12, -7
		for _, c := range []struct {
			fn   string
			want []int64
		}{{"scatter_sorted_i64", []int64{0, 70, 50, 0}}, {"scatter_add_sorted_i64", []int64{0, 100, 60, 0}}} {
			mem := make([]int64, guard+4+guard)
			for i := range mem {
				mem[i] = sentinel
			}
			copy(mem[guard:], make([]int64, 4))
			base := put(h, mem...)
			h.launch(c.fn, 1, 32, at[int64](base, guard), src, put(h, idx...), put(h, perm...), int64(0), int64(1), layout(nil),
				int64(8), int64(1), int64(1), int64(1), int64(4), int32(4))
			got := get[int64](base, len(mem))
			if g := got[guard : guard+4]; !slices.Equal(g, c.want) {
				t.Errorf("%s = %v, want %v", c.fn, g, c.want)
			}
			for i, v := range got {
				if (i < guard || i >= guard+4) && v != sentinel {
					t.Errorf("%s wrote %d at %d places from out's start", c.fn, v, i-guard)
				}
			}
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

// The value checks' kernels: the first bad value in row-major order of a
// strided view, found by many threads of several blocks through atomicMin,
// the ignored value passed over, and a slot left all ones where nothing is
// bad.
func TestValueCheck(t *testing.T) {
	h := newHost(t)
	// A [3,4] view of a transposed [4,3] storage: element (r, c) is at
	// storage[c*3 + r]. Row-major, the values are 7, -1, 5, 2 / 0, 9, -1, 3 /
	// 4, 1, 8, 6; those outside [0, 5] but -1 (ignored) are 7, 9, 8, 6, the
	// first at position 0 ... unless it is ignored too.
	rows := [][]int64{{7, -1, 5, 2}, {0, 9, -1, 3}, {4, 1, 8, 6}}
	storage := make([]int32, 12)
	for r, row := range rows {
		for c, v := range row {
			storage[c*3+r] = int32(v)
		}
	}
	L := layout([]int64{3, 4}, []int64{1, 3})
	cases := []struct {
		name             string
		lo, hi, ignore   int64
		flags            int32 // bit 0 ignoring, bit 1 outside (dispatch's ValueCheck.Flags)
		wantPos, wantVal int64
	}{
		{"first", 0, 5, -1, 1, 0, 7},
		{"ignore-absent", 0, 7, -1, 0, 1, -1},
		{"ignored", -1, 6, 7, 1, 5, 9},
		{"clean", -1, 9, 0, 0, -1, -1},
		{"outside-zero", 0, 0, 0, 2, 4, 0},    // a zero divisor
		{"outside-range", -1, 1, 0, 2, 1, -1}, // none in [-1, 1]
		{"outside-ignored", -1, 1, -1, 3, 4, 0},
		{"outside-clean", 10, 20, 0, 2, -1, -1},
	}
	for _, c := range cases {
		for _, sfx := range []string{"i32", "i64"} {
			t.Run(c.name+"/"+sfx, func(t *testing.T) {
				var values uint64
				if sfx == "i32" {
					values = put(h, storage...)
				} else {
					wide := make([]int64, len(storage))
					for i, v := range storage {
						wide[i] = int64(v)
					}
					values = put(h, wide...)
				}
				slot := put[int64](h, -1, -1)
				// 2 blocks of 3 threads: each thread sees several values.
				h.launch("index_check_"+sfx, 2, 3, slot, values, int64(12), L, c.lo, c.hi, c.ignore, c.flags)
				h.launch("check_fetch_"+sfx, 1, 1, slot, values, L)
				if got := get[int64](slot, 2); got[0] != c.wantPos || got[1] != c.wantVal {
					t.Errorf("slot = %v, want [%d %d]", got, c.wantPos, c.wantVal)
				}
			})
		}
	}
	t.Run("int64-past-int32", func(t *testing.T) {
		values := put[int64](h, 1, 1<<40, 2, -1<<40)
		slot := put[int64](h, -1, -1)
		h.launch("index_check_i64", 1, 32, slot, values, int64(4), layout([]int64{4}, []int64{1}), int64(0), int64(1<<31), int64(0), int32(0))
		h.launch("check_fetch_i64", 1, 1, slot, values, layout([]int64{4}, []int64{1}))
		if got := get[int64](slot, 2); got[0] != 1 || got[1] != 1<<40 {
			t.Errorf("slot = %v, want [1 %d]", got, int64(1<<40))
		}
	})
}
