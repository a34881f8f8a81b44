package lathe

import (
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Searching and counting: searchsorted, bucketize, bincount and histc,
// composites of gathers, comparisons, where and scatter_add, so that each
// runs on every device.
//
// searchsorted is a binary search done on every value at once (binary
// lifting): ceil(log2(m+1)) rounds, each of which gathers one boundary per
// value and moves its position on where the boundary is below it, so a
// search of k values among m boundaries takes O(k log m) work and, its
// rounds' results living until the composite ends, O(k log m) memory.
// bincount and histc add ones (or weights) into their bins with
// scatter_add: O(n) work and memory, but they read x's extremes back to
// the host first (one sync), to size the result or to find the range.

// SearchOption is an option of SearchSorted.
type SearchOption func(*searchOptions)

type searchOptions struct {
	right, outInt32 bool
	side            string
	sorter          *Tensor
}

// SearchRight makes SearchSorted return the last place each value could
// go (past equal boundaries), as torch's right=True.
func SearchRight() SearchOption { return func(o *searchOptions) { o.right = true } }

// SearchSide is torch's side: "left" (the default) or "right", as
// SearchRight. Together with SearchRight, side "left" is ErrValue, as in
// torch.
func SearchSide(side string) SearchOption { return func(o *searchOptions) { o.side = side } }

// SearchOutInt32 makes SearchSorted's result Int32, as torch's
// out_int32=True.
func SearchOutInt32() SearchOption { return func(o *searchOptions) { o.outInt32 = true } }

// SearchSorter gives SearchSorted the Int64 indices that sort its
// sequence along its last dim (as ArgSort's), as torch's sorter: the
// sequence need not be sorted itself. A nil sorter is none.
func SearchSorter(sorter *Tensor) SearchOption { return func(o *searchOptions) { o.sorter = sorter } }

// searchAttrs are the attributes of the search: the side, the result's
// dtype and the dtype the two compare in.
type searchAttrs struct {
	right    bool
	out, cmp DType
}

func searchOp(variant string, args []string) *dispatch.Op[searchAttrs] {
	return compositeVariant("searchsorted", variant, args, func(in []*Tensor, a searchAttrs) *Tensor {
		b := in[0]
		if len(in) == 3 {
			b = b.Gather(-1, in[2])
		}
		return searchSorted(b, in[1], a)
	})
}

var (
	opSearchSorted       = searchOp("", []string{"sorted_sequence", "values"})
	opSearchSortedSorter = withSorterCheck(searchOp("sorter", []string{"sorted_sequence", "values", "sorter"}))
)

// withSorterCheck gives searchsorted's sorter form its value check: every
// index of the sorter lies along the sequence's last dim. It runs where
// the sorter is (at once on the cpu, at the next read-back on a GPU), and
// comes before the gather's own, which the result's read then reports
// with it, so that the error names the sorter on every device.
func withSorterCheck(op *dispatch.Op[searchAttrs]) *dispatch.Op[searchAttrs] {
	op.Checks = func(in []*dispatch.Tensor, _ searchAttrs) []dispatch.ValueCheck {
		b := in[0]
		if b.Rank() == 0 {
			return nil // the composite reports it
		}
		m := b.Shape[b.Rank()-1]
		return []dispatch.ValueCheck{{Arg: 2, Max: int64(m) - 1, Fail: func(v int64) *dispatch.Error {
			e := ops.IndexError("sorter", v, b.Rank()-1, m)
			e.Fix = "give the indices that sort sorted_sequence along its last dim (ArgSort(-1, false))"
			return e
		}}}
	}
	return op
}

// searchSorted is the number of leading elements of each line of b that
// are below each value of v (at most it, where a.right), by binary
// lifting: lo grows by each power of two that keeps the element before it
// below the value. Where a value is NaN no boundary is at least it, so it
// goes last, as in torch's search.
func searchSorted(b, v *Tensor, a searchAttrs) *Tensor {
	b, v = b.Cast(a.cmp), v.Cast(a.cmp)
	q := v
	if b.err == nil && b.t.Rank() == 1 {
		q = v.Reshape(-1)
	}
	for _, t := range []*Tensor{b, q} {
		if t.err != nil {
			return t
		}
	}
	m := b.t.Shape[b.t.Rank()-1]
	lo := q.joined(full("searchsorted", q.t.Device, Int64, 0, q.t.Shape))
	if m > 0 {
		for p := 1 << (bits.Len(uint(m)) - 1); p >= 1; p /= 2 {
			next := lo.AddScalar(float64(p))
			at := b.Gather(-1, next.MinimumScalar(float64(m)).SubScalar(1))
			var below *Tensor
			if a.right {
				below = at.Gt(q).LogicalNot()
			} else {
				below = at.Ge(q).LogicalNot()
			}
			lo = Where(below.LogicalAnd(next.LeScalar(float64(m))), next, lo)
		}
	}
	return lo.Reshape(v.t.Shape...).Cast(a.out)
}

// SearchSorted is, for each of values, the index in sortedSequence (along
// its last dim) where it would go to keep the order: the number of
// elements below it, or with SearchRight at most it, as
// torch.searchsorted(sortedSequence, values, right, side, out_int32,
// sorter). A 1-D sortedSequence serves values of any shape; one of rank r
// serves values of rank r whose leading r-1 dims are its own, line by
// line. The result has values' shape, Int64 (Int32 with
// SearchOutInt32). The two compare in their promoted dtype; bool is
// ErrDType, as in torch. A NaN value goes last; a sequence that holds NaN
// is not sorted, and where it is not sorted the result is unspecified,
// as torch's. With SearchSorter the sequence is read in the sorter's
// order; a sorter index out of range is ErrIndex (torch reads past the
// sequence). Not differentiable (an index).
func SearchSorted(sortedSequence, values *Tensor, opts ...SearchOption) *Tensor {
	var o searchOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	a, err := checkSearch("searchsorted", sortedSequence, values, o)
	if err != nil {
		return failed(err)
	}
	b, v := sortedSequence.Detach(), values.Detach()
	defer b.Release()
	defer v.Release()
	// The result joins values' composite body where it is in one, as a
	// result of values would (b and v are handles of no body).
	if o.sorter != nil {
		return values.joined(apply(opSearchSortedSorter, a, b, v, o.sorter))
	}
	return values.joined(apply(opSearchSorted, a, b, v))
}

// Bucketize is the index of the bucket of boundaries (1-D, ascending)
// that each element of x falls in, as torch.bucketize(x, boundaries,
// out_int32, right): with right false, boundaries[i-1] < x <=
// boundaries[i]; with right true, boundaries[i-1] <= x < boundaries[i].
// It is SearchSorted(boundaries, x) with SearchRight where right is true;
// the result has x's shape, Int64 or Int32 with outInt32.
func (x *Tensor) Bucketize(boundaries *Tensor, right, outInt32 bool) *Tensor {
	const op = "bucketize"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := boundaries.CheckArg(op, "boundaries"); err != nil {
		return failed(err)
	}
	if r := boundaries.t.Rank(); r != 1 {
		return failed(errorf(op, ErrShape, "boundaries", "has rank "+strconv.Itoa(r)+" but must be 1-D, as torch's",
			"give a 1-D tensor of boundaries (SearchSorted searches lines of a tensor of higher rank)"))
	}
	a, err := checkSearch(op, boundaries, x, searchOptions{right: right, outInt32: outInt32})
	if err != nil {
		return failed(err)
	}
	b, v := boundaries.Detach(), x.Detach()
	defer b.Release()
	defer v.Release()
	return x.joined(relabel(apply(opSearchSorted, a, b, v), op))
}

// checkSearch refuses what searchsorted cannot search, naming op's
// arguments, and gives the search's attributes.
func checkSearch(op string, b, v *Tensor, o searchOptions) (searchAttrs, error) {
	var a searchAttrs
	bName, vName := "sorted_sequence", "values"
	if op == "bucketize" {
		bName, vName = "boundaries", "x"
	}
	if err := b.CheckArg(op, bName); err != nil {
		return a, err
	}
	if err := v.CheckArg(op, vName); err != nil {
		return a, err
	}
	switch o.side {
	case "", "left":
		if o.right && o.side == "left" {
			return a, errorf(op, ErrValue, "side", `is "left" but SearchRight asks for the right side`,
				`give one of them (side "right" is SearchRight)`)
		}
	case "right":
		o.right = true
	default:
		return a, errorf(op, ErrValue, "side", "is "+strconv.Quote(o.side), `use "left" or "right"`)
	}
	for _, t := range []struct {
		t    *Tensor
		name string
	}{{b, bName}, {v, vName}} {
		if t.t.t.DType == Bool {
			return a, errorf(op, ErrDType, t.name, "is bool, which torch's "+op+" does not take", "cast it with .Cast(lathe.Int32) first")
		}
	}
	if v.t.Device != b.t.Device {
		return a, errorf(op, ErrDevice, vName, "is on "+v.t.Device.String()+" but "+bName+" is on "+b.t.Device.String(),
			"move it with .To("+b.t.Device.String()+")")
	}
	rb := b.t.Rank()
	switch {
	case rb == 0:
		return a, errorf(op, ErrShape, bName, "is 0-d but must have a dim to search along", "give it a dim of boundaries (Reshape(1))")
	case rb > 1 && (v.t.Rank() != rb || !slices.Equal(v.t.Shape[:rb-1], b.t.Shape[:rb-1])):
		return a, errorf(op, ErrShape, vName, "has shape "+dispatch.FormatShape(v.t.Shape)+" but "+bName+" has "+
			dispatch.FormatShape(b.t.Shape)+": a sequence of rank above 1 needs values of its rank with its leading dims, as torch's",
			"give values of shape "+dispatch.FormatShape(append(b.t.Shape[:rb-1:rb-1], -1))+" or a 1-D sequence")
	}
	if s := o.sorter; s != nil {
		if err := s.CheckArg(op, "sorter"); err != nil {
			return a, err
		}
		switch {
		case s.t.DType != Int64:
			return a, errorf(op, ErrDType, "sorter", "is "+s.t.DType.String()+" but must be int64, as torch's", "cast it with .Cast(lathe.Int64)")
		case !slices.Equal(s.t.Shape, b.t.Shape):
			return a, errorf(op, ErrShape, "sorter", "has shape "+dispatch.FormatShape(s.t.Shape)+" but "+bName+" has "+
				dispatch.FormatShape(b.t.Shape), "give the indices that sort "+bName+" along its last dim (ArgSort(-1, false))")
		case s.t.Device != b.t.Device:
			return a, errorf(op, ErrDevice, "sorter", "is on "+s.t.Device.String()+" but "+bName+" is on "+b.t.Device.String(),
				"move it with .To("+b.t.Device.String()+")")
		}
	}
	a.right, a.out, a.cmp = o.right, Int64, dispatch.PromoteTypes(b.t.DType, v.t.DType)
	if o.outInt32 {
		a.out = Int32
		if m := b.t.Shape[rb-1]; m > math.MaxInt32 {
			return a, errorf(op, ErrValue, "out_int32", "is set but "+bName+" has "+strconv.Itoa(m)+" elements along its last dim, past int32's range",
				"leave the result Int64")
		}
	}
	return a, nil
}

// bincountAttrs are bincount's: the number of bins and the result's dtype.
type bincountAttrs struct {
	length int
	dt     DType
}

var (
	opBincount = composite("bincount", []string{"x"}, func(in []*Tensor, a bincountAttrs) *Tensor {
		x := in[0]
		ones := x.joined(full("bincount", x.t.Device, a.dt, 1, x.t.Shape))
		return x.joined(full("bincount", x.t.Device, a.dt, 0, []int{a.length})).ScatterAdd(0, x.Cast(Int64), ones)
	})
	opBincountWeights = compositeVariant("bincount", "weights", []string{"x", "weights"}, func(in []*Tensor, a bincountAttrs) *Tensor {
		x, w := in[0], in[1]
		return x.joined(full("bincount", x.t.Device, a.dt, 0, []int{a.length})).ScatterAdd(0, x.Cast(Int64), w.Cast(a.dt))
	})
)

// Bincount counts how often each value of x (1-D, of nonnegative
// integers) occurs: out[i] is the number of elements equal to i, or the
// sum of their weights where weights (nil for none; 1-D, one per element)
// is given, as torch.bincount(x, weights, minlength). The result has
// max(max(x)+1, minlength) elements: Int64 counts, Float32 sums of
// float32 weights, Float64 sums of any other weights (as torch's; a
// device without float64 refuses them). It reads x's smallest and
// largest values back (a sync). A negative value is ErrValue, float or
// bool x ErrDType, x of another rank or weights of another length
// ErrShape, a negative minlength ErrValue. Unlike torch's, the sums have
// a gradient with respect to weights (each weight gets its bin's).
func (x *Tensor) Bincount(weights *Tensor, minlength int) *Tensor {
	const op = "bincount"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	switch dt := x.t.DType; {
	case dt.IsFloat() || dt == Bool:
		return failed(errorf(op, ErrDType, "x", "is "+dt.String()+" but bincount counts integers, as torch's",
			"cast it with .Cast(lathe.Int64) first"))
	case x.t.Rank() != 1:
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" but must be 1-D, as torch's",
			"flatten it with .Reshape(-1)"))
	case minlength < 0:
		return failed(errorf(op, ErrValue, "minlength", "is "+strconv.Itoa(minlength)+" but must be at least 0", "give 0 for no least length"))
	}
	a := bincountAttrs{length: minlength, dt: Int64}
	if weights != nil {
		if err := weights.CheckArg(op, "weights"); err != nil {
			return failed(err)
		}
		switch {
		case weights.t.Device != x.t.Device:
			return failed(errorf(op, ErrDevice, "weights", "is on "+weights.t.Device.String()+" but x is on "+x.t.Device.String(),
				"move it with .To("+x.t.Device.String()+")"))
		case weights.t.Rank() != 1 || weights.t.Shape[0] != x.t.Shape[0]:
			return failed(errorf(op, ErrShape, "weights", "has shape "+dispatch.FormatShape(weights.t.Shape)+" but x has "+
				dispatch.FormatShape(x.t.Shape), "give one weight per element of x, 1-D"))
		}
		a.dt = Float64
		if weights.t.DType == Float32 {
			a.dt = Float32
		}
	}
	if n := x.t.Shape[0]; n > 0 {
		lo, hi, err := extremes(op, x)
		if err != nil {
			return failed(err)
		}
		if lo < 0 {
			return failed(errorf(op, ErrValue, "x", "holds "+ftoa(lo)+", but bincount counts nonnegative integers, as torch's",
				"count nonnegative values (subtract the least value first)"))
		}
		if hi >= 1<<50 { // past any device's memory, and past float64's exact integers soon after
			return failed(errorf(op, ErrOutOfMemory, "x", "holds "+ftoa(hi)+", so bincount would need that many bins and one more",
				"count smaller values (map them to 0, 1, ... first, e.g. with Unique's inverse)"))
		}
		a.length = max(a.length, int(hi)+1)
	}
	if weights == nil {
		return apply(opBincount, a, x)
	}
	return apply(opBincountWeights, a, x, weights)
}

