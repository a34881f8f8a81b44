package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Order statistics: median, kthvalue and quantile, built on the stable
// ArgSort (NaN sorts last, ties keep their order) and gathers, so that each
// runs on every device and its gradient goes back through the gather to
// the element chosen, as torch's value_selecting_reduction_backward; the
// whole tensor's median spreads it over the elements equal to the result
// instead, as torch's evenly_distribute_backward. NaN propagates as in
// torch: a line that holds one has median and quantile NaN, and the index
// of its first NaN.

var opMedian = composite("median", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	x := in[0]
	flat := x.Reshape(-1)
	n := flat.t.Shape[0]
	if n == 0 { // NaN from x, so that it is on x's graph (floats only: checked)
		return flat.Sum().MulScalar(math.NaN())
	}
	sorted, _ := flat.Sort(0, false)
	m := sorted.Narrow(0, (n-1)/2, 1).Reshape()
	if !x.t.DType.IsFloat() {
		return m
	}
	m = Where(flat.IsNaN().Any(), x.scalarLike("median", math.NaN()), m)
	if !x.RequiresGrad() {
		return m
	}
	// The gradient, evenly over the elements equal to the median (the NaNs
	// where it is NaN): mask/count, through sums whose value is the median
	// itself (its infinity or NaN) or, where it is finite, exactly 0 added
	// to it, since x - x is 0 for every element equal to it.
	md := m.joined(m.Detach())
	mask := flat.Eq(md).LogicalOr(flat.IsNaN())
	count := mask.Cast(x.t.DType).Sum()
	xd := flat.joined(flat.Detach())
	zero := x.scalarLike("median", 0)
	same := Where(mask, flat.Sub(xd), zero).Div(count).Sum()
	whole := Where(mask, flat, zero).Div(count).Sum()
	return Where(md.IsFinite(), md.Add(same), whole)
})

// Median is the median of all of x's elements, as torch.median(x): the
// lower of the two middle values for an even count, NaN where x holds a
// NaN, NaN for an empty float x (an empty integer x, whose median torch
// makes up, is ErrShape). Its gradient is spread evenly over the elements
// equal to it, as torch's. Bool is ErrDType.
func (x *Tensor) Median() *Tensor {
	const op = "median"
	if err := x.orderDType(op); err != nil {
		return failed(err)
	}
	if x.t.Numel() == 0 && !x.t.DType.IsFloat() {
		return failed(errorf(op, ErrShape, "x", "is empty, and an integer tensor has no value for the median of nothing",
			"give a nonempty tensor, or a float one (its median of nothing is NaN)"))
	}
	return apply(opMedian, none, x)
}

// orderDType refuses a failed x or a bool one, which torch does not order.
func (x *Tensor) orderDType(op string) error {
	if err := x.check(op); err != nil {
		return err
	}
	if x.t.DType == Bool {
		return errorf(op, ErrDType, "x", "is bool but "+op+" takes numbers (torch has no "+op+" for bool)",
			"cast it with .Cast(lathe.Int32) first")
	}
	return nil
}

// MedianDim returns the median of x along dim (the lower middle value) and
// its Int64 index, as torch.median(x, dim, keepdim): a line with a NaN
// gives NaN and the index of its first NaN. With ties the index is that
// of the median's place in a stable sort (torch does not say which of
// tied elements it returns). The value is x gathered there, so the
// gradient goes to that element. With keepDim the dim stays as size 1. An
// empty dim and a dim out of range are ErrIndex, bool x ErrDType.
func (x *Tensor) MedianDim(dim int, keepDim bool) (values, indices *Tensor) {
	return x.orderStat("median", dim, keepDim, 0)
}

// Kthvalue returns the k-th smallest element of x along dim (k from 1) and
// its Int64 index, as torch.kthvalue(x, k, dim, keepdim): NaN counts as
// larger than any number, and ties keep their order. The value is x
// gathered there, so the gradient goes to that element. k outside [1, size
// of dim] is ErrValue, a dim out of range ErrIndex, bool x ErrDType.
func (x *Tensor) Kthvalue(k, dim int, keepDim bool) (values, indices *Tensor) {
	if k < 1 {
		err := errorf("kthvalue", ErrValue, "k", "is "+strconv.Itoa(k)+" but counts from 1", "use a k in [1, size of dim]")
		return failed(err), failed(err)
	}
	return x.orderStat("kthvalue", dim, keepDim, k)
}

