package cuda

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestFastPathChoice checks which kernel each layout launches: the
// contiguous fast paths (reduce_contig's _contig_ and _runs_, reduce_cols,
// softmax_contig) where
// their layouts are, the generic kernels elsewhere, with the geometry and
// arguments the fast kernels' contracts ask for.
func TestFastPathChoice(t *testing.T) {
	log := recordLaunches(t)
	f32, f64 := dispatch.Float32, dispatch.Float64
	view := func(x *dispatch.Tensor, off int) *dispatch.Tensor { x.Offset = off; return x }
	for _, c := range []struct {
		c     kcase
		fns   []string
		check func(l []launched) string
	}{
		// A full reduction: 1024 splits of 16384, a thread per float4.
		{caseOf(ops.Sum, ops.Reduce{}, tensor(f32, []int{4096, 4096})), []string{"sum_contig_f32", "sum_finish_f32"},
			func(l []launched) string {
				if want := []any{int64(1), int64(1 << 24), int64(0), int64(1024)}; !slices.Equal(l[0].args[2:6], want) || l[0].grid[0] != 1024 || l[0].block[0] != 256 {
					return fmt.Sprintf("grid %v block %v args %v", l[0].grid, l[0].block, l[0].args[2:6])
				}
				return ""
			}},
		// The innermost dims of a view at an element offset: rows 45 apart.
		{caseOf(ops.Max, ops.Reduce{Dims: []int{1, 2}}, view(tensor(f64, []int{7, 5, 9}), 3)), []string{"max_contig_f64"},
			func(l []launched) string {
				if l[0].args[4] != int64(45) || l[0].block[0] != 32 {
					return fmt.Sprintf("stride %v block %v", l[0].args[4], l[0].block)
				}
				return ""
			}},
		// Batch norm's statistics: over N, H, W of [N, C, H, W], rows of N
		// runs of H*W; too short runs keep the block form.
		{caseOf(ops.Var, ops.Reduce{Dims: []int{0, 2, 3}}, tensor(f32, []int{8, 16, 32, 32})), []string{"var_runs_f32"},
			func(l []launched) string {
				// 16 rows 1024 apart, each 8 runs of 1024, 16*1024 apart;
				// 8192 elements a row, 1 split: 16 blocks of 256.
				if want := []any{int64(16), int64(8), int64(1024), int64(1024), int64(16 * 1024), int64(1)}; !slices.Equal(l[0].args[2:8], want) || l[0].grid[0] != 16 || l[0].block[0] != 256 {
					return fmt.Sprintf("args %v grid %v block %v", l[0].args[2:8], l[0].grid, l[0].block)
				}
				return ""
			}},
		{caseOf(ops.Sum, ops.Reduce{Dims: []int{0, 2}}, tensor(f32, []int{8, 16, 49})), []string{"sum_block_f32"}, nil},
		// Rows whose elements are strided: the generic block form.
		{caseOf(ops.Sum, ops.Reduce{Dims: []int{1}}, tensor(f32, []int{4, 100}, 1, 4)), []string{"sum_block_f32"}, nil},
		// Columns: over dim 0 of [B, C], and over the middle dim.
		{caseOf(ops.Sum, ops.Reduce{Dims: []int{0}}, tensor(f32, []int{1000, 512})), []string{"sum_cols_f32", "sum_finish_f32"},
			func(l []launched) string {
				// 16 tiles, split 4 ways (256 rows each).
				if want := []any{int64(1), int64(512), int64(1000), int64(0), int64(512), int64(4)}; !slices.Equal(l[0].args[2:8], want) || l[0].grid[0] != 64 {
					return fmt.Sprintf("args %v grid %v", l[0].args[2:8], l[0].grid)
				}
				return ""
			}},
		{caseOf(ops.ArgMax, ops.Reduce{Dims: []int{1}}, tensor(f32, []int{8, 64, 300})), []string{"argmax_cols_f32"}, nil},
		// Too few columns for a warp, or rows short enough for a thread each.
		{caseOf(ops.Sum, ops.Reduce{Dims: []int{0}}, tensor(f32, []int{1000, 8})), []string{"sum_block_f32"}, nil},
		{caseOf(ops.Sum, ops.Reduce{Dims: []int{0}}, tensor(f32, []int{20, 512})), []string{"sum_thread_f32"}, nil},
		// Softmax: a warp per row up to 1024 float32 (4 rows a block), a block
		// per row past it; a strided softmax dim keeps the generic kernel.
		{caseOf(ops.Softmax, ops.Scan{Dim: -1}, tensor(f32, []int{4096, 1024})), []string{"softmax_warp_f32"},
			func(l []launched) string {
				if l[0].grid[0] != 1024 || l[0].block[0] != 128 || l[0].args[3] != int32(1024) {
					return fmt.Sprintf("grid %v block %v n %v", l[0].grid, l[0].block, l[0].args[3])
				}
				return ""
			}},
		// Rows of 10 float32: 4 lanes a row, 8 rows a warp, 32 a block.
		{caseOf(ops.Softmax, ops.Scan{Dim: -1}, tensor(f32, []int{1000, 10})), []string{"softmax_warp_f32"},
			func(l []launched) string {
				if l[0].grid[0] != 32 || l[0].block[0] != 128 {
					return fmt.Sprintf("grid %v block %v", l[0].grid, l[0].block)
				}
				return ""
			}},
		{caseOf(ops.LogSoftmax, ops.Scan{Dim: 1}, tensor(f64, []int{3, 600})), []string{"log_softmax_block_f64"},
			func(l []launched) string {
				if l[0].grid[0] != 3 || l[0].block[0] != 256 {
					return fmt.Sprintf("grid %v block %v", l[0].grid, l[0].block)
				}
				return ""
			}},
		{caseOf(ops.Softmax, ops.Scan{Dim: 0}, tensor(f32, []int{100, 30})), []string{"softmax_f32"}, nil},
		{caseOf(ops.Softmax, ops.Scan{Dim: 1}, tensor(f32, []int{5, 1, 7})), []string{"softmax_warp_f32"}, nil}, // rows of 1
	} {
		dt, shape, err := c.c.infer(c.c.in)
		if err != nil {
			t.Fatal(err)
		}
		*log = (*log)[:0]
		label := fmt.Sprintf("%s(%s)", c.c.op.Name, describe(c.c.in))
		if err := c.c.run(tensor(dt, shape), c.c.in); err != nil {
			t.Errorf("%s: %v", label, err)
			continue
		}
		var fns []string
		for _, l := range *log {
			fns = append(fns, l.fn)
		}
		if !slices.Equal(fns, c.fns) {
			t.Errorf("%s launched %v, want %v", label, fns, c.fns)
			continue
		}
		if c.check != nil {
			if msg := c.check(*log); msg != "" {
				t.Errorf("%s: %s", label, msg)
			}
		}
	}
}