// extremes reads x's smallest and largest values back, in one sync.
func extremes(op string, x *Tensor) (lo, hi float64, err error) {
	det := x.Detach()
	defer det.Release()
	both := relabel(Compose(func(a []*Tensor) *Tensor {
		x := a[0].Reshape(-1)
		if !x.t.DType.IsFloat() {
			x = x.Cast(Int64)
		}
		return Stack([]*Tensor{x.Min(), x.Max()}, 0)
	}, det), op)
	defer both.Release()
	var v []float64
	switch both.DType() {
	case Int64:
		var d []int64
		d, err = both.Int64s()
		v = convertEach(d, func(i int64) float64 { return float64(i) })
	case Float32:
		var d []float32
		d, err = both.Float32s()
		v = convertEach(d, func(f float32) float64 { return float64(f) })
	default:
		v, err = both.Float64s()
	}
	if err != nil {
		return 0, 0, err
	}
	return v[0], v[1], nil
}

// histcAttrs are histc's: the number of bins and the range, in x's dtype.
type histcAttrs struct {
	bins     int
	lo, hi   float64
	binWidth float64 // hi - lo, rounded to x's dtype as torch computes it
}

var opHistc = composite("histc", []string{"x"}, func(in []*Tensor, a histcAttrs) *Tensor {
	const op = "histc"
	x := in[0].Reshape(-1)
	if x.err != nil {
		return x
	}
	nan := x.IsNaN()
	// NaN counts in the first bin, as in torch 1.13 (whose cpu kernel
	// takes it as bin 0).
	inside := x.GeScalar(a.lo).LogicalAnd(x.LeScalar(a.hi)).LogicalOr(nan)
	// torch's (x - min)·bins/(max - min) in x's dtype, truncated; x = max
	// goes to the last bin.
	pos := x.SubScalar(a.lo).MulScalar(float64(a.bins)).DivScalar(a.binWidth)
	pos = Where(inside.LogicalAnd(nan.LogicalNot()), pos, x.scalarLike(op, 0)).Floor().MinimumScalar(float64(a.bins - 1))
	counts := x.joined(full(op, x.t.Device, x.t.DType, 0, []int{a.bins}))
	return counts.ScatterAdd(0, pos.Cast(Int64), inside.Cast(x.t.DType))
})

