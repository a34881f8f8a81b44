package ops

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

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

// broadcastAll broadcasts the shapes of all arguments, naming the first that
// does not fit.
func broadcastAll(in []*dispatch.Tensor, names func(int) string) ([]int, error) {
	shape := in[0].Shape
	for i := 1; i < len(in); i++ {
		s, ok := BroadcastShapes(shape, in[i].Shape)
		if !ok {
			return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: names(i), Expected: dispatch.FormatShape(shape), Found: dispatch.FormatShape(in[i].Shape),
				Detail: "has shape " + dispatch.FormatShape(in[i].Shape) + ", which does not broadcast with " + dispatch.FormatShape(shape),
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
		return 0, &dispatch.Error{Kind: dispatch.ErrIndex, Arg: arg,
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
	for i, d := range dims {
		n, err := NormDim(d, rank, arg)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out[:i], n) {
			return nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: arg, Detail: "names dim " + strconv.Itoa(d) + " twice", Fix: "list each dim once"}
		}
		out[i] = n
	}
	return out, nil
}

// checkDType refuses a dtype outside the op's set.
func checkDType(t *dispatch.Tensor, arg string, allowed dispatch.DTypeSet) error {
	if allowed.Has(t.DType) {
		return nil
	}
	fix := "cast it with .Cast(" + firstOf(allowed).GoString() + ")"
	return &dispatch.Error{Kind: dispatch.ErrDType, Arg: arg, Expected: allowed.String(), Found: t.DType.String(),
		Detail: "is " + t.DType.String() + " but the op takes " + allowed.String(), Fix: fix}
}

// sameDType refuses arguments whose dtypes differ from the first's: a
// kernel takes one dtype. The root package casts the operands of the ops
// that promote (ops.BinaryDType) before they get here; the others refuse,
// as torch's matmul and convolutions do.
func sameDType(in []*dispatch.Tensor, names func(int) string, from int) error {
	for i := from + 1; i < len(in); i++ {
		if in[i].DType != in[from].DType {
			return &dispatch.Error{Kind: dispatch.ErrDType, Arg: names(i), Expected: in[from].DType.String(), Found: in[i].DType.String(),
				Detail: "is " + in[i].DType.String() + " but " + strconv.Quote(names(from)) + " is " + in[from].DType.String(),
				Fix:    "cast one with .Cast(" + in[from].DType.GoString() + ")"}
		}
	}
	return nil
}

func firstOf(s dispatch.DTypeSet) dispatch.DType {
	for d := dispatch.Float32; d.Valid(); d++ {
		if s.Has(d) {
			return d
		}
	}
	return dispatch.InvalidDType
}

func itoa(n int) string { return strconv.Itoa(n) }
