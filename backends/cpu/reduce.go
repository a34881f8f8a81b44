package cpu

import (
	"math"
	"runtime"
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Reductions and cumsum. All of them are one loop family: the reduced dims
// are moved innermost (a permuted view; copied to a contiguous tensor only
// when they cannot be walked as one strided run), so that each output
// element reduces one run of n elements at off, off+s, off+2s, ... A reducer
// is a function of that run; the runs are spread over goroutines.

// runFunc reduces the run d[off], d[off+s], ..., n elements.
type runFunc[T, R any] func(d []T, off, n, s int) R

// runs is a reduction laid out as a two-operand layout whose last dim is the
// run: operand 0 is the output (stride 0 along the run), operand 1 the input.
type runs struct {
	l      strided // not collapsed: the last dim is the run
	n, s   int
	outLen int
}

// planRuns lays out the reduction of x over dims (sorted, distinct) into an
// output of the kept sizes. A copy of x, when one was needed, is returned so
// that the caller can release it.
func planRuns(x *dispatch.Tensor, dims []int) (runs, *dispatch.Tensor) {
	var sp dimSplit
	kShape, kStrides, rShape, rStrides := sp.of(x, dims)
	n, s, ok := oneRun(rShape, rStrides)
	var tmp *dispatch.Tensor
	base := x.Offset
	if !ok {
		// The reduced dims do not form one strided run: copy the permuted
		// view so that they are innermost and contiguous.
		v := x.View(append(append([]int{}, kShape...), rShape...), append(append([]int{}, kStrides...), rStrides...), x.Offset)
		tmp = dispatch.NewTensor(x.Device, x.DType, v.Shape, newBuffer(x.DType, v.Numel()))
		castInto(tmp, v)
		v.Release()
		base = 0
		kStrides = tmp.Strides[:len(kShape)]
		n, s = dispatch.Numel(rShape), 1
	}
	// The walk's shape and two operands' strides (the output's contiguous,
	// 0 along the run; x's), with the bases, in one array.
	k := len(kShape)
	ints := make([]int, 3*(k+1)+2)
	shape, outStrides, xStrides, bases := ints[:k+1:k+1], ints[k+1:2*k+2:2*k+2], ints[2*k+2:3*k+3:3*k+3], ints[3*k+3:]
	copy(shape, kShape)
	shape[k] = n
	dispatch.ContiguousStridesInto(outStrides[:k], kShape)
	copy(xStrides, kStrides)
	xStrides[k] = s
	bases[1] = base
	l := strided{layout.Walk{Shape: shape, Strides: [][]int{outStrides, xStrides}}, bases}
	return runs{l: l, n: n, s: s, outLen: dispatch.Numel(kShape)}, tmp
}

// dimSplit holds x's dims parted into the kept and the reduced ones, each
// in order, in an array of its own for tensors of rank up to 8, so that a
// dimSplit on a caller's stack costs no allocation.
type dimSplit struct {
	inline [4 * 8]int
}

// of splits x's dims, dims the reduced ones (distinct, in range). The
// slices live in sp (or, past rank 8, on the heap).
func (sp *dimSplit) of(x *dispatch.Tensor, dims []int) (kShape, kStrides, rShape, rStrides []int) {
	r := x.Rank()
	buf := sp.inline[:]
	if 4*r > len(buf) {
		buf = make([]int, 4*r)
	}
	nk, nr := 0, 0
	for d, size := range x.Shape {
		if slices.Contains(dims, d) {
			buf[2*r+nr], buf[3*r+nr] = size, x.Strides[d]
			nr++
		} else {
			buf[nk], buf[r+nk] = size, x.Strides[d]
			nk++
		}
	}
	return buf[:nk:nk], buf[r : r+nk : r+nk], buf[2*r : 2*r+nr : 2*r+nr], buf[3*r : 3*r+nr : 3*r+nr]
}

// oneRun merges the reduced dims into one strided run if their layout
// allows: size-1 dims drop out, and a dim merges into the one before it when
// that one's stride steps over it exactly.
func oneRun(shape, strides []int) (n, s int, ok bool) {
	if n = dispatch.Numel(shape); n == 0 {
		return 0, 1, true // nothing is read
	}
	var o oneWalk
	if o.collapse(shape, strides); o.n == 1 {
		return n, o.stride(0), true
	}
	return 0, 0, false // the caller copies
}

// oneWalk holds the collapsed walk of one operand (its rank n, sizes and
// strides) in an array of its own for a rank up to 8: on the caller's
// stack it costs no allocation.
type oneWalk struct {
	inline [2 * 8]int
	more   []int // past rank 8
	n, r1  int   // the strides start at r1
}

func (o *oneWalk) collapse(shape, strides []int) {
	o.r1 = max(len(shape), 1)
	if 2*o.r1 > len(o.inline) {
		o.more = make([]int, 2*o.r1)
	}
	o.n = layout.Walk{Shape: shape, Strides: [][]int{strides}}.CollapseInto(o.ints())
}

func (o *oneWalk) ints() []int {
	if o.more != nil {
		return o.more
	}
	return o.inline[:]
}

// size and stride are dim d's.
func (o *oneWalk) size(d int) int   { return o.ints()[d] }
func (o *oneWalk) stride(d int) int { return o.ints()[o.r1+d] }

// reduceInto writes f of each run of x over dims into out (contiguous, of
// the kept sizes).
func reduceInto[T, R any](out, x *dispatch.Tensor, dims []int, f runFunc[T, R]) {
	r, tmp := planRuns(x, dims)
	src := x
	if tmp != nil {
		src = tmp
		defer tmp.Release()
	}
	o := elems[R](out)[out.Offset:]
	if r.n == 0 {
		v := f(nil, 0, 0, 1)
		for i := range r.outLen {
			o[i] = v
		}
		return
	}
	d := elems[T](src)
	r.l.rows(func(offs []int, n int) { o[offs[0]] = f(d, offs[1], n, r.s) })
}

// columnReduction is what reduceColumns computes of each column.
type columnReduction int

const (
	columnSum columnReduction = iota
	columnProd
	columnMax
	columnMin
)

// reduceColumns sums, multiplies or takes the extreme when the runs are
// strided but neighbouring outputs read neighbouring inputs (the last kept
// dim has stride 1: a reduction over dim 0 of a row-major matrix). Walking
// each run on its own would then jump a row per element, missing cache and
// TLB each time (max over dim 0 of [1024, 1024] took 17 times torch's
// time, prod 22); instead a block of outputs is reduced together, row by
// row, in memory order. Each output sees its run's elements in the run's
// order, so its value is the run loop's: sumRun's and prodRun's in A,
// extreme's first NaN, and first of ±0. It reports false when the layout
// is not of that kind.
func reduceColumns[T, A number](kind columnReduction, out, x *dispatch.Tensor, dims []int) bool {
	var sp dimSplit
	kShape, kStrides, rShape, rStrides := sp.of(x, dims)
	n, s, ok := oneRun(rShape, rStrides)
	k := len(kShape)
	if !ok || k == 0 || n == 0 || s == 1 || kStrides[k-1] != 1 || kShape[k-1] < 8 {
		return false // not columns, or the general path copies
	}
	r, _ := planRuns(x, dims) // no copy: the reduced dims are one run
	const block = 256
	cols := r.l.Shape[k-1]
	groups := r.outLen / cols
	chunks := (cols + block - 1) / block
	o, d := elems[T](out)[out.Offset:], elems[T](x)
	var zero A
	_, wide := any(zero).(float64) // float64 sums: float32 data may take the C loop
	parallel(groups*chunks, r.n*block, func(lo, hi int) {
		var acc [block]A
		for task := lo; task < hi; task++ {
			g, c := task/chunks, task%chunks
			base := r.l.base[1]
			for dim, rem := k-2, g; dim >= 0; dim-- {
				base += (rem % r.l.Shape[dim]) * r.l.Strides[1][dim]
				rem /= r.l.Shape[dim]
			}
			j0, j1 := c*block, min((c+1)*block, cols)
			dst := o[g*cols+j0 : g*cols+j1]
			if d32, ok := any(d).([]float32); ok && kind == columnSum && wide &&
				sumColsFloat32(any(dst).([]float32), d32[base+j0:], r.n, r.s) {
				continue // float32 lanes in blocks of rows, the blocks in float64
			}
			if kind == columnMax || kind == columnMin {
				extremeColumns(dst, d, base+j0, r.n, r.s, kind == columnMax)
				continue
			}
			// From 0 for a sum (so that -0s sum to +0, as sumRun's do), from
			// the first row for a product (1·v is v).
			a, from := acc[:j1-j0], 0
			clear(a)
			if kind == columnProd {
				for j, v := range d[base+j0 : base+j1] {
					a[j] = A(v)
				}
				from = 1
			}
			for i := from; i < r.n; i++ {
				row := d[base+i*r.s+j0 : base+i*r.s+j1]
				if kind == columnSum {
					for j, v := range row {
						a[j] += A(v)
					}
				} else {
					for j, v := range row {
						a[j] *= A(v)
					}
				}
			}
			for j := range dst {
				dst[j] = T(a[j])
			}
		}
	})
	return true
}

// extremeColumns writes to dst[j] the largest (more) or smallest of the n
// elements d[off + j + i·s], i < n, as extreme gives each: the first NaN,
// else the first of the extremes (of ±0 too), as the element itself;
// float32 columns in C's lanes (lathe_extreme_cols_f32).
func extremeColumns[T number](dst, d []T, off, n, s int, more bool) {
	if d32, ok := any(d).([]float32); ok && extremeColsFloat32(any(dst).([]float32), d32[off:], n, s, more) {
		return
	}
	copy(dst, d[off:off+len(dst)])
	for i := 1; i < n; i++ {
		row := d[off+i*s : off+i*s+len(dst)]
		if more {
			for j, v := range row {
				if b := dst[j]; b == b && (v != v || v > b) {
					dst[j] = v
				}
			}
			continue
		}
		for j, v := range row {
			if b := dst[j]; b == b && (v != v || v < b) {
				dst[j] = v
			}
		}
	}
}

// rowReduction numbers shim.c's lathe_reduce_rows_f32 ops.
type rowReduction int

const (
	rowSum rowReduction = iota
	rowMax
	rowMin
	rowProd
)

// reduceRows reduces float32 runs that are contiguous and evenly spaced (a
// reduction over the last dims), a goroutine's rows in one call of
// reduceRowsFloat32, and gives each row what sumRun (sum, with float64
// accumulation), prodRun or extremeRun gives it: a row whose extreme is a NaN or a
// zero is settled by extreme's Go loop, as extreme settles them. A call
// per row cost as much as the row's sum: [4096, 1024] summed over dim 1
// took 2.9 times torch's time. It reports false for another layout or
// dtype, and for a single run, which sumRun and extremeRun share between
// the cores.
func reduceRows[T, A number](op rowReduction, out, x *dispatch.Tensor, dims []int) bool {
	d, ok := any(elems[T](x)).([]float32)
	var zero A
	if _, wide := any(zero).(float64); !ok || !wide || !haveAVX2 {
		return false
	}
	var sp dimSplit
	kShape, kStrides, rShape, rStrides := sp.of(x, dims)
	n, s, ok := oneRun(rShape, rStrides)
	if !ok || s != 1 || n < vectorMin {
		return false
	}
	var kept oneWalk
	if kept.collapse(kShape, kStrides); kept.n != 1 || kept.size(0) < 2 || kept.stride(0) < 0 {
		return false
	}
	rows, stride := kept.size(0), kept.stride(0)
	o := any(elems[T](out)[out.Offset:][:rows]).([]float32)
	parallel(rows, n, func(lo, hi int) {
		reduceRowsFloat32(op, o[lo:hi], d[x.Offset+lo*stride:], n, stride)
		if op != rowMax && op != rowMin {
			return
		}
		for r := lo; r < hi; r++ {
			if v := o[r]; v != v || v == 0 {
				o[r] = extreme(d, x.Offset+r*stride, n, 1, op == rowMax)
			}
		}
	})
	return true
}

// sumPanels sums when each output's elements lie in n1 contiguous runs of
// n2 at one stride: a sum over dims 0, 2 and 3 of [N, C, H, W] (the bias
// gradient of a convolution, batch norm's statistics), whose reduced dims
// form no single run. Each run is summed where it lies (the vector sum for
// float32), instead of the reduced dims being copied together first. It
// reports false when the layout is not of that kind.
func sumPanels[T, A number](out, x *dispatch.Tensor, dims []int) bool {
	p, ok := panelsOf(x, dims)
	if !ok {
		return false
	}
	o, d := elems[T](out)[out.Offset:], elems[T](x)
	parallel(p.outputs, p.n1*p.n2, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			base := p.base(i)
			var acc A
			for j := range p.n1 {
				acc += accumulate[T, A](d, base+j*p.s1, p.n2, 1)
			}
			o[i] = T(acc)
		}
	})
	return true
}

