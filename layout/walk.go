package layout

import "github.com/lathe-ml/lathe/dispatch"

// Walk is a shape walked by several operands together, each with its own
// strides in elements (0 along a broadcast dim): operand j's element at
// index (i0, i1, ...) sits Σ i_d·Strides[j][d] from its first element.
// Every elementwise, copy and reduction kernel of every backend walks its
// operands through one, so strided views and broadcasting cost no copy.
type Walk struct {
	Shape   []int
	Strides [][]int
}

// Broadcast is the walk of out's shape by out and by each input broadcast
// to it, in that order.
func Broadcast(out *dispatch.Tensor, in ...*dispatch.Tensor) Walk {
	w := Walk{Shape: out.Shape, Strides: make([][]int, 1+len(in))}
	w.Strides[0] = out.Strides
	for j, t := range in {
		w.Strides[j+1] = BroadcastStrides(t, out.Shape)
	}
	return w
}

// Of is the walk of one tensor's own shape and strides.
func Of(t *dispatch.Tensor) Walk { return Walk{Shape: t.Shape, Strides: [][]int{t.Strides}} }

// Collapse drops size-1 dims and merges each dim into the one before it
// when every operand steps over it exactly, so that a contiguous walk
// becomes one dim and most strided ones few. The row-major order of the
// elements, and so each element's offset in every operand, is unchanged.
// The result has at least one dim: [1] for a walk of one element, and [0]
// (strides 0) for an empty one, which has no elements to order.
func (w Walk) Collapse() Walk {
	k, r1 := len(w.Strides), max(len(w.Shape), 1)
	// The shape and every operand's strides share one array, each in a
	// part of its own (at most r dims), since every kernel call collapses
	// a walk: k+2 allocations were a tenth of a training step's.
	ints := make([]int, (k+1)*r1)
	n := w.CollapseInto(ints)
	out := Walk{Shape: ints[:n:n], Strides: make([][]int, k)}
	for j := range out.Strides {
		out.Strides[j] = ints[(j+1)*r1:][:n:n]
	}
	return out
}

// CollapseInto writes Collapse's walk into dst, which holds at least
// (k+1)·max(r, 1) ints for k operands of rank r: the shape at dst[:n] and
// operand j's strides at dst[(j+1)·max(r, 1):][:n], and returns its rank
// n. A caller that wants a few numbers of the walk (a reduction asks
// whether its dims form one run) can give an array on its own stack and
// allocate nothing.
func (w Walk) CollapseInto(dst []int) (n int) {
	k, r1 := len(w.Strides), max(len(w.Shape), 1)
	stride := func(j, d int) *int { return &dst[(j+1)*r1+d] }
	// one is the walk of a single dim of size s, whose stride no index
	// uses: [0] for an empty walk, which has no elements to order, [1] for
	// one element.
	one := func(s int) int {
		dst[0] = s
		for j := range k {
			*stride(j, 0) = 0
		}
		return 1
	}
	for d, s := range w.Shape {
		if s == 0 {
			return one(0)
		}
		if s == 1 {
			continue
		}
		merge := n > 0
		for j := 0; merge && j < k; j++ {
			merge = *stride(j, n-1) == w.Strides[j][d]*s
		}
		if merge {
			dst[n-1] *= s
			for j := range k {
				*stride(j, n-1) = w.Strides[j][d]
			}
			continue
		}
		dst[n] = s
		for j := range k {
			*stride(j, n) = w.Strides[j][d]
		}
		n++
	}
	if n == 0 {
		return one(1)
	}
	return n
}

// Rank is the number of dims of the walk.
func (w Walk) Rank() int { return len(w.Shape) }

// BroadcastStrides returns t's strides over the broadcast shape: a
// broadcast dimension gets stride 0, so a kernel reads the same element.
// shape must be one that t broadcasts to.
func BroadcastStrides(t *dispatch.Tensor, shape []int) []int {
	return BroadcastStridesOf(t.Shape, t.Strides, shape)
}

// BroadcastStridesOf is BroadcastStrides of a layout given as its shape
// and strides (NumPy's rule: missing leading dims and size-1 dims get
// stride 0).
func BroadcastStridesOf(shape, strides, to []int) []int {
	out := make([]int, len(to))
	off := len(to) - len(shape)
	for i := range shape {
		if shape[i] != 1 {
			out[off+i] = strides[i]
		}
	}
	return out
}
