package cpu

import (
	"runtime"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// A strided is k operands walked together over one shape, each from its
// own base offset: operand j's element at index (i0, i1, ...) sits at
// base[j] + Σ i_d·Strides[j][d]. All elementwise kernels run over one, so
// strided views and broadcasting (stride 0) cost no copy; the walk is
// collapsed (layout.Walk), so that a contiguous case is one flat row.
type strided struct {
	layout.Walk
	base []int
}

// newStrided is the walk of out (contiguous) and the inputs broadcast to
// out's shape.
func newStrided(out *dispatch.Tensor, in ...*dispatch.Tensor) strided {
	base := make([]int, 1+len(in))
	base[0] = out.Offset
	for j, t := range in {
		base[j+1] = t.Offset
	}
	return strided{layout.Broadcast(out, in...).Collapse(), base}
}

// stridedOf is the collapsed walk of shape by operands with the given
// strides and base offsets.
func stridedOf(shape []int, strides [][]int, base []int) strided {
	return strided{layout.Walk{Shape: shape, Strides: strides}.Collapse(), base}
}

// The cost of an element, in parallel's units: minParallel elements at
// costVector are about 25 µs of one core's work.
const (
	costVector = 1 // a vectorised loop: C's AVX2 arithmetic, a copy
	costLoop   = 4 // a Go loop (Go does not vectorise), or a call per element (float64 math.Tanh: many times more)
)

// rows calls row for every innermost row of the layout, with each operand's
// offset at the row's start; the inner stride of operand j is
// l.Strides[j][last]. Large layouts are split across goroutines by rows, so
// row must only write its own elements.
func (l strided) rows(row func(offs []int, n int)) { l.rowsCost(costVector, row) }

// eachRun is rowsCost for elementwise work, where each element of a
// row is its own (row may take any run of one): a tensor with a scalar,
// which collapses to one long row, has its row shared out in runs, which
// rowsCost would give one core. (A reduction's row is one output's run,
// which must not be split so.)
func (l strided) eachRun(cost int, row func(offs []int, n int)) {
	last := len(l.Shape) - 1
	if n := l.Shape[last]; n > 0 && dispatch.Numel(l.Shape[:last]) == 1 {
		parallelPieces(n, cost, func(lo, hi int) {
			offs := make([]int, len(l.Strides))
			for j := range offs {
				offs[j] = l.base[j] + lo*l.Strides[j][last]
			}
			row(offs, hi-lo)
		})
		return
	}
	l.rowsCost(cost, row)
}

// rowsCost is rows for work of cost per element (costVector, costLoop).
func (l strided) rowsCost(cost int, row func(offs []int, n int)) {
	last := len(l.Shape) - 1
	n := l.Shape[last]
	nrows := 1
	for _, s := range l.Shape[:last] {
		nrows *= s
	}
	if n == 0 || nrows == 0 {
		return
	}
	parallel(nrows, n*cost, func(r0, r1 int) {
		k := len(l.Strides)
		offs := make([]int, k)
		idx := make([]int, last)
		// Position at row r0.
		r := r0
		for d := last - 1; d >= 0; d-- {
			idx[d] = r % l.Shape[d]
			r /= l.Shape[d]
		}
		for j := range k {
			offs[j] = l.base[j]
			for d := range last {
				offs[j] += idx[d] * l.Strides[j][d]
			}
		}
		for r := r0; r < r1; r++ {
			row(offs, n)
			// Step to the next row, carrying like an odometer.
			for d := last - 1; d >= 0; d-- {
				idx[d]++
				for j := range k {
					offs[j] += l.Strides[j][d]
				}
				if idx[d] < l.Shape[d] {
					break
				}
				for j := range k {
					offs[j] -= idx[d] * l.Strides[j][d]
				}
				idx[d] = 0
			}
		}
	})
}

// minParallel is the number of elements below which a kernel runs on the
// calling goroutine: starting goroutines costs more than small work. A
// worker that has to be woken costs 10-20 µs on the 2-vCPU machine that
// CI runs (about one core of throughput), where an elementwise op on 2^18
// float32s takes about 25 µs on one core: from 2^15 (torch's grain), a
// bias add on [8,64,256] took 23-26 µs split in two against 12.5 µs
// whole, and examples/gpt's training step 28.5-29.1 ms against 25.1-26.5.
const minParallel = 1 << 18

// split is how parallel shares out n tasks of cost each: the goroutines
// (1: inline on the caller's) and the tasks of each but the last, so that
// task i runs on goroutine i/chunk.
func split(n, cost int) (workers, chunk int) {
	workers = runtime.GOMAXPROCS(0)
	if workers < 2 || n < 2 || n*cost < minParallel {
		return 1, max(n, 1)
	}
	workers = min(workers, n, n*cost/(minParallel/2))
	chunk = (n + workers - 1) / workers
	return (n + chunk - 1) / chunk, chunk
}

// pieceCost is the most work, in parallel's cost units (about 6 µs of
// one core's), that parallelPieces hands a kernel in one call. A goroutine
// inside a cgo call keeps its P, and where every P is so kept (the parts of
// a split, each a long C call) Go's sysmon takes one after 20 µs and wakes
// a thread to run it, which finds nothing to do and sleeps: on 2 vCPUs that
// thread takes time from the parts. A part that comes back to Go between
// pieces is never taken (its P's syscall count moves). A float32 multiply
// of 4M elements, in three alternating rounds: 482-548 µs as two calls,
// 407-433 µs in pieces (torch 353-358).
const pieceCost = 1 << 16

// streamMin is shim.c's streamMin.
const streamMin = 1 << 22

// parallelPieces is parallel whose parts call fn on pieces of their range
// of at most pieceCost each, all of one length but the last, which is
// shorter by less than the number of pieces: so no piece of a long range
// is short enough for a row kernel to take its Go loop, which rounds
// differently from its C one. It is for kernels whose fn(lo, hi) is one
// call into C over the range (elementwise ops), and gives their results
// exactly, since they do not depend on where a range is cut.
func parallelPieces(n, cost int, fn func(lo, hi int)) {
	parallel(n, cost, func(lo, hi int) { inPieces(lo, hi, cost, fn) })
}

// inPieces calls fn over [lo, hi) in pieces of at most pieceCost (or one
// task, where a task costs more). A range of streamMin tasks or more is one
// piece: the arithmetic kernels send the stores of a call that long
// straight to memory (shim.c's streamMin), a third less traffic for a+b
// on 16M floats, and one stolen wake-up is a few percent of such a call.
func inPieces(lo, hi, cost int, fn func(lo, hi int)) {
	if hi-lo >= streamMin {
		fn(lo, hi)
		return
	}
	pieces := max(1, ((hi-lo)*cost+pieceCost-1)/pieceCost)
	per := (hi - lo + pieces - 1) / pieces
	for ; lo < hi; lo += per {
		fn(lo, min(lo+per, hi))
	}
}

// parallel splits [0, n) tasks of cost each into chunks across GOMAXPROCS
// goroutines (the caller's and the crew's: crew.go) when the total work is
// large, and runs fn inline otherwise.
func parallel(n, cost int, fn func(lo, hi int)) {
	workers, chunk := split(n, cost)
	if workers < 2 {
		fn(0, n)
		return
	}
	fanOut(workers, func(w int) { fn(w*chunk, min((w+1)*chunk, n)) })
}
