package cpu

import (
	"runtime"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// A layout describes k operands walked together over one shape: operand j's
// element at index (i0, i1, ...) sits at base[j] + Σ i_d·strides[j][d]. All
// elementwise kernels run over a layout, so strided views and broadcasting
// (stride 0) cost no copy.
type layout struct {
	shape   []int
	strides [][]int
	base    []int
}

// newLayout builds the layout of out (contiguous) and the inputs broadcast to
// out's shape, with size-1 dims dropped and mergeable neighbours merged, so
// that a contiguous case becomes one flat row.
func newLayout(out *dispatch.Tensor, in ...*dispatch.Tensor) layout {
	k := len(in) + 1
	l := layout{strides: make([][]int, k), base: make([]int, k)}
	l.strides[0] = out.Strides
	l.base[0] = out.Offset
	for j, t := range in {
		l.strides[j+1] = dispatch.BroadcastStrides(t, out.Shape)
		l.base[j+1] = t.Offset
	}
	return l.collapse(out.Shape)
}

func (l layout) collapse(shape []int) layout {
	k := len(l.strides)
	var dims []int
	for d, s := range shape {
		if s != 1 {
			dims = append(dims, d)
		}
	}
	if len(dims) == 0 {
		for _, s := range shape {
			if s == 0 {
				dims = []int{0} // an empty tensor: keep one dim of size 0
				break
			}
		}
	}
	nshape := []int{}
	nstr := make([][]int, k)
	for _, d := range dims {
		n := len(nshape)
		merge := n > 0
		for j := 0; merge && j < k; j++ {
			merge = nstr[j][n-1] == l.strides[j][d]*shape[d]
		}
		if merge {
			nshape[n-1] *= shape[d]
			for j := range k {
				nstr[j][n-1] = l.strides[j][d]
			}
			continue
		}
		nshape = append(nshape, shape[d])
		for j := range k {
			nstr[j] = append(nstr[j], l.strides[j][d])
		}
	}
	if len(nshape) == 0 { // 0-d, or all sizes 1: one element
		nshape = []int{1}
		for j := range k {
			nstr[j] = []int{1}
		}
	}
	return layout{shape: nshape, strides: nstr, base: l.base}
}

// rows calls row for every innermost row of the layout, with each operand's
// offset at the row's start; the inner stride of operand j is
// l.strides[j][last]. Large layouts are split across goroutines by rows, so
// row must only write its own elements.
func (l layout) rows(row func(offs []int, n int)) {
	last := len(l.shape) - 1
	n := l.shape[last]
	nrows := 1
	for _, s := range l.shape[:last] {
		nrows *= s
	}
	if n == 0 || nrows == 0 {
		return
	}
	parallel(nrows, n, func(r0, r1 int) {
		k := len(l.strides)
		offs := make([]int, k)
		idx := make([]int, last)
		// Position at row r0.
		r := r0
		for d := last - 1; d >= 0; d-- {
			idx[d] = r % l.shape[d]
			r /= l.shape[d]
		}
		for j := range k {
			offs[j] = l.base[j]
			for d := range last {
				offs[j] += idx[d] * l.strides[j][d]
			}
		}
		for r := r0; r < r1; r++ {
			row(offs, n)
			// Step to the next row, carrying like an odometer.
			for d := last - 1; d >= 0; d-- {
				idx[d]++
				for j := range k {
					offs[j] += l.strides[j][d]
				}
				if idx[d] < l.shape[d] {
					break
				}
				for j := range k {
					offs[j] -= idx[d] * l.strides[j][d]
				}
				idx[d] = 0
			}
		}
	})
}

// minParallel is the number of elements below which a kernel runs on the
// calling goroutine: starting goroutines costs more than small work.
const minParallel = 1 << 15

// parallel splits [0, n) tasks of cost each into chunks across GOMAXPROCS
// goroutines when the total work is large, and runs fn inline otherwise.
func parallel(n, cost int, fn func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || n < 2 || n*cost < minParallel {
		fn(0, n)
		return
	}
	workers = min(workers, n, n*cost/(minParallel/2))
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() { defer wg.Done(); fn(lo, hi) }()
	}
	wg.Wait()
}
