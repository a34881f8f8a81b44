package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// normCases are the fused layer norm and batch norm cases (ops_norm.go):
// odd and unit D, more rows than a chunk of the column sums (colMinChunk),
// rows and samples of zero size, strided inputs (copied first), every
// float dtype for layer norm and float32 and float64 for batch norm.
func normCases() []kcase {
	var cs []kcase
	ln := ops.LayerNormParams{Eps: 1e-5}
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Float16, dispatch.BFloat16} {
		for _, x := range []*dispatch.Tensor{
			tensor(dt, []int{3, 5}),             // odd D
			tensor(dt, []int{4, 1}),             // D = 1: x̂ is 0
			tensor(dt, []int{0, 5}),             // no rows
			tensor(dt, []int{2, 3, 300}),        // D past a block
			tensor(dt, []int{130, 7}),           // dw and db over 5 chunks of rows
			tensor(dt, []int{5, 3}, 1, 5),       // transposed: copied first
			tensor(dt, []int{2, 2, 4}, 0, 4, 1), // rows that repeat (a stride-0 dim)
		} {
			d := x.Shape[x.Rank()-1]
			w, b := tensor(dt, []int{d}), tensor(dt, []int{d}, 2) // b strided
			cs = append(cs, caseOf(ops.LayerNorm, ln, x, w, b),
				caseOf(ops.LayerNormBackward, ln, x, w, tensor(dt, x.Shape)))
			if dispatch.Narrow(dt) {
				break // the 16-bit floats go through the same kernels widened: one case each
			}
		}
	}
	for _, dt := range floatDTypes {
		for _, x := range []*dispatch.Tensor{
			tensor(dt, []int{4, 3, 5}),
			tensor(dt, []int{6, 3}),              // rank 2: S = 1
			tensor(dt, []int{70, 3, 2}),          // 3 chunks of samples
			tensor(dt, []int{2, 3, 300}),         // S past a block
			tensor(dt, []int{4, 3, 5}, 15, 1, 3), // channels-last: copied first
			tensor(dt, []int{0, 3, 4}),           // no samples: NaN moments, zero sums
			tensor(dt, []int{2, 3, 0}),           // no positions
			tensor(dt, []int{2, 0, 4}),           // no channels
		} {
			c := x.Shape[1]
			ch := func() *dispatch.Tensor { return tensor(dt, []int{c}) }
			mean := tensor(dt, []int{c}, 2) // a strided view, as a row of the moments' transpose would be
			cs = append(cs, caseOf(ops.BatchNormMoments, dispatch.None{}, x))
			for _, training := range []bool{false, true} {
				a := ops.BatchNormParams{Eps: 1e-5, Training: training}
				cs = append(cs,
					caseOf(ops.BatchNormApply, a, x, mean, ch(), ch(), ch()),
					caseOf(ops.BatchNormBackward, a, x, mean, ch(), ch(), tensor(dt, x.Shape)))
			}
		}
	}
	return cs
}
