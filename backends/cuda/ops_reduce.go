package cuda

import (
	"strings"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Reductions and cumsum (kernels/cuda/reduce.cu). A reduction is laid out
// as rows: one per output element (the kept dims, in row-major order, which
// is the contiguous output's), each the elements of the reduced dims. Short
// rows take one thread each; long ones a block each, split over several
// blocks (and a second, combining kernel) when there are too few rows to
// fill the GPU.

const (
	// threadRowMax is the longest row reduced by one thread: below a warp's
	// width a block per row would leave most of its threads idle.
	threadRowMax = 32
	// splitChunk is the fewest elements one block of a split row reduces,
	// so that a block's work outweighs its launch and its partial's trip
	// through memory.
	splitChunk = 1 << 14
	// fillBlocks is the number of blocks a split reduction aims for: a few
	// per multiprocessor.
	fillBlocks = 1024
	// accBytes is LATHE_ACC_MAX: the room scratch gives each partial
	// accumulator.
	accBytes = 32
)

// reducePlan is how a reduction is launched.
type reducePlan struct {
	nrows, n int
	thread   bool // one thread per row
	splits   int  // blocks per row, for the block kernel
}

// planReduce chooses the kernel for nrows rows of n elements.
func planReduce(nrows, n int) reducePlan {
	p := reducePlan{nrows: nrows, n: n, splits: 1}
	if n <= threadRowMax {
		p.thread = true
		return p
	}
	if nrows < fillBlocks {
		p.splits = min(max(fillBlocks/nrows, 1), max((n+splitChunk-1)/splitChunk, 1))
	}
	return p
}

// reduceRows is x's rows for a reduction over dims (sorted, distinct): the
// kept dims outer, the reduced dims inner. Operand 0 (the output) is
// contiguous over the kept dims; the kernels index it by row, so its strides
// are only written for completeness.
func reduceRows(x *dispatch.Tensor, dims []int) (cRows, int, int, error) {
	reduced := make([]bool, x.Rank())
	for _, d := range dims {
		reduced[d] = true
	}
	outer, inner := layout.Walk{Strides: make([][]int, 2)}, layout.Walk{Strides: make([][]int, 2)}
	for d, s := range x.Shape {
		w := &outer
		if reduced[d] {
			w = &inner
		}
		w.Shape = append(w.Shape, s)
		w.Strides[1] = append(w.Strides[1], x.Strides[d])
	}
	outer.Strides[0] = dispatch.ContiguousStrides(outer.Shape)
	inner.Strides[0] = make([]int, len(inner.Shape))
	r, err := rows(outer, inner)
	return r, dispatch.Numel(outer.Shape), dispatch.Numel(inner.Shape), err
}

func init() {
	for _, op := range ops.ReduceOps {
		name := op.Name
		kernel(op.Op, op.DTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, r ops.Reduce) error {
			x := in[0]
			dims, _, err := ops.ReduceShape(x, r)
			if err != nil {
				return err
			}
			return named(name, reduce(out, x, name, dims, float64(r.Correction)))
		})
	}
	kernel(ops.CumSum, dispatch.Numeric, func(out *dispatch.Tensor, in []*dispatch.Tensor, sc ops.Scan) error {
		x := in[0]
		dim, err := ops.NormDim(sc.Dim, x.Rank(), "dim")
		if err != nil {
			return err
		}
		r, nrows, n, err := alongRows(out, x, dim)
		if err != nil || nrows*n == 0 {
			return named("cumsum", err)
		}
		fn, g, b := cumsumLaunch(nrows, n)
		return named("cumsum", enqueue(out.Device, "reduce", fn+"_"+suffix(x.DType), g, b, 0,
			addressOf(out), addressOf(x), cBytes(&r), int64(nrows), int64(n)))
	})
}

// cumsumLaunch is the kernel and geometry of a cumsum of nrows rows of n:
// a thread per row where the rows are short (cumsum keeps the cpu's order
// exactly), a block per row from cumsumBlockFrom elements, where a thread
// would take n dependent additions: a row of 50,000 sampling weights took
// one thread 50,000 global loads in turn. The block is the power of two of
// threads that gives each thread up to CUMSUM_ITEMS elements, 32 to
// CUMSUM_THREADS (reduce.cu).
func cumsumLaunch(nrows, n int) (fn string, grid, block [3]uint32) {
	if n < cumsumBlockFrom {
		grid, block = grid1(nrows)
		return "cumsum", grid, block
	}
	threads := 32
	for threads < cumsumThreads && threads*cumsumItems < n {
		threads *= 2
	}
	return "cumsum_block", [3]uint32{uint32(min(nrows, maxBlocks)), 1, 1}, [3]uint32{uint32(threads), 1, 1}
}

