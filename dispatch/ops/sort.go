package ops

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// argsort is the kernel op behind sort and argsort (the root package
// takes the values with gather): the permutation that sorts each line of x
// along a dim, stably, as int64 indices of x's shape. argtopk is its first
// k entries, which a backend can find without sorting the whole line;
// where a device has no argtopk kernel, topk narrows argsort's result.

// SortDim is argsort's attribute: the dim to sort along (negative counts
// from the end; a 0-d tensor takes 0 and -1) and the direction.
type SortDim struct {
	Dim        int
	Descending bool
}

// ArgSort is torch.argsort(x, dim, descending, stable=True): for each line
// along Dim, the indices that order it, ties in their original order (in
// both directions, as torch's stable sort keeps them). NaN sorts as larger
// than every number, NaNs equal to each other; -0 and +0 are equal. It
// takes every dtype, bool included (false < true), as torch.sort does.
var ArgSort = dispatch.Register(&dispatch.Op[SortDim]{Schema: dispatch.Schema{Name: "argsort", Args: []string{"x"}}, Infer: argsortInfer})

func argsortInfer(in []*dispatch.Tensor, s SortDim) (dispatch.DType, []int, error) {
	x := in[0]
	if err := checkDType(x, "x", AllTypes); err != nil {
		return 0, nil, err
	}
	if _, err := NormDim(s.Dim, x.Rank(), "dim"); err != nil {
		return 0, nil, err
	}
	return dispatch.Int64, clone(x.Shape), nil
}

// TopKDim is argtopk's attribute: the dim to select along (negative
// counts from the end), how many to select, and whether the largest or
// the smallest.
type TopKDim struct {
	Dim     int
	K       int
	Largest bool
}

// ArgTopK is the first K entries of ArgSort(x, Dim, Descending: Largest)
// along Dim: the indices of the K largest (smallest) elements of each
// line, in order, ties in their original order. The result is int64, of
// x's shape with Dim of size K. x has rank 1 or more (a 0-d tensor's topk
// is itself), and K is in [0, size of Dim]; bool x is refused, as torch
// has no topk for bool.
var ArgTopK = dispatch.Register(&dispatch.Op[TopKDim]{Schema: dispatch.Schema{Name: "argtopk", Args: []string{"x"}}, Infer: argtopkInfer})

func argtopkInfer(in []*dispatch.Tensor, a TopKDim) (dispatch.DType, []int, error) {
	x := in[0]
	if err := checkDType(x, "x", Numeric); err != nil {
		return 0, nil, err
	}
	if x.Rank() == 0 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Detail: "is 0-d, and argtopk selects along a dim",
			Fix: "reshape it to [1] first"}
	}
	d, err := NormDim(a.Dim, x.Rank(), "dim")
	if err != nil {
		return 0, nil, err
	}
	if n := x.Shape[d]; a.K < 0 || a.K > n {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "k",
			Detail: "is " + strconv.Itoa(a.K) + " but dim " + strconv.Itoa(a.Dim) + " has " + strconv.Itoa(n) + " elements",
			Found:  strconv.Itoa(a.K), Fix: "use a k in [0, " + strconv.Itoa(n) + "]"}
	}
	shape := clone(x.Shape)
	shape[d] = a.K
	return dispatch.Int64, shape, nil
}

// CumExtreme is argcumextreme's attribute: the dim to scan along
// (negative counts from the end), and whether the maximum or the minimum.
type CumExtreme struct {
	Dim int
	Max bool
}

// ArgCumExtreme is the index along Dim of the running maximum (Max) or
// minimum of each line of x, as torch.cummax's and cummin's indices: the
// last of equal extremes, and from a NaN on the latest NaN (a float's
// NaN is beaten by none but a later NaN); false is below true. The result
// is int64 of x's shape; x has rank 1 or more. Where a device has no
// kernel, lathe's CumMax and CumMin take a composite (ops_scan.go).
var ArgCumExtreme = dispatch.Register(&dispatch.Op[CumExtreme]{Schema: dispatch.Schema{Name: "argcumextreme", Args: []string{"x"}},
	Infer: func(in []*dispatch.Tensor, a CumExtreme) (dispatch.DType, []int, error) {
		x := in[0]
		if err := checkDType(x, "x", AllTypes); err != nil {
			return 0, nil, err
		}
		if x.Rank() == 0 {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Detail: "is 0-d, and argcumextreme scans along a dim",
				Fix: "reshape it to [1] first"}
		}
		if _, err := NormDim(a.Dim, x.Rank(), "dim"); err != nil {
			return 0, nil, err
		}
		return dispatch.Int64, clone(x.Shape), nil
	}})
