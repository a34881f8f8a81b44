package dispatch

import (
	"slices"
	"strconv"
	"strings"
)

// FormatShape writes a shape as PyTorch does: [2, 3].
func FormatShape(shape []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(s))
	}
	b.WriteByte(']')
	return b.String()
}

// BroadcastShapes applies NumPy's rule: align from the right; sizes must be
// equal or one of them 1. ok is false when they do not broadcast.
func BroadcastShapes(a, b []int) (out []int, ok bool) {
	if slices.Equal(a, b) {
		return a, true // shapes are never written after an op returns: share it
	}
	n := max(len(a), len(b))
	out = make([]int, n)
	for i := range n {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// BroadcastStrides returns t's strides over the broadcast shape: a
// broadcast dimension gets stride 0, so a kernel reads the same element.
// shape must be one that t broadcasts to.
func BroadcastStrides(t *Tensor, shape []int) []int {
	strides := make([]int, len(shape))
	off := len(shape) - len(t.Shape)
	for i := range t.Shape {
		if t.Shape[i] != 1 {
			strides[off+i] = t.Strides[i]
		}
	}
	return strides
}

// broadcastAll broadcasts the shapes of all arguments, naming the first that
// does not fit.
func broadcastAll(in []*Tensor, names func(int) string) ([]int, error) {
	shape := in[0].Shape
	for i := 1; i < len(in); i++ {
		s, ok := BroadcastShapes(shape, in[i].Shape)
		if !ok {
			return nil, &Error{Kind: ErrShape, Arg: names(i), Expected: FormatShape(shape), Found: FormatShape(in[i].Shape),
				Detail: "has shape " + FormatShape(in[i].Shape) + ", which does not broadcast with " + FormatShape(shape),
				Fix:    "make each dimension equal or 1, e.g. with Reshape or Unsqueeze"}
		}
		shape = s
	}
	return shape, nil
}

// NormDim turns a possibly negative dim into an index in [0, rank), or says
// why it cannot. arg names the attribute in the error.
func NormDim(dim, rank int, arg string) (int, error) {
	r := max(rank, 1) // a 0-d tensor takes dim 0 and -1, as in PyTorch
	if dim < -r || dim >= r {
		return 0, &Error{Kind: ErrIndex, Arg: arg,
			Detail: "is " + strconv.Itoa(dim) + ", out of range for a tensor of rank " + strconv.Itoa(rank),
			Fix:    "use a dim in [" + strconv.Itoa(-r) + ", " + strconv.Itoa(r-1) + "]"}
	}
	if dim < 0 {
		dim += r
	}
	return dim, nil
}

// NormDims normalises a list of dims, refusing repeats. No dims means all.
func NormDims(dims []int, rank int, arg string) ([]int, error) {
	if len(dims) == 0 {
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	out := make([]int, len(dims))
	seen := make([]bool, max(rank, 1))
	for i, d := range dims {
		n, err := NormDim(d, rank, arg)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, &Error{Kind: ErrValue, Arg: arg, Detail: "names dim " + strconv.Itoa(d) + " twice", Fix: "list each dim once"}
		}
		seen[n] = true
		out[i] = n
	}
	return out, nil
}

// checkDType refuses a dtype outside the op's set.
func checkDType(t *Tensor, arg string, allowed DTypeSet) error {
	if allowed.Has(t.DType) {
		return nil
	}
	fix := "cast it with .Cast(" + firstOf(allowed).GoString() + ")"
	return &Error{Kind: ErrDType, Arg: arg, Expected: allowed.String(), Found: t.DType.String(),
		Detail: "is " + t.DType.String() + " but the op takes " + allowed.String(), Fix: fix}
}

// sameDType refuses arguments whose dtypes differ from the first's: lathe
// does not promote types behind the caller's back.
func sameDType(in []*Tensor, names func(int) string, from int) error {
	for i := from + 1; i < len(in); i++ {
		if in[i].DType != in[from].DType {
			return &Error{Kind: ErrDType, Arg: names(i), Expected: in[from].DType.String(), Found: in[i].DType.String(),
				Detail: "is " + in[i].DType.String() + " but " + strconv.Quote(names(from)) + " is " + in[from].DType.String(),
				Fix:    "cast one with .Cast(" + in[from].DType.GoString() + ")"}
		}
	}
	return nil
}

func firstOf(s DTypeSet) DType {
	for d := Float32; d <= Bool; d++ {
		if s.Has(d) {
			return d
		}
	}
	return InvalidDType
}

// MergeDims drops size-1 dims and merges a dim into the one before it when
// that one's stride steps over it exactly, which keeps the row-major order
// of the elements and shortens a kernel's index arithmetic. An empty
// shape stays as it is (it has no elements to order).
func MergeDims(shape, strides []int) ([]int, []int) {
	var ms, mst []int
	for i, size := range shape {
		if size == 0 {
			return shape, strides
		}
		if size == 1 {
			continue
		}
		if k := len(ms); k > 0 && mst[k-1] == strides[i]*size {
			ms[k-1] *= size
			mst[k-1] = strides[i]
			continue
		}
		ms, mst = append(ms, size), append(mst, strides[i])
	}
	return ms, mst
}