// sumPanelsHalf is sumPanels for a 16-bit x and result: each run widened
// into a per-goroutine buffer and summed as float32's are, the float64
// total rounded to float32 and then to out's dtype, as dispatch.ViaCompute's
// whole widened copy gave, without the copy. It reports false where
// sumPanels would, or the dtypes differ.
func sumPanelsHalf(out, x *dispatch.Tensor, dims []int) bool {
	p, ok := panelsOf(x, dims)
	if !ok || !dispatch.Halves.Has(x.DType) || out.DType != x.DType {
		return false
	}
	bf := x.DType == dispatch.BFloat16
	o, d := bits16(out.Storage.Buffer)[out.Offset:], bits16(x.Storage.Buffer)
	parallel(p.outputs, p.n1*p.n2, func(lo, hi int) {
		run := make([]float32, p.n2)
		var total [1]float32
		for i := lo; i < hi; i++ {
			base := p.base(i)
			var acc float64
			for j := range p.n1 {
				widenHalf(run, d[base+j*p.s1:base+j*p.s1+p.n2], bf)
				acc += accumulate[float32, float64](run, 0, p.n2, 1)
			}
			total[0] = float32(acc)
			roundHalf(o[i:i+1], total[:], bf)
		}
	})
	return true
}

// panels is the layout sumPanels takes: outputs reductions, the reduced
// elements of output i in n1 contiguous runs of n2 values s1 apart from
// base(i).
type panels struct {
	outputs, n1, s1, n2 int
	offset              int
	kShape, kStrides    []int
}

