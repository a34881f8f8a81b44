package cuda

import (
	"math"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// The narrow dtypes reach every kernel through register's wrapper
// (dispatch.ViaCompute over narrow.cu's conversions). Their cases run in
// TestKernelsLaunchWhatThePTXHas with the others (the conversions'
// launches checked against the PTX) and here on the emulation against the
// cpu backend, which computes them through the same wrapper over its own
// conversions.

// TestNarrowKernelsMatchCPU runs the narrow cases on the emulation: the
// integer ones and the exact ops' float16 and bfloat16 results must be the
// cpu's bit for bit, the others within one ulp of the 16-bit float.
func TestNarrowKernelsMatchCPU(t *testing.T) {
	matchCPU(t, func(_ *dispatch.Schema, narrow bool) bool { return narrow }, exactOps())
}

// exactOps are the ops whose float32 result is correctly rounded (or a
// value of the input) on the cpu and on cuda alike, so that rounding it to
// a 16-bit float gives the same bits on both.
func exactOps() map[*dispatch.Schema]bool {
	exact := map[*dispatch.Schema]bool{}
	for _, op := range []*dispatch.Schema{
		&ops.Add.Schema, &ops.Sub.Schema, &ops.Mul.Schema, &ops.Div.Schema, &ops.Maximum.Schema, &ops.Minimum.Schema,
		&ops.Where.Schema, &ops.Cast.Schema, &ops.Contiguous.Schema, &ops.Flip.Schema, &ops.Concat.Schema, &ops.Pad.Schema,
		&ops.IndexSelect.Schema, &ops.Gather.Schema, &ops.Scatter.Schema,
	} {
		exact[op] = true
	}
	for _, u := range ops.UnaryOps {
		switch u.Name {
		case "neg", "abs", "relu", "sign", "floor", "ceil", "round", "trunc", "clamp":
			exact[&u.Op.Schema] = true
		}
	}
	return exact
}

// narrowDTypes are the storage dtypes computed wide.
var narrowDTypes = []dispatch.DType{dispatch.Float16, dispatch.BFloat16, dispatch.Int8, dispatch.Uint8}

// narrowCases are the cases of the narrow dtypes, each of them: every
// elementwise op and reduction (a transposed view, a broadcast), every cast
// to and from a narrow dtype, the copies, the indexing ops, and one case of
// each float family (softmax, argsort, pooling, convolution, attention,
// interpolation).
func narrowCases() []kcase {
	var cs []kcase
	none := dispatch.None{}
	all := append(append([]dispatch.DType{}, allDTypes...), narrowDTypes...)
	for _, dt := range narrowDTypes {
		xt := tensor(dt, []int{3, 2}, 1, 3)
		for _, u := range ops.UnaryOps {
			if u.DTypes.Has(dt) {
				cs = append(cs, caseOf(u.Op, ops.Params{A: 0.5, B: 2}, xt))
			}
		}
		for _, b := range ops.BinaryOps {
			if b.DTypes.Has(dt) {
				cs = append(cs, caseOf(b.Op, none, xt, tensor(dt, []int{2})))
			}
		}
		for _, r := range ops.ReduceOps {
			if r.DTypes.Has(dt) {
				cs = append(cs, caseOf(r.Op, ops.Reduce{Dims: []int{1}}, tensor(dt, []int{2, 3})))
			}
		}
		for _, other := range all {
			cs = append(cs, caseOf(ops.Cast, ops.CastTo{DType: other}, xt))
			if !dispatch.Narrow(other) {
				cs = append(cs, caseOf(ops.Cast, ops.CastTo{DType: dt}, tensor(other, []int{2, 3})))
			}
		}
		cs = append(cs,
			caseOf(ops.Contiguous, none, xt),
			caseOf(ops.Where, none, tensor(dispatch.Bool, []int{2, 1}), tensor(dt, []int{3}), tensor(dt, []int{})),
			caseOf(ops.Flip, ops.FlipDims{Dims: []int{0, 1}}, xt),
			caseOf(ops.Concat, ops.ConcatDim{Dim: 1}, tensor(dt, []int{2, 3}), tensor(dt, []int{2, 1}), tensor(dt, []int{2, 0})),
			caseOf(ops.Pad, ops.Padding{Pads: []int{1, -1, 2, 0}, Value: 1}, tensor(dt, []int{2, 3})),
			caseOf(ops.IndexSelect, ops.IndexDim{Dim: 0}, tensor(dt, []int{4, 3}), tensor(dispatch.Int64, []int{2})),
			caseOf(ops.Gather, ops.IndexDim{Dim: 1}, tensor(dt, []int{4, 3}), tensor(dispatch.Int64, []int{2, 3})),
			caseOf(ops.ScatterAdd, ops.IndexDim{Dim: 0}, tensor(dt, []int{4, 3}), tensor(dispatch.Int32, []int{2, 3}), tensor(dt, []int{2, 3})),
			caseOf(ops.ArgSort, ops.SortDim{Dim: 0, Descending: true}, tensor(dt, []int{5, 2}, 1, 5)))
		if dt.IsInt() {
			cs = append(cs, caseOf(ops.CumSum, ops.Scan{Dim: 1}, tensor(dt, []int{2, 3})))
			continue
		}
		w := layout.Window{Kernel: []int{3, 2}, Stride: []int{2, 2}, Padding: []int{1, 0}, Dilation: []int{1, 1}}
		cs = append(cs,
			caseOf(ops.Softmax, ops.Scan{Dim: -1}, tensor(dt, []int{2, 30})),
			caseOf(ops.LogSoftmax, ops.Scan{Dim: 1}, tensor(dt, []int{5, 4, 3}, 1, 5, 20)),
			caseOf(ops.AvgPool, ops.AvgPoolParams{Window: w}, tensor(dt, []int{1, 2, 7, 6})),
			caseOf(ops.MaxPoolIndices, w, tensor(dt, []int{1, 2, 7, 6})),
			convCases(dt)[0],
			attentionCases(dt)[0],
			upsampleCases(dt)[0])
	}
	return cs
}

// sameHalf compares a 16-bit float result with the cpu's: the same bits
// (any NaN for a NaN) where exact, else within tol, its relative ulp.
func sameHalf(got, want uint16, g, w float32, exact bool, tol float64) bool {
	gf, wf := float64(g), float64(w)
	if math.IsNaN(gf) || math.IsNaN(wf) {
		return math.IsNaN(gf) && math.IsNaN(wf)
	}
	if exact || got == want {
		return got == want
	}
	return math.Abs(gf-wf) <= tol*max(math.Abs(wf), 1.0/64)
}
