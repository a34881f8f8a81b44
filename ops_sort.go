package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Sorting and selection along a dim. A stable argsort (dispatch/ops/sort.go)
// computes the order, and argtopk its first k where a device has a kernel
// for it (the cpu: it selects without sorting the whole line); the values are
// x.Gather(dim, indices), so their gradient is Gather's (a scatter-add of
// the upstream gradient back to where each value came from) and second
// derivatives work. Every result follows torch 1.13: NaN sorts above
// every number, NaNs and ±0 compare equal and keep their order, indices
// are Int64 on every device.

// ArgSort is the permutation that sorts x along dim (negative counts from
// the end; a 0-d tensor takes 0 or -1), as Int64 indices of x's shape:
// torch.argsort(x, dim, descending, stable=True). The sort is stable in
// both directions: equal elements keep their original order. NaN counts as
// larger than any number (first when descending, last when ascending), and
// -0 equals +0. It takes every dtype, bool too (false before true). A dim
// out of range is ErrIndex.
func (x *Tensor) ArgSort(dim int, descending bool) *Tensor {
	return apply(ops.ArgSort, ops.SortDim{Dim: dim, Descending: descending}, x)
}

// Sort sorts x along dim and returns the sorted values and the Int64
// indices of each in x, as torch.sort(x, dim, descending, stable=True)
// (ArgSort says the order). values is x.Gather(dim, indices), so
// gradients flow back to x through it, to any order.
func (x *Tensor) Sort(dim int, descending bool) (values, indices *Tensor) {
	const op = "sort"
	if err := x.check(op); err != nil {
		return failed(err), failed(err)
	}
	indices = relabel(x.ArgSort(dim, descending), op)
	if err := indices.Err(); err != nil {
		return failed(err), indices
	}
	values = relabel(x.Gather(dim, indices), op)
	return values, callersIndices(values, indices)
}

// callersIndices is indices as a handle of the caller's own, to keep or
// release: values' gather keeps the one it was given for the backward
// pass (released with values' graph), as torch keeps a tensor saved for
// backward alive. Releasing the indices that Sort, TopK or MaxDim
// returned made the backward of values fail.
func callersIndices(values, indices *Tensor) *Tensor {
	if values.err != nil {
		return indices
	}
	mine := indices.alias()
	ReleaseWithGraph(values, indices)
	return mine
}

// TopK returns the k largest elements of x along dim (the k smallest when
// largest is false) in order, largest first (smallest first), and their
// Int64 indices: torch.topk(x, k, dim, largest, sorted=True). NaN counts as
// the largest value. The result's dim has size k.
//
// Ties: lathe returns tied elements in their original order (the first k
// of a stable sort). torch 1.13's topk does not specify the order of ties
// and its cpu kernel returns them in another (partial-sort) order, so the
// values always match torch's and the indices match wherever the chosen
// values are distinct.
//
// k outside [0, size of dim] is ErrValue (torch: "selected index k out of
// range"); a 0-d tensor takes k 0 or 1 and returns itself, as torch does;
// bool x is ErrDType (torch has no topk for bool); a dim out of range is
// ErrIndex. values is x.Gather(dim, indices), so gradients flow back to
// x, to any order.
func (x *Tensor) TopK(k, dim int, largest bool) (values, indices *Tensor) {
	const op = "topk"
	if err := x.check(op); err != nil {
		return failed(err), failed(err)
	}
	if x.t.DType == Bool {
		err := errorf(op, ErrDType, "x", "is bool but topk takes numbers (torch has no topk for bool)",
			"cast it with .Cast(lathe.Int32) first")
		return failed(err), failed(err)
	}
	d, err := sortDim(op, dim, x.t.Rank())
	if err != nil {
		return failed(err), failed(err)
	}
	n := 1
	if x.t.Rank() > 0 {
		n = x.t.Shape[d]
	}
	if k < 0 || k > n {
		err := errorf(op, ErrValue, "k", "is "+strconv.Itoa(k)+" but dim "+strconv.Itoa(dim)+" of x (shape "+
			dispatch.FormatShape(x.t.Shape)+") has "+strconv.Itoa(n)+" elements",
			"use a k in [0, "+strconv.Itoa(n)+"]")
		return failed(err), failed(err)
	}
	indices = relabel(x.argTopK(d, k, n, largest), op)
	if err := indices.Err(); err != nil {
		return failed(err), indices
	}
	values = relabel(x.Gather(d, indices), op)
	return values, callersIndices(values, indices)
}

// argTopK is the first k of x's stable argsort along dim d of n elements:
// the argtopk kernel where x's device has one for its dtype (it selects
// without sorting the whole line), else argsort's result narrowed.
func (x *Tensor) argTopK(d, k, n int, largest bool) *Tensor {
	if x.t.Rank() > 0 && k < n && ops.ArgTopK.KernelDTypes(x.t.Device.Kind).Has(x.t.DType) {
		return apply(ops.ArgTopK, ops.TopKDim{Dim: d, K: k, Largest: largest}, x)
	}
	all := x.ArgSort(d, largest)
	if x.t.Rank() == 0 || k == n || all.Err() != nil {
		return all
	}
	// A copy, so that the full permutation's memory goes back now.
	defer all.Release()
	return all.Narrow(d, 0, k).Contiguous()
}

// MaxDim returns the largest value of x along dim and its Int64 index, as
// torch.max(x, dim, keepdim): the index is ArgMax's (the first maximum;
// a NaN is larger than any number, so the first NaN wins) and the value is
// x gathered there, so that its gradient goes to that one element. With
// keepDim the dim stays as size 1. An empty dim is ErrShape and a dim out
// of range ErrIndex, as in torch; bool x is compared as 0 and 1.
func (x *Tensor) MaxDim(dim int, keepDim bool) (values, indices *Tensor) {
	return x.extremeDim("max", (*Tensor).ArgMaxKeepDim, dim, keepDim)
}

// MinDim is MaxDim for the smallest value, as torch.min(x, dim, keepdim):
// the first minimum, or the first NaN.
func (x *Tensor) MinDim(dim int, keepDim bool) (values, indices *Tensor) {
	return x.extremeDim("min", (*Tensor).ArgMinKeepDim, dim, keepDim)
}

func (x *Tensor) extremeDim(op string, arg func(*Tensor, int) *Tensor, dim int, keep bool) (values, indices *Tensor) {
	if err := x.check(op); err != nil {
		return failed(err), failed(err)
	}
	d, err := sortDim(op, dim, x.t.Rank())
	if err != nil {
		return failed(err), failed(err)
	}
	keys := x
	if x.t.DType == Bool {
		keys = x.Cast(Int32) // argmax takes numbers; false < true as 0 < 1
		defer keys.Release()
	}
	idx := relabel(arg(keys, d), op)
	if err := idx.Err(); err != nil {
		return failed(err), idx
	}
	values = relabel(x.Gather(d, idx), op)
	if keep || x.t.Rank() == 0 {
		return values, callersIndices(values, idx)
	}
	// idx stays alive: the tape's gather holds it for the backward pass.
	return values.Squeeze(d), idx.Squeeze(d)
}

// sortDim is dim counted from the front, or the ErrIndex of op that names
// the caller's line.
func sortDim(op string, dim, rank int) (int, error) {
	d, err := ops.NormDim(dim, rank, "dim")
	if e, ok := err.(*dispatch.Error); ok {
		c := *e
		c.Op, c.Site = op, dispatch.CallSite()
		return 0, &c
	}
	return d, err
}