func panelsOf(x *dispatch.Tensor, dims []int) (panels, bool) {
	var sp dimSplit
	kShape, kStrides, rShape, rStrides := sp.of(x, dims)
	if dispatch.Numel(rShape) == 0 {
		return panels{}, false
	}
	var w oneWalk
	if w.collapse(rShape, rStrides); w.n != 2 || w.stride(1) != 1 {
		return panels{}, false
	}
	kept := slices.Concat(kShape, kStrides) // outlives sp, in the kernel's goroutines
	k := len(kShape)
	return panels{dispatch.Numel(kShape), w.size(0), w.stride(0), w.size(1), x.Offset, kept[:k:k], kept[k:]}, true
}

// base is the offset of output i's first run.
func (p panels) base(i int) int {
	base := p.offset
	for dim := len(p.kShape) - 1; dim >= 0; dim-- {
		base += (i % p.kShape[dim]) * p.kStrides[dim]
		i /= p.kShape[dim]
	}
	return base
}

// sumRun is the sum, accumulated in A and rounded once to T.
func sumRun[T, A number](d []T, off, n, s int) T {
	if s == 1 && n >= minSplitSum {
		return T(splitSum[T, A](d[off : off+n]))
	}
	return T(accumulate[T, A](d, off, n, s))
}

