package ops

import "github.com/lathe-ml/lathe/dispatch"

// argsort is the one kernel op behind sort, argsort, topk and the values
// of max and min along a dim (the root package composes those from it,
// narrow and gather): the permutation that sorts each line of x along a
// dim, stably, as int64 indices of x's shape.

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
