package wgpu

import (
	"fmt"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// The reductions and cumsum (reduce.wgsl). A reduction runs one workgroup
// per output element ("row") over the strided positions of its reduced
// elements, which the shader computes from the reduced dims' shape and
// strides: the input is never copied or permuted. A few long rows (a
// whole-tensor sum) would leave all but a few workgroups idle, so they are
// split into parts that a first pass reduces to partial States and a
// second pass combines; many short or column-wise rows take an invocation
// each instead.
//
// Floats accumulate in f32 where the cpu accumulates in float64: the tree
// keeps the error to a few ulps of the sum's magnitude, not the cpu's one
// rounding. int32 sums and products wrap in i32, which is exactly the
// cpu's int64 result rounded to int32 (wrapping is arithmetic mod 2^32);
// int64 sums and products carry between the words (int64.wgsl) and wrap as
// the cpu's. Argmax and argmin give int64 indices on every input dtype.

func init() {
	for _, r := range ops.ReduceOps {
		register(r.Op, r.DTypes, reduceKernel(r.Name))
	}
	register(ops.CumSum, numericTypes, cumsumKernel)
}

// stateWords is the size in 32-bit words of each reduction's State (the
// partial results of a split row) over 32-bit elements; stateWordsOf
// gives it for any dtype.
var stateWords = map[string]int{
	"sum": 1, "prod": 1, "max": 1, "min": 1,
	"argmax": 2, "argmin": 2, "var": 3, "std": 3, "logsumexp": 2,
}

// stateWordsOf is the size in 32-bit words of op's State over elements
// of dt: an int64 is two words, and WGSL aligns argmax's struct of an
// int64 and an index to 8 bytes (16 in all).
func stateWordsOf(op string, dt dispatch.DType) int {
	if dt == dispatch.Int64 {
		return 2 * stateWords[op]
	}
	return stateWords[op]
}

const (
	// splitBelowRows: with fewer rows than this the device has workgroups
	// to spare, and long rows are split.
	splitBelowRows = 256
	// partLen is the reduced elements a workgroup of a split row takes
	// (16 per lane), and the row length from which a row is split.
	partLen = 16 * workgroup
	// maxParts bounds the parts of a row, so that the second pass's
	// workgroup walks at most 4 States per lane.
	maxParts = 4 * workgroup
	// With perItemRows rows or more, rows of at most perItemLen elements,
	// which would leave most of a workgroup's lanes idle, and column-wise
	// rows, whose elements lie far apart while neighbouring rows' lie side
	// by side, are reduced an invocation per row: neighbouring invocations
	// then read neighbouring elements.
	perItemRows = 4 * workgroup
	perItemLen  = 64
	// On a CPU adapter a workgroup's tree pays a coroutine switch per
	// barrier for every 8 of its lanes (lavapipe runs 8 lanes at once), about
	// 15 µs a workgroup, while a lane reads a row at the cost of a loop: so
	// rows of up to perItemLenCPU elements go an invocation each once there
	// are perItemRowsCPU of them (one group of 8 lanes).
	perItemRowsCPU = 8
	perItemLenCPU  = 4096
)

// splitPartLen is the elements a workgroup of a split row takes: on a CPU
// adapter 16 times partLen, so that a workgroup's barriers (perItemRowsCPU's
// comment) are paid once per 256 elements a lane rather than per 16.
func splitPartLen() int {
	if software() {
		return 16 * partLen
	}
	return partLen
}

// perItemRowsFit says whether rows rows of n elements (columnWise: read
// down a column) are reduced an invocation per row rather than a workgroup
// per row.
func perItemRowsFit(rows, n int, columnWise bool) bool {
	if software() && rows >= perItemRowsCPU && n <= perItemLenCPU {
		return true
	}
	return rows >= perItemRows && (n <= perItemLen || columnWise)
}

func reduceKernel(op string) dispatch.Kernel[ops.Reduce] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, r ops.Reduce) error {
		x := in[0]
		dims, _, err := ops.ReduceShape(x, r)
		if err != nil {
			return err
		}
		return reduce(op, out, x, dims, r.Correction)
	}
}