// minSplitSum is the run length above which one sum (a whole-tensor sum,
// typically) is shared between the cores: below it a goroutine costs more
// than the part of the run it would take.
const minSplitSum = 1 << 20

// splitSum sums v in one contiguous chunk per core and adds the partial
// sums in chunk order, so a given GOMAXPROCS always gives the same result.
func splitSum[T, A number](v []T) A {
	parts := make([]A, runtime.GOMAXPROCS(0))
	chunk := (len(v) + len(parts) - 1) / len(parts)
	fanOut(len(parts), func(i int) {
		lo, hi := min(i*chunk, len(v)), min((i+1)*chunk, len(v))
		parts[i] = accumulate[T, A](v, lo, hi-lo, 1)
	})
	var total A
	for _, p := range parts {
		total += p
	}
	return total
}

// accumulate adds in A (float64 for floats, int64 for ints) with four
// accumulators, which breaks the add chain's latency and, for floats, slows
// the error growth of one running sum; a long float run goes to C's lanes
// (four vectors of them, for float64).
func accumulate[T, A number](d []T, off, n, s int) A {
	if s == 1 && n >= vectorMin {
		switch f := any(d).(type) {
		case []float32:
			return A(sumFloat32(f[off : off+n])) // A is float64 for a float T
		case []float64:
			if v, ok := sumFloat64(f[off : off+n]); ok {
				return A(v)
			}
		}
	}
	return accumulateGo[T, A](d, off, n, s)
}