// Histc is the histogram of x's elements in bins equal bins over [min,
// max], as torch.histc(x, bins, min, max): Float of x's dtype, bins
// elements. Elements outside the range are not counted; max itself goes
// to the last bin; NaN counts in the first, as in torch 1.13. Where min
// equals max (torch's default, 0 and 0) the range is x's smallest and
// largest values, read back (a sync), widened by 1 each way where those
// are equal too. Float32 and float64 only, as torch's cpu (float16,
// bfloat16, integers and bool are ErrDType). bins below 1, min above max,
// or a range that is not finite (from min and max, or from x's values)
// are ErrValue. Not differentiable, as torch's.
func (x *Tensor) Histc(bins int, min, max float64) *Tensor {
	const op = "histc"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	dt := x.t.DType
	if dt != Float32 && dt != Float64 {
		return failed(errorf(op, ErrDType, "x", "is "+dt.String()+" but histc takes float32 or float64, as torch's",
			"cast it with .Cast(lathe.Float32) first"))
	}
	if bins < 1 {
		return failed(errorf(op, ErrValue, "bins", "is "+strconv.Itoa(bins)+" but must be at least 1", "give a positive number of bins"))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !finite(min) || !finite(max) {
		return failed(errorf(op, ErrValue, "min", "and max give the range ["+ftoa(min)+", "+ftoa(max)+"], which is not finite",
			"give finite bounds (equal ones take x's range)"))
	}
	if min > max {
		return failed(errorf(op, ErrValue, "max", "is "+ftoa(max)+", below min "+ftoa(min), "give max ≥ min"))
	}
	lo, hi := min, max
	if dt == Float32 {
		lo, hi = float64(float32(lo)), float64(float32(hi))
	}
	if lo == hi && x.t.Numel() > 0 {
		var err error
		if lo, hi, err = extremes(op, x); err != nil {
			return failed(err)
		}
		if !finite(lo) || !finite(hi) {
			return failed(errorf(op, ErrValue, "x", "has the range ["+ftoa(lo)+", "+ftoa(hi)+"], which is not finite, and min equals max, which asks for it",
				"give finite min and max, or take the NaN and infinities out of x"))
		}
	}
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	width := hi - lo
	if dt == Float32 {
		lo, hi = float64(float32(lo)), float64(float32(hi))
		width = float64(float32(hi) - float32(lo))
	}
	det := x.Detach()
	defer det.Release()
	return x.joined(apply(opHistc, histcAttrs{bins: bins, lo: lo, hi: hi, binWidth: width}, det))
}