// orderStat is MedianDim (k 0) and Kthvalue.
func (x *Tensor) orderStat(op string, dim int, keep bool, k int) (values, indices *Tensor) {
	fail := func(err error) (*Tensor, *Tensor) { return failed(err), failed(err) }
	if err := x.orderDType(op); err != nil {
		return fail(err)
	}
	d, err := sortDim(op, dim, x.t.Rank())
	if err != nil {
		return fail(err)
	}
	if x.t.Rank() == 0 { // one element: a line of 1, as torch takes it
		v, i := x.Reshape(1).orderStat(op, 0, true, k)
		if v.err != nil {
			return v, i
		}
		values = relabel(v.Reshape(), op)
		ReleaseWithGraph(values, v)
		indices = i.Reshape()
		i.Release()
		return values, indices
	}
	n := x.t.Shape[d]
	switch {
	case n == 0: // torch's "expected reduction dim to have non-zero size", for kthvalue too
		return fail(errorf(op, ErrIndex, "dim", "is dim "+strconv.Itoa(d)+" of shape "+dispatch.FormatShape(x.t.Shape)+
			", which is empty: there is no "+op+" of nothing", "reduce a dim of size 1 or more"))
	case k > n:
		return fail(errorf(op, ErrValue, "k", "is "+strconv.Itoa(k)+" but dim "+strconv.Itoa(dim)+" of x (shape "+
			dispatch.FormatShape(x.t.Shape)+") has "+strconv.Itoa(n)+" elements", "use a k in [1, "+strconv.Itoa(n)+"]"))
	}
	// The index needs no gradient: it is computed from x detached, its
	// intermediates released as it returns.
	det := x.Detach()
	idx := relabel(Compose(func(a []*Tensor) *Tensor { return orderIndex(a[0], d, n, k) }, det), op)
	det.Release()
	if err := idx.Err(); err != nil {
		return failed(err), idx
	}
	values = relabel(x.Gather(d, idx), op)
	if keep {
		return values, callersIndices(values, idx)
	}
	// The gathered values and idx, which the tape's gather holds for the
	// backward pass, go with the squeezed values' graph (or at once); the
	// caller's indices are a view of idx of their own.
	out, outIdx := values.Squeeze(d), idx.Squeeze(d)
	ReleaseWithGraph(out, values, idx)
	return out, outIdx
}

// orderIndex is the Int64 index along d (kept as size 1) of the k-th
// smallest element of each line of n, or of its lower median where k is 0
// (its first NaN where it has one).
func orderIndex(x *Tensor, d, n, k int) *Tensor {
	order := x.ArgSort(d, false)
	if k > 0 {
		return order.Narrow(d, k-1, 1)
	}
	if !x.t.DType.IsFloat() {
		return order.Narrow(d, (n-1)/2, 1)
	}
	// A line with NaNs: its first NaN sorts to n - (number of NaNs).
	nans := x.IsNaN().SumKeepDim(d) // int64
	pos := Where(nans.GtScalar(0), nans.MulScalar(-1).AddScalar(float64(n)), nans.scalarLike("median", float64((n-1)/2)))
	return order.Gather(d, pos)
}

// quantileMaxLine is the most elements quantile takes along a line, as
// torch's.
const quantileMaxLine = 1 << 24

// quantileAttrs are quantile's: q, the interpolation, the dim (all dims
// flattened where all is set), and whether the reduced dims stay.
type quantileAttrs struct {
	q             float64
	interpolation string
	dim           int
	all, keep     bool
}

var opQuantile = composite("quantile", []string{"x"}, func(in []*Tensor, a quantileAttrs) *Tensor {
	x := in[0]
	rank := x.t.Rank()
	y, d := x, a.dim
	if a.all || rank == 0 {
		y, d = x.Reshape(-1), 0
	}
	n := y.t.Shape[d]
	sorted, _ := y.Sort(d, false)
	// The rank q·(n-1) in x's dtype, as torch computes it (q is a tensor
	// of x's dtype there).
	r := a.q * float64(n-1)
	if x.t.DType == Float32 {
		r = float64(float32(a.q) * float32(n-1))
	}
	lo, hi := math.Floor(r), math.Ceil(r)
	// A line with a NaN takes its last element (a NaN: NaN sorts last),
	// as torch sets its rank to n-1.
	hasNaN := y.IsNaN().AnyKeepDim(d)
	last := sorted.Narrow(d, n-1, 1)
	at := func(i float64) *Tensor { return Where(hasNaN, last, sorted.Narrow(d, int(i), 1)) }
	var out *Tensor
	switch a.interpolation {
	case "lower":
		out = at(lo)
	case "higher":
		out = at(hi)
	case "nearest":
		out = at(math.RoundToEven(r))
	case "midpoint":
		out = at(lo).LerpScalar(at(hi), 0.5)
	default: // linear
		out = at(lo).LerpScalar(at(hi), r-lo) // exact: r and lo share r's dtype
	}
	return reducedTo(out, rank, d, a.all, a.keep)
})