// sumFloat32Go is sumFloat32 without the vector loop.
func sumFloat32Go(v []float32) float64 { return accumulateGo[float32, float64](v, 0, len(v), 1) }

func accumulateGo[T, A number](d []T, off, n, s int) A {
	var a0, a1, a2, a3 A
	i := 0
	if s == 1 {
		v := d[off : off+n]
		for ; i+4 <= n; i += 4 {
			a0 += A(v[i])
			a1 += A(v[i+1])
			a2 += A(v[i+2])
			a3 += A(v[i+3])
		}
		for ; i < n; i++ {
			a0 += A(v[i])
		}
		return (a0 + a1) + (a2 + a3)
	}
	p := off
	for ; i+4 <= n; i += 4 {
		a0 += A(d[p])
		a1 += A(d[p+s])
		a2 += A(d[p+2*s])
		a3 += A(d[p+3*s])
		p += 4 * s
	}
	for ; i < n; i++ {
		a0 += A(d[p])
		p += s
	}
	return (a0 + a1) + (a2 + a3)
}

// prodRun multiplies in A; integer products wrap as PyTorch's do. A long
// contiguous float32 run goes to C's chains (prodFloat32); a strided run
// keeps one chain, the order of reduceColumns' columns.
func prodRun[T, A number](d []T, off, n, s int) T {
	if f, ok := any(d).([]float32); ok && s == 1 && n >= vectorMin {
		if v, ok := prodFloat32(f[off : off+n]); ok {
			return T(v)
		}
	}
	a := A(1)
	for i := range n {
		a *= A(d[off+i*s])
	}
	return T(a)
}

// extremeRun is max (more) or min (!more); a NaN anywhere is the result, as
// in torch.amax. A run as long as minSplitSum (a whole tensor's, typically)
// is shared between the cores, its chunks' extremes combined in order.
func extremeRun[T number](more bool) runFunc[T, T] {
	return func(d []T, off, n, s int) T {
		if s != 1 || n < minSplitSum {
			return extreme(d, off, n, s, more)
		}
		parts := make([]T, runtime.GOMAXPROCS(0))
		chunk := (n + len(parts) - 1) / len(parts)
		fanOut(len(parts), func(i int) {
			lo, hi := min(i*chunk, n), min((i+1)*chunk, n)
			if lo < hi {
				parts[i] = extreme(d, off+lo, hi-lo, 1, more)
			} else {
				parts[i] = d[off] // an empty chunk: a value that cannot win
			}
		})
		return extreme(parts, 0, len(parts), 1, more)
	}
}