const (
	cumsumBlockFrom = 64
	cumsumItems     = 4   // CUMSUM_ITEMS
	cumsumThreads   = 256 // CUMSUM_THREADS
)

// reduce launches reduction name of x over dims into out.
func reduce(out, x *dispatch.Tensor, name string, dims []int, corr float64) error {
	r, nrows, n, err := reduceRows(x, dims)
	if err != nil || nrows == 0 {
		return err
	}
	return reduceLaunch(out.Device, name, suffix(x.DType), addressOf(out), addressOf(x), r, nrows, n, corr)
}

// reduceLaunch runs reduction name_<sfx> over the nrows rows of n elements
// that r lays out from x into out (contiguous, one element per row).
func reduceLaunch(dev dispatch.Device, name, sfx string, out, x uint64, r cRows, nrows, n int, corr float64) error {
	rb := cBytes(&r)
	mod := "reduce"
	if name == "var" || name == "std" || name == "logsumexp" {
		mod = "moments" // the float-only reductions: moments.cu
	}
	if c, ok := r.columns(); ok {
		return reduceColumns(dev, mod, name, sfx, out, x, c, corr)
	}
	p := planReduce(nrows, n)
	if p.thread {
		g, b := grid1(nrows)
		return enqueue(dev, mod, name+"_thread_"+sfx, g, b, 0, out, x, rb, int64(nrows), int64(n), corr)
	}
	// Rows of contiguous elements take the kernel that reads them as
	// 16-byte vectors with no index arithmetic (reduce.cuh, reduce_contig);
	// its blocks need a thread per vector, not per element.
	// Rows of contiguous runs take the kernels that read them as 16-byte
	// vectors with no index arithmetic (reduce.cuh, reduce_contig: _contig_
	// for one run a row, _runs_ for several); their blocks need a thread
	// per vector of a run's part, not per element.
	runs, contig := r.reduceRuns()
	contig = contig && n/p.splits < 1<<30 // it counts within a split in 32 bits
	fn, threads := name+"_block_"+sfx, n/p.splits
	args := []any{out, x, rb, int64(nrows), int64(n)}
	if contig {
		w := 4 // elements per 16-byte vector
		if strings.HasSuffix(sfx, "64") {
			w = 2
		}
		threads = (min(n/p.splits, int(runs.l)) + w - 1) / w
		fn, args = name+"_contig_"+sfx, []any{out, x, int64(nrows), int64(n), runs.rstride}
		if runs.n > 1 {
			fn, args = name+"_runs_"+sfx, []any{out, x, int64(nrows), runs.n, runs.l, runs.rstride, runs.qstride}
		}
	}
	g, b := gridRows(nrows*p.splits, threads)
	if p.splits == 1 {
		return enqueue(dev, mod, fn, g, b, 0, append(args, int64(1), uint64(0), corr)...)
	}
	partial, free, err := borrow(dev, nrows*p.splits*accBytes)
	if err != nil {
		return err
	}
	defer free() // the allocator reuses it only after the queued kernels
	if err := enqueue(dev, mod, fn, g, b, 0, append(args, int64(p.splits), partial, corr)...); err != nil {
		return err
	}
	g, b = gridRows(nrows, p.splits)
	return enqueue(dev, mod, name+"_finish_"+sfx, g, b, 0, out, partial, int64(nrows), int64(p.splits), corr)
}

// cols is a reduction of columns, as reduce_cols takes it: out[a*C + c]
// reduces x[a*sA + k*sK + c] over k < K.
type cols struct {
	a, c, k, sA, sK int64
}

// columnsMin is the fewest columns that take reduce_cols: a warp reads 32
// neighbours, so narrower rows of columns leave most of it idle, and below
// a sector's worth the block form's reads are no worse.
const columnsMin = 16

// columns reports whether r reduces columns: its rows (the kept dims) are
// one contiguous dim, or two of which the inner is contiguous, at least
// columnsMin wide; the reduced dims are one (merged) dim; the row is long
// enough for a block (the thread form, a thread per column, is coalesced
// already for short ones).
func (r *cRows) columns() (cols, bool) {
	c := cols{a: 1, k: r.InnerShape[0], sK: r.InnerStride[1][0]}
	if r.InnerRank != 1 || r.Offset[1] != 0 || c.k <= threadRowMax {
		return c, false
	}
	switch r.OuterRank {
	case 1:
		c.c = r.OuterShape[0]
	case 2:
		c.a, c.sA, c.c = r.OuterShape[0], r.OuterStride[1][0], r.OuterShape[1]
	default:
		return c, false
	}
	last := r.OuterRank - 1
	return c, r.OuterStride[1][last] == 1 && c.c >= columnsMin
}

