package cudaemu_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sort.cu's argsort: the block kernel alone (a row of one block) and with
// the merge passes (rows past LATHE_SORT_BLOCK), on the values whose order
// is easy to get wrong: NaN (largest, NaNs tied), -0 = +0, ±Inf, int64's
// extremes (whose sign-flipped keys sit at the key space's ends), and many
// ties, which must keep their order in both directions.

// stableOrder is the stable argsort of v under less.
func stableOrder[T any](v []T, less func(a, b T) bool) []int64 {
	idx := make([]int64, len(v))
	for i := range idx {
		idx[i] = int64(i)
	}
	slices.SortStableFunc(idx, func(i, j int64) int {
		switch {
		case less(v[i], v[j]):
			return -1
		case less(v[j], v[i]):
			return 1
		}
		return 0
	})
	return idx
}

// argsortRow sorts one contiguous row of n elements of x with
// argsort_block_<sfx> (and argsort_merge where the row passes one block),
// launched as the cuda backend launches them (backends/cuda/ops_sort.go).
func argsortRow(h *host, sfx string, x uint64, n int, desc bool) []int64 {
	h.t.Helper()
	R := rows(nil, [2][]int64{}, []int64{int64(n)}, [2][]int64{{1}, {1}})
	out := garbage[int64](h, n)
	d := int32(0)
	if desc {
		d = 1
	}
	block := 2
	for block < n && block < 1024 {
		block *= 2
	}
	nb := (n + block - 1) / block
	if nb == 1 {
		h.launch("argsort_block_"+sfx, 1, 96, out, x, R, int64(1), int64(n), int64(block), int64(nb), d, uint64(0))
		return get[int64](out, n)
	}
	s := [2]uint64{zeros[uint8](h, 16*n), zeros[uint8](h, 16*n)}
	// Fewer blocks than tasks: the grid-stride loop over tasks.
	h.launch("argsort_block_"+sfx, 2, 128, out, x, R, int64(1), int64(n), int64(block), int64(nb), d, s[0])
	cur := 0
	for width := block; width < n; width *= 2 {
		last := int32(0)
		if 2*width >= n {
			last = 1
		}
		h.launch("argsort_merge", 3, 64, out, s[cur], s[1-cur], R, int64(1), int64(n), int64(width), last)
		cur = 1 - cur
	}
	return get[int64](out, n)
}

func floatLess(a, b float64) bool { return !math.IsNaN(a) && (math.IsNaN(b) || a < b) }

func TestArgSort(t *testing.T) {
	h := newHost(t)
	nan, inf, negz := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	for _, n := range []int{1, 2, 9, 300, 2500} {
		rng := rand.New(rand.NewPCG(uint64(n), 3))
		specials := []float64{nan, inf, -inf, negz, 0, 1, -1}
		f := make([]float64, n)
		for i := range f {
			f[i] = specials[rng.IntN(len(specials))]
			if rng.IntN(3) == 0 {
				f[i] = float64(rng.IntN(5))
			}
		}
		f32 := make([]float32, n)
		for i, v := range f {
			f32[i] = float32(v)
		}
		ext := []int64{math.MinInt64, math.MaxInt64, -1, 0, 1, math.MinInt64 + 1, math.MaxInt64 - 1}
		i64 := make([]int64, n)
		for i := range i64 {
			i64[i] = ext[rng.IntN(len(ext))]
		}
		b := make([]uint8, n)
		for i := range b {
			b[i] = uint8(rng.IntN(2))
		}
		for _, desc := range []bool{false, true} {
			flip := func(less func(a, b float64) bool) func(a, b float64) bool {
				if desc {
					return func(a, b float64) bool { return less(b, a) }
				}
				return less
			}
			check := func(name string, got, want []int64) {
				t.Helper()
				if !slices.Equal(got, want) {
					t.Errorf("%s n=%d desc=%v: got %v, want %v", name, n, desc, head(got), head(want))
				}
			}
			check("f64", argsortRow(h, "f64", put(h, f...), n, desc), stableOrder(f, flip(floatLess)))
			check("f32", argsortRow(h, "f32", put(h, f32...), n, desc), stableOrder(f, flip(floatLess)))
			wantI := stableOrder(i64, func(a, b int64) bool {
				if desc {
					return b < a
				}
				return a < b
			})
			check("i64", argsortRow(h, "i64", put(h, i64...), n, desc), wantI)
			bv := make([]float64, n)
			for i, v := range b {
				bv[i] = float64(v)
			}
			check("bool", argsortRow(h, "bool", put(h, b...), n, desc), stableOrder(bv, flip(floatLess)))
		}
	}
}

func head(v []int64) []int64 { return v[:min(len(v), 20)] }