// reduce writes op of x over dims into the contiguous out.
func reduce(op string, out, x *dispatch.Tensor, dims []int, correction int) error {
	return reduceTo(op, out, x, dims, correction, "out")
}

// reduceTo is reduce with dst "out", and with dst "partials" it writes
// each row's unfinished State instead (stateWordsOf(op, x.DType) words a row,
// the words of reduce.wgsl's State in order).
func reduceTo(op string, out, x *dispatch.Tensor, dims []int, correction int, dst string) error {
	t, outT := wgslType(x.DType), wgslType(out.DType)
	rows := out.Numel()
	if dst == "partials" {
		rows /= stateWordsOf(op, x.DType)
	}
	if rows == 0 {
		return nil
	}
	l, err := splitLayout(x, dims)
	if err != nil {
		return err
	}
	n := dispatch.Numel(l.rShape)
	parts := 1
	if part := splitPartLen(); rows < splitBelowRows && n >= 2*part {
		parts = min((n+part-1)/part, maxParts)
	}
	chunk := (n + parts - 1) / parts
	if parts == 1 {
		// The per-row form finishes its row; States come from workgroups.
		perItem := dst == "out" && perItemRowsFit(rows, n, l.columnWise())
		sh, err := reduceShader(op, t, outT, perItem, "tensor", dst)
		if err != nil {
			return err
		}
		p := reduceParams(rows, n, 1, chunk, x.Offset, l, correction)
		if perItem {
			return launch(op, sh, grid(rows), p, out, x)
		}
		return launch(op, sh, grid(rows*workgroup), p, out, x)
	}

	// Pass 1: each part of each row into a State of partials; pass 2: each
	// row's parts, a contiguous run, into its result.
	partials, err := dispatch.Empty(out.Device, dispatch.Float32, []int{rows * parts * stateWordsOf(op, x.DType)})
	if err != nil {
		return err
	}
	defer partials.Release()
	sh, err := reduceShader(op, t, outT, false, "tensor", "partials")
	if err != nil {
		return err
	}
	p := reduceParams(rows, n, parts, chunk, x.Offset, l, correction)
	if err := launch(op, sh, grid(rows*parts*workgroup), p, partials, x); err != nil {
		return err
	}
	sh, err = reduceShader(op, t, outT, false, "partials", dst)
	if err != nil {
		return err
	}
	runs := reduceLayout{kShape: []int{rows}, kStrides: []int{parts}, rShape: []int{parts}, rStrides: []int{1}}
	p = reduceParams(rows, parts, 1, parts, 0, runs, correction)
	return launch(op, sh, grid(rows*workgroup), p, out, partials)
}

func reduceShader(op, t, outT string, perItem bool, src, dst string) (*shader, error) {
	key := fmt.Sprintf("reduce/%s/%s->%s/%s->%s/peritem=%v", op, t, outT, src, dst, perItem)
	return shaderFor(key, "reduce", struct {
		Op, T, OutT, Src, Dst string
		PerItem               bool
	}{op, t, outT, src, dst, perItem})
}

// reduceLayout is x seen as rows of reduced elements: the kept dims (whose
// row-major index is the output element) and the reduced dims (whose
// row-major index is the element's index within its row), each with x's
// strides, merged where they can be.
type reduceLayout struct {
	kShape, kStrides []int
	rShape, rStrides []int
}

// columnWise says whether neighbouring rows start at neighbouring
// elements while a row's own elements do not.
func (l reduceLayout) columnWise() bool {
	k, r := len(l.kStrides), len(l.rStrides)
	return k > 0 && r > 0 && l.kStrides[k-1] == 1 && l.rStrides[r-1] != 1
}