// extreme is the first of the largest (more) or smallest elements of the
// run, or its first NaN: in C's lanes for a long float32 run, whose answer
// stands unless it is a NaN or a zero (which of them, and of ±0, is the
// first is the Go loop's to say).
func extreme[T number](d []T, off, n, s int, more bool) T {
	if f, ok := any(d).([]float32); ok && s == 1 {
		if v, ok := extremeFloat32(f[off:off+n], more); ok && v == v && v != 0 {
			return T(v)
		}
	}
	best := d[off]
	if more {
		for i := 1; i < n && best == best; i++ {
			if v := d[off+i*s]; v != v || v > best {
				best = v
			}
		}
		return best
	}
	for i := 1; i < n && best == best; i++ {
		if v := d[off+i*s]; v != v || v < best {
			best = v
		}
	}
	return best
}

// argRun is argmax (more) or argmin: the first index of the extreme, where
// NaN counts as both the largest and the smallest value (the first NaN
// wins), as in PyTorch.
func argRun[T number](more bool) runFunc[T, int64] {
	return func(d []T, off, n, s int) int64 {
		best, bi := d[off], 0
		for i := 1; i < n && best == best; i++ {
			v := d[off+i*s]
			if v != v || (more && v > best) || (!more && v < best) {
				best, bi = v, i
			}
		}
		return int64(bi)
	}
}

// varRun is the two-pass variance in float64: the mean first, then the sum
// of squared deviations, divided by n - correction (as torch.var; a divisor
// of 0 gives nan or inf as there). With root it is the standard deviation.
func varRun[T number](correction int, root bool) runFunc[T, T] {
	return func(d []T, off, n, s int) T {
		if n == 0 {
			return T(math.NaN())
		}
		mean := accumulate[T, float64](d, off, n, s) / float64(n)
		var a0, a1 float64
		i := 0
		for ; i+2 <= n; i += 2 {
			e0, e1 := float64(d[off+i*s])-mean, float64(d[off+(i+1)*s])-mean
			a0 += e0 * e0
			a1 += e1 * e1
		}
		if i < n {
			e := float64(d[off+i*s]) - mean
			a0 += e * e
		}
		v := (a0 + a1) / float64(max(n-correction, 0))
		if root {
			v = math.Sqrt(v)
		}
		return T(v)
	}
}

// lseRun is log Σ exp(x) shifted by the maximum so that no exp overflows;
// an infinite maximum is the result itself (all -inf gives -inf, any +inf
// gives +inf), as in torch.logsumexp, and an empty run gives -inf.
func lseRun[T number](d []T, off, n, s int) T {
	if n == 0 {
		return T(math.Inf(-1))
	}
	m := float64(extreme(d, off, n, s, true))
	if math.IsNaN(m) || math.IsInf(m, 0) {
		return T(m)
	}
	if f, ok := any(d).([]float32); ok && s == 1 {
		// float32 exponentials in C's lanes, as torch's float32 kernel
		// takes them (a few ulps each, summed in float64).
		if sum, ok := sumExpFloat32(f[off:off+n], float32(m)); ok {
			return T(m + math.Log(sum))
		}
	}
	var a0, a1 float64
	i := 0
	for ; i+2 <= n; i += 2 {
		a0 += math.Exp(float64(d[off+i*s]) - m)
		a1 += math.Exp(float64(d[off+(i+1)*s]) - m)
	}
	if i < n {
		a0 += math.Exp(float64(d[off+i*s]) - m)
	}
	return T(m + math.Log(a0+a1))
}

// reducer gives the run function of a reduction that keeps x's dtype.
func reducer[T, A number](name string, r ops.Reduce) runFunc[T, T] {
	switch name {
	case "sum":
		return sumRun[T, A]
	case "prod":
		return prodRun[T, A]
	case "max":
		return extremeRun[T](true)
	case "min":
		return extremeRun[T](false)
	case "var":
		return varRun[T](r.Correction, false)
	case "std":
		return varRun[T](r.Correction, true)
	case "logsumexp":
		return lseRun[T]
	}
	return nil
}