// reduceColumns launches reduction name_<sfx> over the columns c of x into
// out: blocks of 256 threads (8 warps over k), a task per 32 columns of one
// a and one split of k, split when there are too few tasks to fill the GPU,
// with at least colsSplitMin of a column's elements per split.
func reduceColumns(dev dispatch.Device, mod, name, sfx string, out, x uint64, c cols, corr float64) error {
	const colsSplitMin = 256
	tasks := int(c.a) * int((c.c+31)/32)
	splits := 1
	if tasks < fillBlocks {
		splits = min(max(fillBlocks/tasks, 1), max((int(c.k)+colsSplitMin-1)/colsSplitMin, 1))
	}
	g := [3]uint32{blocksFor(tasks*splits, 1), 1, 1}
	b := [3]uint32{blockThreads, 1, 1}
	args := []any{out, x, c.a, c.c, c.k, c.sA, c.sK, int64(splits)}
	fn := name + "_cols_" + sfx
	if splits == 1 {
		return enqueue(dev, mod, fn, g, b, 0, append(args, uint64(0), corr)...)
	}
	nrows := int(c.a * c.c)
	partial, free, err := borrow(dev, nrows*splits*accBytes)
	if err != nil {
		return err
	}
	defer free() // the allocator reuses it only after the queued kernels
	if err := enqueue(dev, mod, fn, g, b, 0, append(args, partial, corr)...); err != nil {
		return err
	}
	g, b = gridRows(nrows, splits)
	return enqueue(dev, mod, name+"_finish_"+sfx, g, b, 0, out, partial, int64(nrows), int64(splits), corr)
}

// contigRuns is a reduction's rows as reduce_contig takes them: n runs of
// l contiguous elements each, qstride apart, rows rstride apart.
type contigRuns struct {
	n, l, rstride, qstride int64
}

// runMin is the shortest run of a row of several runs that takes
// reduce_contig: a warp's worth of float32 vectors. Shorter runs leave most
// of a block idle at each run; the generic block form takes them.
const runMin = 128

// reduceRuns reports whether r's rows (of the input, operand 1) are one
// contiguous run, or several runs of at least runMin contiguous elements at
// a fixed stride (the reduced dims, merged, are two: an outer one and the
// contiguous innermost), each row a fixed stride after the one before.
func (r *cRows) reduceRuns() (contigRuns, bool) {
	if stride, ok := r.runs(1); ok {
		return contigRuns{n: 1, l: r.InnerShape[0], rstride: stride[1]}, true
	}
	c := contigRuns{n: r.InnerShape[0], l: r.InnerShape[1], qstride: r.InnerStride[1][0]}
	if r.OuterRank != 1 || r.InnerRank != 2 || r.Offset[1] != 0 || r.InnerStride[1][1] != 1 || c.l < runMin {
		return c, false
	}
	if r.OuterShape[0] > 1 {
		c.rstride = r.OuterStride[1][0]
	}
	return c, true
}

// runs reports whether r's rows are runs of contiguous elements in its
// first k operands (1: the input, operand 1, alone; 2: the output too), each
// row starting a fixed stride after the one before, as the contiguous fast
// paths (reduce_contig, softmax_contig) read them, and gives each operand's
// row stride. Collapse has merged whatever dims can be: the rows must be
// one dim (or a single row), their elements one dim of stride 1 (or a
// single element), and no operand offset.
func (r *cRows) runs(k int) (stride [2]int64, ok bool) {
	if r.OuterRank != 1 || r.InnerRank != 1 {
		return stride, false
	}
	for j := 2 - k; j < 2; j++ {
		if r.Offset[j] != 0 || (r.InnerShape[0] > 1 && r.InnerStride[j][0] != 1) {
			return stride, false
		}
		if r.OuterShape[0] > 1 {
			stride[j] = r.OuterStride[j][0]
		}
	}
	return stride, true
}

// alongRows lays out out and x (of one shape) as rows along dim, for cumsum
// and softmax: the other dims outer, dim inner, each operand through its
// own strides. A 0-d tensor is one row of one element.
func alongRows(out, x *dispatch.Tensor, dim int) (cRows, int, int, error) {
	outer, inner := layout.Walk{Strides: make([][]int, 2)}, layout.Walk{Strides: make([][]int, 2)}
	for d, s := range x.Shape {
		w := &outer
		if d == dim {
			w = &inner
		}
		w.Shape = append(w.Shape, s)
		w.Strides[0] = append(w.Strides[0], out.Strides[d])
		w.Strides[1] = append(w.Strides[1], x.Strides[d])
	}
	r, err := rows(outer, inner)
	return r, dispatch.Numel(outer.Shape), dispatch.Numel(inner.Shape), err
}