func splitLayout(x *dispatch.Tensor, dims []int) (reduceLayout, error) {
	reduced := make([]bool, x.Rank())
	for _, d := range dims {
		reduced[d] = true
	}
	var kept, red layout.Walk
	kept.Strides, red.Strides = make([][]int, 1), make([][]int, 1)
	for d, size := range x.Shape {
		w := &kept
		if reduced[d] {
			w = &red
		}
		w.Shape, w.Strides[0] = append(w.Shape, size), append(w.Strides[0], x.Strides[d])
	}
	kept, red = kept.Collapse(), red.Collapse()
	l := reduceLayout{kShape: kept.Shape, kStrides: kept.Strides[0], rShape: red.Shape, rStrides: red.Strides[0]}
	if r := max(kept.Rank(), red.Rank()); r > maxRank {
		return l, rankError(r, maxRank)
	}
	return l, nil
}

// reduceParams are the parameter words of reduce.wgsl's launch contract.
func reduceParams(rows, n, parts, chunk, offset int, l reduceLayout, correction int) []uint32 {
	p := make([]uint32, 40)
	p[0], p[1], p[2], p[3] = uint32(rows), uint32(n), uint32(parts), uint32(chunk)
	p[4] = uint32(int32(offset))
	p[5], p[6] = uint32(len(l.kShape)), uint32(len(l.rShape))
	p[7] = uint32(correction)
	for d := range l.kShape {
		p[8+d], p[16+d] = uint32(l.kShape[d]), uint32(int32(l.kStrides[d]))
	}
	for d := range l.rShape {
		p[24+d], p[32+d] = uint32(l.rShape[d]), uint32(int32(l.rStrides[d]))
	}
	return p
}

// lineParams lay x and the contiguous out as lines along dim (the
// layout of cumsum and softmax): the number of lines and their length, the
// offset and the steps along dim, then the other dims' walk by x and out,
// collapsed.
func lineParams(out, x *dispatch.Tensor, dim int) ([]uint32, int, error) {
	p := make([]uint32, 30)
	p[2] = uint32(int32(x.Offset))
	if x.Rank() == 0 {
		p[0], p[1] = 1, 1
		return p, 1, nil
	}
	others := layout.Walk{Strides: make([][]int, 2)}
	for d, size := range x.Shape {
		if d != dim {
			others.Shape = append(others.Shape, size)
			others.Strides[0] = append(others.Strides[0], x.Strides[d])
			others.Strides[1] = append(others.Strides[1], out.Strides[d])
		}
	}
	others = others.Collapse()
	if others.Rank() > maxRank {
		return nil, 0, rankError(others.Rank(), maxRank)
	}
	lines := x.Numel() / max(x.Shape[dim], 1)
	p[0], p[1] = uint32(lines), uint32(x.Shape[dim])
	p[3], p[4] = uint32(int32(x.Strides[dim])), uint32(int32(out.Strides[dim]))
	p[5] = uint32(others.Rank())
	for d, size := range others.Shape {
		p[6+d], p[14+d], p[22+d] = uint32(size), uint32(int32(others.Strides[0][d])), uint32(int32(others.Strides[1][d]))
	}
	return p, lines, nil
}

func cumsumKernel(out *dispatch.Tensor, in []*dispatch.Tensor, sc ops.Scan) error {
	x := in[0]
	dim, err := ops.NormDim(sc.Dim, x.Rank(), "dim")
	if err != nil {
		return err
	}
	t := wgslType(x.DType)
	if out.Numel() == 0 {
		return nil
	}
	p, lines, err := lineParams(out, x, dim)
	if err != nil {
		return err
	}
	perItem := lines >= perItemRows && x.Rank() > 0 && x.Shape[dim] <= perItemLen
	sh, err := shaderFor(fmt.Sprintf("cumsum/%s/peritem=%v", t, perItem), "cumsum", struct {
		T       string
		PerItem bool
	}{t, perItem})
	if err != nil {
		return err
	}
	if perItem {
		return launch("cumsum", sh, grid(lines), p, out, x)
	}
	return launch("cumsum", sh, grid(lines*workgroup), p, out, x)
}