func reduceTyped[T, A number](name string, out, x *dispatch.Tensor, dims []int, r ops.Reduce) {
	switch name {
	case "argmax", "argmin":
		reduceInto(out, x, dims, argRun[T](name == "argmax"))
	case "sum":
		if !reduceColumns[T, A](columnSum, out, x, dims) && !sumPanels[T, A](out, x, dims) && !reduceRows[T, A](rowSum, out, x, dims) {
			reduceInto(out, x, dims, sumRun[T, A])
		}
	case "max", "min":
		op, col := rowMax, columnMax
		if name == "min" {
			op, col = rowMin, columnMin
		}
		if !reduceColumns[T, A](col, out, x, dims) && !reduceRows[T, A](op, out, x, dims) {
			reduceInto(out, x, dims, reducer[T, A](name, r))
		}
	case "prod":
		if !reduceColumns[T, A](columnProd, out, x, dims) && !reduceRows[T, A](rowProd, out, x, dims) {
			reduceInto(out, x, dims, prodRun[T, A])
		}
	default:
		reduceInto(out, x, dims, reducer[T, A](name, r))
	}
}

func init() {
	for _, op := range ops.ReduceOps {
		name := op.Name
		var fast []func(*dispatch.Tensor, []*dispatch.Tensor, ops.Reduce) bool
		if name == "sum" {
			fast = append(fast, func(out *dispatch.Tensor, in []*dispatch.Tensor, r ops.Reduce) bool {
				if !dispatch.Halves.Has(in[0].DType) {
					return false
				}
				dims, _, err := ops.ReduceShape(in[0], r)
				return err == nil && sumPanelsHalf(out, in[0], dims)
			})
		}
		registerFast(op.Op, op.DTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, r ops.Reduce) error {
			x := in[0]
			dims, _, err := ops.ReduceShape(x, r)
			if err != nil {
				return err
			}
			switch x.DType {
			case dispatch.Float32:
				reduceTyped[float32, float64](name, out, x, dims, r)
			case dispatch.Float64:
				reduceTyped[float64, float64](name, out, x, dims, r)
			case dispatch.Int32:
				reduceTyped[int32, int64](name, out, x, dims, r)
			case dispatch.Int64:
				reduceTyped[int64, int64](name, out, x, dims, r)
			default:
				return dispatch.Unsupported(out.Device, name, x.DType)
			}
			return nil
		}, fast...)
	}
	register(ops.CumSum, func(out *dispatch.Tensor, in []*dispatch.Tensor, sc ops.Scan) error {
		x := in[0]
		dim, err := ops.NormDim(sc.Dim, x.Rank(), "dim")
		if err != nil {
			return err
		}
		switch x.DType {
		case dispatch.Float32:
			cumsum[float32, float64](out, x, dim)
		case dispatch.Float64:
			cumsum[float64, float64](out, x, dim)
		case dispatch.Int32:
			cumsum[int32, int64](out, x, dim)
		case dispatch.Int64:
			cumsum[int64, int64](out, x, dim)
		default:
			return dispatch.Unsupported(out.Device, "cumsum", x.DType)
		}
		return nil
	})
}

// cumsum writes the running sums of x along dim into out, accumulating in A
// (float64 for floats, as PyTorch's cpu kernel does) and rounding each.
func cumsum[T, A number](out, x *dispatch.Tensor, dim int) {
	if x.Rank() == 0 {
		elems[T](out)[out.Offset] = elems[T](x)[x.Offset]
		return
	}
	var shape, so, sx []int
	for d := range x.Shape {
		if d != dim {
			shape, so, sx = append(shape, x.Shape[d]), append(so, out.Strides[d]), append(sx, x.Strides[d])
		}
	}
	l := strided{layout.Walk{ // not collapsed: the last dim is the scan
		Shape:   append(shape, x.Shape[dim]),
		Strides: [][]int{append(so, out.Strides[dim]), append(sx, x.Strides[dim])},
	}, []int{out.Offset, x.Offset}}
	o, d := elems[T](out), elems[T](x)
	oStep, xStep := out.Strides[dim], x.Strides[dim]
	l.rows(func(offs []int, n int) {
		var a A
		po, px := offs[0], offs[1]
		for range n {
			a += A(d[px])
			o[po] = T(a)
			po += oStep
			px += xStep
		}
	})
}