// reducedTo is out, the quantiles along dim d (of x, or of x flattened
// for all of it) with that dim kept as size 1, in the reduction's shape:
// 0-d for all of x, or ones of x's rank with keep; without dim d; or as it
// is with keep.
func reducedTo(out *Tensor, rank, d int, all, keep bool) *Tensor {
	switch {
	case rank == 0 || (all && !keep):
		return out.Reshape()
	case all:
		ones := make([]int, rank)
		for i := range ones {
			ones[i] = 1
		}
		return out.Reshape(ones...)
	case !keep:
		return out.Squeeze(d)
	}
	return out
}

// Quantile is the q-th quantile of x over dims, as torch.quantile(x, q,
// dim, keepdim=False, interpolation): with no dims over all of x's
// elements (a 0-d result), with one along that dim. Between the two
// elements of the sorted line whose places bracket q·(n-1), interpolation
// "linear" (torch's default) interpolates, "lower" and "higher" take one,
// "midpoint" their mean and "nearest" the nearer (half to even). A line
// with a NaN gives NaN. Float32 and float64 only, as torch's; q outside
// [0, 1] (or NaN), another interpolation or more than one dim is
// ErrValue, an empty x ErrShape, a dim out of range ErrIndex. The
// gradient goes back to the one or two elements used.
func (x *Tensor) Quantile(q float64, interpolation string, dims ...int) *Tensor {
	return x.quantile(q, interpolation, false, dims)
}

// QuantileKeepDim is Quantile keeping the reduced dims as size 1.
func (x *Tensor) QuantileKeepDim(q float64, interpolation string, dims ...int) *Tensor {
	return x.quantile(q, interpolation, true, dims)
}

func (x *Tensor) quantile(q float64, interpolation string, keep bool, dims []int) *Tensor {
	const op = "quantile"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if dt := x.t.DType; dt != Float32 && dt != Float64 {
		return failed(errorf(op, ErrDType, "x", "is "+dt.String()+" but quantile takes float32 or float64, as torch's",
			"cast it with .Cast(lathe.Float32) first"))
	}
	if !(q >= 0 && q <= 1) {
		return failed(errorf(op, ErrValue, "q", "is "+ftoa(q)+", outside [0, 1]", "give a q in [0, 1] (0.5 is the median)"))
	}
	switch interpolation {
	case "linear", "lower", "higher", "midpoint", "nearest":
	default:
		return failed(errorf(op, ErrValue, "interpolation", "is "+strconv.Quote(interpolation),
			`use "linear", "lower", "higher", "midpoint" or "nearest"`))
	}
	a := quantileAttrs{q: q, interpolation: interpolation, keep: keep, all: len(dims) == 0}
	switch len(dims) {
	case 0:
	case 1:
		d, err := ops.NormDim(dims[0], x.t.Rank(), "dims")
		if err != nil {
			return failed(located(err, op))
		}
		a.dim = d
	default:
		return failed(errorf(op, ErrValue, "dims", "has "+strconv.Itoa(len(dims))+" dims", "pass none (all elements) or one"))
	}
	if x.t.Numel() == 0 {
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+", with no elements",
			"give a nonempty tensor, as torch requires"))
	}
	// torch refuses lines of more than 2^24 elements ("quantile() input
	// tensor is too large"): past that, the rank q·(n-1) in float32 is
	// not exact and can round to n, past the line's end.
	n := x.t.Numel()
	if !a.all && x.t.Rank() > 0 {
		n = x.t.Shape[a.dim]
	}
	if n > quantileMaxLine {
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+", a line of "+strconv.Itoa(n)+
			" elements to take the quantile of, more than the 2^24 (16777216) that torch's quantile takes",
			"take it over shorter lines (a dim, or a sample of the elements)"))
	}
	return apply(opQuantile, a, x)
}
