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
	k, r := len(w.Strides), len(w.Shape)
	// The shape and every operand's strides share one array, each in a
	// part of its own (at most r dims), since every kernel call collapses
	// a walk: k+2 allocations were a tenth of a training step's.
	ints := make([]int, (k+1)*r)
	out := Walk{Shape: ints[:0:r], Strides: make([][]int, k)}
	for j := range out.Strides {
		out.Strides[j] = ints[(j+1)*r : (j+1)*r : (j+2)*r]
	}
	for d, s := range w.Shape {
		if s == 0 {
			return Walk{Shape: []int{0}, Strides: single(k)}
		}
		if s == 1 {
			continue
		}
		n := len(out.Shape)
		merge := n > 0
		for j := 0; merge && j < k; j++ {
			merge = out.Strides[j][n-1] == w.Strides[j][d]*s
		}
		if merge {
			out.Shape[n-1] *= s
			for j := range k {
				out.Strides[j][n-1] = w.Strides[j][d]
			}
			continue
		}
		out.Shape = append(out.Shape, s)
		for j := range k {
			out.Strides[j] = append(out.Strides[j], w.Strides[j][d])
		}
	}
	if len(out.Shape) == 0 {
		return Walk{Shape: []int{1}, Strides: single(k)}
	}
	return out
}

// single is k operands' strides of a one-dim walk: 0, which no index uses.
func single(k int) [][]int {
	s := make([][]int, k)
	for j := range s {
		s[j] = []int{0}
	}
	return s
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
