package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// More of torch's indexing ops (take, take_along_dim, index_add,
// index_copy, index_fill, scatter_reduce), each a composite of gather,
// scatter, scatter_add and index_select, so that it runs on every device
// and its gradients, to any order, are those parts' rules. Each op checks
// its index values itself, before its parts do (on the cpu at once, on a
// GPU at the next read or Synchronize), so that an index out of range is
// an ErrIndex that names the op and its index on every device. Index
// tensors are Int32 or Int64 (torch takes only int64 for most of these).

// indexDType refuses an index tensor that is not Int32 or Int64.
func indexDType(op, arg string, index *Tensor) error {
	if err := index.CheckArg(op, arg); err != nil {
		return err
	}
	if !ops.Indices.Has(index.t.DType) {
		return errorf(op, ErrDType, arg, "is "+index.t.DType.String()+" but indices are int32 or int64",
			"cast it with .Cast(lathe.Int64)")
	}
	return nil
}

// rangeCheck is the value check of argument arg (an index tensor) of an
// op: every value lies in [lo, size), lo being -size where negative
// indices wrap and 0 where they do not.
func rangeCheck(arg int, name string, size int, wraps bool, what string) []dispatch.ValueCheck {
	lo := int64(0)
	if wraps {
		lo = -int64(size)
	}
	return []dispatch.ValueCheck{{Arg: arg, Min: lo, Max: int64(size) - 1, Fail: func(v int64) *dispatch.Error {
		fix := "use indices in [0, " + strconv.Itoa(size) + "); negative indices do not wrap here, as in torch"
		if wraps {
			fix = "use indices in [" + strconv.FormatInt(lo, 10) + ", " + strconv.Itoa(size) + "); negative ones count from the end"
		}
		if size == 0 {
			fix = "give no index: " + what + " is empty"
		}
		return &dispatch.Error{Kind: dispatch.ErrIndex, Arg: name, Found: strconv.FormatInt(v, 10),
			Detail: "holds " + strconv.FormatInt(v, 10) + ", out of range for " + what + " of size " + strconv.Itoa(size), Fix: fix}
	}}}
}

// roomFor refuses a result of shape that the device cannot hold, before
// a composite's value check walks an index of that many (maybe expanded)
// elements: a kernel op allocates its output first for that reason. Small
// results skip the trial allocation.
func roomFor(op string, dev Device, dt DType, shape []int) error {
	n, ok := dispatch.CheckedNumel(shape)
	if !ok {
		return located(dispatch.ShapeError("", shape), op)
	}
	if n < 1<<20 {
		return nil
	}
	room, err := dispatch.Empty(dev, dt, shape)
	if err != nil {
		return located(err, op)
	}
	room.Release()
	return nil
}

// wrapNegative is index with size added to its negative values (in int64
// where int32 could not hold the sum).
func wrapNegative(index *Tensor, size int) *Tensor {
	if size > math.MaxInt32 && index.t.DType == Int32 {
		index = index.Cast(Int64)
	}
	return Where(index.LtScalar(0), index.AddScalar(float64(size)), index)
}

var opTake = composite("take", []string{"x", "index"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	x, index := in[0], in[1]
	idx := wrapNegative(index.Reshape(-1), x.t.Numel())
	return x.Reshape(-1).IndexSelect(0, idx).Reshape(index.t.Shape...)
})

func init() {
	opTake.Checks = func(in []*dispatch.Tensor, _ dispatch.None) []dispatch.ValueCheck {
		if !ops.Indices.Has(in[1].DType) {
			return nil
		}
		return rangeCheck(1, "index", in[0].Numel(), true, "x's elements")
	}
}

// Take reads x as if it were 1-D (row-major) at index, of any shape, as
// torch.take: the result has index's shape and x's dtype. Negative
// indices count from the end; one outside [-numel, numel) is ErrIndex.
// index may be Int32 as well as Int64 (torch takes only int64). The
// gradient adds into x's shape, repeated indices accumulating.
func (x *Tensor) Take(index *Tensor) *Tensor {
	const op = "take"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := indexDType(op, "index", index); err != nil {
		return failed(err)
	}
	if err := roomFor(op, x.t.Device, x.t.DType, index.t.Shape); err != nil {
		return failed(err)
	}
	return apply(opTake, none, x, index)
}

// takeAlongAttrs are take_along_dim's: the dim, and the shapes x and the
// index broadcast to (none in the flat form).
type takeAlongAttrs struct {
	dim            int
	xShape, iShape []int
	flat           bool
}

var (
	opTakeAlongDim = composite("take_along_dim", []string{"x", "index"}, func(in []*Tensor, a takeAlongAttrs) *Tensor {
		return in[0].Expand(a.xShape...).Gather(a.dim, in[1].Expand(a.iShape...))
	})
	opTakeAlongFlat = compositeVariant("take_along_dim", "flat", []string{"x", "index"}, func(in []*Tensor, a takeAlongAttrs) *Tensor {
		return in[0].Reshape(-1).Gather(0, in[1].Reshape(-1))
	})
)

func init() {
	opTakeAlongDim.Checks = func(in []*dispatch.Tensor, a takeAlongAttrs) []dispatch.ValueCheck {
		return rangeCheck(1, "index", in[0].Shape[a.dim], false, "dim "+strconv.Itoa(a.dim)+" of x")
	}
	opTakeAlongFlat.Checks = func(in []*dispatch.Tensor, a takeAlongAttrs) []dispatch.ValueCheck {
		return rangeCheck(1, "index", in[0].Numel(), false, "x's elements")
	}
}

// TakeAlongDim picks values of x along dim at index, as
// torch.take_along_dim(x, index, dim): x and index have one rank and
// broadcast in every dim but dim (x keeps its size there, index its), and
// the result is x gathered along dim at index, of the broadcast shape with
// index's size along dim. With no dim, x and index are read flattened, as
// torch's dim=None: the result is 1-D, x.Reshape(-1).Gather(0,
// index.Reshape(-1)). Indices do not wrap (as torch's gather): one outside
// [0, size) is ErrIndex; more than one dim is ErrValue. index may be Int32
// as well as Int64 (torch takes only int64). The gradient adds into x.
func (x *Tensor) TakeAlongDim(index *Tensor, dim ...int) *Tensor {
	const op = "take_along_dim"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := indexDType(op, "index", index); err != nil {
		return failed(err)
	}
	switch len(dim) {
	case 0:
		if err := roomFor(op, x.t.Device, x.t.DType, index.t.Shape); err != nil {
			return failed(err)
		}
		return apply(opTakeAlongFlat, takeAlongAttrs{flat: true}, x, index)
	case 1:
	default:
		return failed(errorf(op, ErrValue, "dim", "has "+strconv.Itoa(len(dim))+" dims", "pass one dim, or none to take from x flattened"))
	}
	r := x.t.Rank()
	if r == 0 {
		return failed(errorf(op, ErrIndex, "dim", "is "+strconv.Itoa(dim[0])+" but x is 0-d", "give x a dim first, e.g. with Reshape(1), or pass no dim"))
	}
	if ir := index.t.Rank(); ir != r {
		return failed(errorf(op, ErrShape, "index", "has rank "+strconv.Itoa(ir)+" but x has rank "+strconv.Itoa(r),
			"give index as many dims as x, e.g. with Unsqueeze"))
	}
	d, err := ops.NormDim(dim[0], r, "dim")
	if err != nil {
		return failed(located(err, op))
	}
	xs := append([]int(nil), x.t.Shape...)
	xs[d] = index.t.Shape[d]
	is, ok := ops.BroadcastShapes(xs, index.t.Shape)
	if !ok {
		return failed(errorf(op, ErrShape, "index", "has shape "+dispatch.FormatShape(index.t.Shape)+", which does not broadcast with x's "+
			dispatch.FormatShape(x.t.Shape)+" off dim "+strconv.Itoa(d), "make each dim but dim equal or 1"))
	}
	xb := append([]int(nil), is...)
	xb[d] = x.t.Shape[d]
	if err := roomFor(op, x.t.Device, x.t.DType, is); err != nil {
		return failed(err)
	}
	return apply(opTakeAlongDim, takeAlongAttrs{dim: d, xShape: xb, iShape: is}, x, index)
}

// alongAttrs are the attributes of index_add, index_copy and index_fill:
// the dim (normalised; 0 for a 0-d x), alpha and the fill value.
type alongAttrs struct {
	dim          int
	alpha, value float64
}

// alongIndex is the 1-D index laid along dim d of shape (a view, expanded)
// for scatter and scatter_add.
func alongIndex(index *Tensor, d int, shape []int) *Tensor {
	view := make([]int, len(shape))
	for i := range view {
		view[i] = 1
	}
	view[d] = index.t.Numel()
	return index.Reshape(view...).Expand(shape...)
}

// alongBody runs f on x and source seen as 1-D where x is 0-d (torch's
// rule for these ops), and reshapes the result back.
func alongBody(x, source *Tensor, f func(x, source *Tensor) *Tensor) *Tensor {
	if x.t.Rank() > 0 {
		return f(x, source)
	}
	if source != nil {
		source = source.Reshape(-1)
	}
	return f(x.Reshape(1), source).Reshape()
}

var (
	opIndexAdd = composite("index_add", []string{"x", "index", "source"}, func(in []*Tensor, a alongAttrs) *Tensor {
		return alongBody(in[0], in[2], func(x, src *Tensor) *Tensor {
			if a.alpha != 1 {
				src = src.MulScalar(a.alpha)
			}
			return x.ScatterAdd(a.dim, alongIndex(in[1], a.dim, src.t.Shape), src)
		})
	})
	opIndexCopy = composite("index_copy", []string{"x", "index", "source"}, func(in []*Tensor, a alongAttrs) *Tensor {
		return alongBody(in[0], in[2], func(x, src *Tensor) *Tensor {
			return x.Scatter(a.dim, alongIndex(in[1], a.dim, src.t.Shape), src)
		})
	})
	opIndexFill = composite("index_fill", []string{"x", "index"}, func(in []*Tensor, a alongAttrs) *Tensor {
		return alongBody(in[0], nil, func(x, _ *Tensor) *Tensor {
			idx := wrapNegative(in[1].Reshape(-1), x.t.Shape[a.dim])
			shape := append([]int(nil), x.t.Shape...)
			shape[a.dim] = idx.t.Numel()
			v := x.scalarLike("index_fill", a.value).Expand(shape...)
			return x.Scatter(a.dim, alongIndex(idx, a.dim, shape), v)
		})
	})
)

func init() {
	for _, o := range []*dispatch.Op[alongAttrs]{opIndexAdd, opIndexCopy, opIndexFill} {
		wraps := o == opIndexFill
		o.Checks = func(in []*dispatch.Tensor, a alongAttrs) []dispatch.ValueCheck {
			size := 1
			if in[0].Rank() > 0 {
				size = in[0].Shape[a.dim]
			}
			return rangeCheck(1, "index", size, wraps, "dim "+strconv.Itoa(a.dim)+" of x")
		}
	}
}

// alongArgs checks x, the 1-D (or 0-d) index and, unless nil, source of
// index_add, index_copy and index_fill, and returns the dim normalised.
// source must have x's dtype and shape but along dim, where it has one
// element per index (torch's rule; torch's cpu also broadcasts a smaller
// source, which lathe refuses).
func (x *Tensor) alongArgs(op string, dim int, index, source *Tensor, withSource bool) (int, error) {
	if err := x.check(op); err != nil {
		return 0, err
	}
	if err := indexDType(op, "index", index); err != nil {
		return 0, err
	}
	if r := index.t.Rank(); r > 1 {
		return 0, errorf(op, ErrShape, "index", "has shape "+dispatch.FormatShape(index.t.Shape)+" but must be 1-D or 0-d",
			"flatten it with .Flatten()")
	}
	d, err := ops.NormDim(dim, x.t.Rank(), "dim")
	if err != nil {
		return 0, located(err, op)
	}
	if !withSource {
		return d, nil
	}
	if err := source.CheckArg(op, "source"); err != nil {
		return 0, err
	}
	if source.t.DType != x.t.DType {
		return 0, errorf(op, ErrDType, "source", "is "+source.t.DType.String()+" but x is "+x.t.DType.String()+" (torch does not promote here)",
			"cast it with .Cast("+x.t.DType.GoString()+")")
	}
	n := index.t.Numel()
	var ok bool
	if x.t.Rank() == 0 {
		ok = source.t.Rank() <= 1 && source.t.Numel() == n
	} else {
		want := append([]int(nil), x.t.Shape...)
		want[d] = n
		ok = dispatch.FormatShape(want) == dispatch.FormatShape(source.t.Shape)
	}
	if !ok {
		e := errorf(op, ErrShape, "source", "has shape "+dispatch.FormatShape(source.t.Shape)+" but x has "+dispatch.FormatShape(x.t.Shape)+
			" and index "+strconv.Itoa(n)+" elements", "give source x's shape with dim "+strconv.Itoa(d)+" of size "+strconv.Itoa(n))
		return 0, e
	}
	return d, nil
}

// IndexAdd is x with alpha·source added along dim at index, as
// torch.index_add(x, dim, index, source, alpha=alpha): out[..., index[i],
// ...] += alpha·source[..., i, ...], repeated indices adding up. index is
// 1-D (or 0-d); source has x's dtype and shape but along dim, where it has
// len(index) elements. Indices do not wrap (as torch's): one outside [0,
// size) is ErrIndex. An integer x takes an integral alpha (torch truncates
// a fraction; lathe refuses it), a bool x only alpha 1 (adding is logical
// or). Gradients: x's passes through, source's is alpha times the
// gradient read at index.
func (x *Tensor) IndexAdd(dim int, index, source *Tensor, alpha float64) *Tensor {
	const op = "index_add"
	d, err := x.alongArgs(op, dim, index, source, true)
	if err != nil {
		return failed(err)
	}
	switch dt := x.t.DType; {
	case dt == Bool && alpha != 1:
		return failed(errorf(op, ErrValue, "alpha", "is "+strconv.FormatFloat(alpha, 'g', -1, 64)+" but x is bool, where adding is logical or",
			"use alpha 1, or cast x to a number dtype"))
	case dt != Bool:
		if err := ops.CheckScalar(dt, alpha, "alpha"); err != nil {
			return failed(located(err, op))
		}
	}
	return apply(opIndexAdd, alongAttrs{dim: d, alpha: alpha}, x, index, source)
}

// IndexCopy is x with source's slices copied along dim to index, as
// torch.index_copy(x, dim, index, source): out[..., index[i], ...] =
// source[..., i, ...]. index and source are as IndexAdd's. Where an index
// repeats, one of the slices written there is the result (torch leaves
// which unspecified; lathe writes the last). The gradient is zero where x
// was overwritten, and source's is the gradient read at index.
func (x *Tensor) IndexCopy(dim int, index, source *Tensor) *Tensor {
	const op = "index_copy"
	d, err := x.alongArgs(op, dim, index, source, true)
	if err != nil {
		return failed(err)
	}
	return apply(opIndexCopy, alongAttrs{dim: d}, x, index, source)
}

// IndexFill is x with value written along dim at index, as
// torch.index_fill(x, dim, index, value): every element whose coordinate
// along dim is in index. index is 1-D or 0-d; negative indices count from
// the end (as torch's index_fill), and one outside [-size, size) is
// ErrIndex. value must fit x's dtype (a fraction in an integer x is
// ErrDType; torch truncates it). The gradient is zero where x was filled.
func (x *Tensor) IndexFill(dim int, index *Tensor, value float64) *Tensor {
	const op = "index_fill"
	d, err := x.alongArgs(op, dim, index, nil, false)
	if err != nil {
		return failed(err)
	}
	if err := ops.CheckScalar(x.t.DType, value, "value"); err != nil {
		return failed(located(err, op))
	}
	return apply(opIndexFill, alongAttrs{dim: d, value: value}, x, index)
}

// scatterReduceAttrs are scatter_reduce's attributes, the dim normalised.
type scatterReduceAttrs struct {
	dim         int
	reduce      string
	includeSelf bool
}

var opScatterReduce = composite("scatter_reduce", []string{"x", "index", "src"}, func(in []*Tensor, a scatterReduceAttrs) *Tensor {
	x, index, src := in[0], in[1], in[2]
	if x.t.Rank() == 0 {
		return scatterReduce(x.Reshape(1), index.Reshape(1), src.Reshape(-1), a).Reshape()
	}
	return scatterReduce(x, index, src, a)
})

func init() {
	opScatterReduce.Checks = func(in []*dispatch.Tensor, a scatterReduceAttrs) []dispatch.ValueCheck {
		return ops.Scatter.Checks(in, ops.IndexDim{Dim: a.dim})
	}
}

// scatterReduce is the body of scatter_reduce on x of rank 1 or more.
// Sum and mean are scatter_adds (and a count); prod, amax and amin an
// inclusive scan of src along dim in the order of its indices (a stable
// argsort), by doubling: ⌈log2 K⌉ steps of K = index's size along dim,
// each combining an element with the one 2^s before it where both go to
// one place. The last of each run, which holds the run's reduction, is
// written last, so that scatter (whose last write wins) leaves it.
func scatterReduce(x, index, src *Tensor, a scatterReduceAttrs) *Tensor {
	const op = "scatter_reduce"
	d := a.dim
	if index.t.Numel() == 0 {
		return x
	}
	// Only the part of src that index covers takes part (torch's rule).
	for i, s := range index.t.Shape {
		if src.t.Shape[i] != s {
			src = src.Narrow(i, 0, s)
		}
	}
	switch a.reduce {
	case "sum", "mean":
		base := x
		if !a.includeSelf {
			base = x.Scatter(d, index, src.fullLike(op, 0, src.t.Shape))
		}
		sum := base.ScatterAdd(d, index, src)
		if a.reduce == "sum" {
			return sum
		}
		count := x.fullLike(op, b2f(a.includeSelf), x.t.Shape).ScatterAdd(d, index, x.fullLike(op, 1, index.t.Shape)).MaximumScalar(1)
		if x.t.DType.IsFloat() {
			return sum.Div(count)
		}
		// torch's floor division of an integer sum, exact in float64
		// below 2^53.
		return sum.Cast(Float64).Div(count.Cast(Float64)).Floor().Cast(x.t.DType)
	}
	grad := x.RequiresGrad() || src.RequiresGrad()
	xv, sv := x, src
	if a.reduce != "prod" && grad {
		// The values without the graph; the gradient is routed below.
		xv, sv = x.joined(x.Detach()), src.joined(src.Detach())
	}
	combine := func(v, prev *Tensor) *Tensor {
		switch a.reduce {
		case "prod":
			return v.Mul(prev)
		case "amax":
			return v.Maximum(prev)
		}
		return v.Minimum(prev)
	}
	k := index.t.Shape[d]
	perm := index.ArgSort(d, false)
	si, v := index.Gather(d, perm), sv.Gather(d, perm)
	for s := 1; s < k; s *= 2 {
		fill := append([]int(nil), index.t.Shape...)
		fill[d] = s
		prevI := Concat([]*Tensor{si.fullLike(op, -1, fill), si.Narrow(d, 0, k-s)}, d)
		prevV := Concat([]*Tensor{v.Narrow(d, 0, s), v.Narrow(d, 0, k-s)}, d)
		same := si.Eq(prevI)
		if a.reduce == "prod" {
			v = v.Mul(Where(same, prevV, v.scalarLike(op, 1)))
		} else {
			v = combine(v, Where(same, prevV, v))
		}
	}
	if a.reduce == "prod" && grad {
		// Scatter's gradient goes to every element written, the partial
		// products that later writes overwrite too: only the last of each
		// run, which holds the run's product, keeps it.
		one := append([]int(nil), index.t.Shape...)
		one[d] = 1
		next := Concat([]*Tensor{si.Narrow(d, 1, k-1), si.fullLike(op, -1, one)}, d)
		v = Where(si.Ne(next), v, v.joined(v.Detach()))
	}
	r := xv.Scatter(d, si, v)
	if a.includeSelf {
		touched := x.joined(full(op, x.t.Device, Bool, 0, x.t.Shape)).Scatter(d, index, x.joined(full(op, x.t.Device, Bool, 1, index.t.Shape)))
		r = Where(touched, combine(xv, r), xv)
	}
	if a.reduce == "prod" || !grad {
		return r
	}
	return spreadOverTies(x, index, src, r.joined(r.Detach()), a)
}

// spreadOverTies is r, the amax or amin that scatter_reduce computed
// without the graph, on the graph of x and src with torch's gradient
// (derivatives.yaml scatter_reduce, FunctionsManual's
// scatter_reduce_backward): spread evenly over the elements of x and src
// equal to the result, N of them; without includeSelf x's share where src
// was scattered is dropped (while still counted in N, as torch's). Its
// value is r itself: r plus exactly zero (x - x and src - src over the
// chosen elements) where r is finite, the chosen elements' mean where not.
func spreadOverTies(x, index, src, r *Tensor, a scatterReduceAttrs) *Tensor {
	const op = "scatter_reduce"
	d := a.dim
	xd, sd := x.joined(x.Detach()), src.joined(src.Detach())
	selfIs := xd.Eq(r)
	srcIs := sd.Eq(r.Gather(d, index))
	n := selfIs.Cast(x.t.DType).ScatterAdd(d, index, srcIs.Cast(x.t.DType))
	if !a.includeSelf {
		scattered := x.joined(full(op, x.t.Device, Bool, 0, x.t.Shape)).Scatter(d, index, x.joined(full(op, x.t.Device, Bool, 1, index.t.Shape)))
		selfIs = selfIs.LogicalAnd(scattered.LogicalNot())
	}
	zero := x.scalarLike(op, 0)
	zeros := x.fullLike(op, 0, x.t.Shape)
	spread := func(xs, ss *Tensor) *Tensor {
		return Where(selfIs, xs, zero).Add(zeros.ScatterAdd(d, index, Where(srcIs, ss, zero))).Div(n)
	}
	same := spread(x.Sub(xd), src.Sub(sd))
	whole := spread(x, src)
	return Where(r.IsFinite(), r.Add(same), whole)
}

// ScatterReduce is x with src's values reduced into it along dim at index,
// as torch.scatter_reduce(x, dim, index, src, reduce, include_self):
// reduce is "sum", "prod", "mean", "amax" or "amin", and each place of x
// that index names becomes the reduction of the src values sent there,
// with x's own value where includeSelf; places that nothing is sent to
// keep x's value. index and src are as Scatter's (index no larger than src
// in any dim, nor than x off dim; only the part of src that index covers
// is read); indices do not wrap, and one outside [0, size) is ErrIndex. A
// mean of integers is floor division, as torch's (computed in float64, so
// exact for sums below 2^53; a device without float64 refuses it); bool x
// takes every reduce but mean. NaN propagates through amax and amin.
//
// Gradients are torch's: sum and mean pass the gradient to x (zero where
// src was scattered, without includeSelf) and read it back at index for
// src (divided by the count, for mean); prod's is the product of the
// others; amax's and amin's is spread evenly over the elements of x and
// src equal to the result. prod and amax/amin take ⌈log2 K⌉ steps of K =
// index's size along dim.
func (x *Tensor) ScatterReduce(dim int, index, src *Tensor, reduce string, includeSelf bool) *Tensor {
	const op = "scatter_reduce"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := indexDType(op, "index", index); err != nil {
		return failed(err)
	}
	if err := src.CheckArg(op, "src"); err != nil {
		return failed(err)
	}
	switch reduce {
	case "sum", "prod", "amax", "amin":
	case "mean":
		if x.t.DType == Bool {
			return failed(errorf(op, ErrDType, "x", "is bool, which has no mean", "cast it to a number dtype first"))
		}
	default:
		return failed(errorf(op, ErrValue, "reduce", "is "+strconv.Quote(reduce), `use "sum", "prod", "mean", "amax" or "amin"`))
	}
	if x.t.Device != index.t.Device || x.t.Device != src.t.Device {
		return apply(opScatterReduce, scatterReduceAttrs{dim: dim}, x, index, src) // dispatch names the one elsewhere
	}
	if _, _, err := ops.Scatter.Infer([]*dispatch.Tensor{x.t, index.t, src.t}, ops.IndexDim{Dim: dim}); err != nil {
		return failed(located(err, op))
	}
	d, _ := ops.NormDim(dim, x.t.Rank(), "dim")
	if x.t.Rank() == 0 && index.t.Numel() != 1 {
		return failed(errorf(op, ErrShape, "index", "has "+strconv.Itoa(index.t.Numel())+" elements but x is 0-d", "give one index"))
	}
	return apply(opScatterReduce, scatterReduceAttrs{dim: d, reduce: reduce, includeSelf: includeSelf}, x, index, src)
}

// MaskedScatter is x with the elements of source (read flattened, in
// order) written where mask is true, in row-major order, as
// torch.masked_scatter(x, mask, source): x and mask (Bool) broadcast
// together, and the result has their broadcast shape. source has x's
// dtype (torch does not promote) and at least as many elements as mask has
// true ones (fewer is ErrShape); the rest are unread. Gradients: x's is
// zero where written, source's the gradient at the places its elements
// went (zero for those unread).
//
// It syncs once: it reads the broadcast mask back (Nonzero) and writes on
// the device.
func (x *Tensor) MaskedScatter(mask, source *Tensor) *Tensor {
	const op = "masked_scatter"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	for _, a := range []struct {
		t    *Tensor
		name string
	}{{mask, "mask"}, {source, "source"}} {
		if err := a.t.CheckArg(op, a.name); err != nil {
			return failed(err)
		}
		if a.t.t.Device != x.t.Device {
			return failed(errorf(op, ErrDevice, a.name, "is on "+a.t.t.Device.String()+" but x is on "+x.t.Device.String(),
				"move it with "+a.name+".To("+x.t.Device.GoString()+")"))
		}
	}
	if mask.t.DType != Bool {
		return failed(errorf(op, ErrDType, "mask", "is "+mask.t.DType.String()+" but a mask is bool", "make it with a comparison, or .Cast(lathe.Bool)"))
	}
	if source.t.DType != x.t.DType {
		return failed(errorf(op, ErrDType, "source", "is "+source.t.DType.String()+" but x is "+x.t.DType.String()+" (torch does not promote here)",
			"cast it with .Cast("+x.t.DType.GoString()+")"))
	}
	shape, ok := ops.BroadcastShapes(x.t.Shape, mask.t.Shape)
	if !ok {
		return failed(errorf(op, ErrShape, "mask", "has shape "+dispatch.FormatShape(mask.t.Shape)+", which does not broadcast with x's "+
			dispatch.FormatShape(x.t.Shape), "make each dim equal or 1"))
	}
	if err := roomFor(op, x.t.Device, x.t.DType, shape); err != nil {
		return failed(err)
	}
	return relabel(Compose(func(a []*Tensor) *Tensor {
		x, mask, source := a[0], a[1], a[2]
		at := mask.BroadcastTo(shape...).Reshape(-1).Nonzero()
		if at.err != nil {
			return at
		}
		n := at.t.Shape[0]
		if m := source.t.Numel(); m < n {
			return failed(errorf(op, ErrShape, "source", "has "+strconv.Itoa(m)+" elements but mask has "+strconv.Itoa(n)+" true ones",
				"give source at least as many elements as mask has true ones"))
		}
		values := source.Reshape(-1).Narrow(0, 0, n)
		return x.BroadcastTo(shape...).Reshape(-1).Scatter(0, at.Squeeze(1), values).Reshape(shape...)
	}, x, mask, source), op)
}

// UniqueConsecutive is torch.unique_consecutive(x, return_inverse,
// return_counts) with dim=None: the values of flattened x with each run
// of equal neighbours made one, in x's order; with returnInverse, the
// Int64 index (of x's shape) of each element's run in values; with
// returnCounts, each run's length (Int64). A result not asked for is nil.
// Equal values keep the first of their run (-0 or +0, as torch); NaN
// equals nothing, so each NaN is a run of its own, as in torch. The
// values' gradient goes to the first element of each run.
//
// It syncs once: it reads back whether each element differs from the one
// before, and gathers the values on the device.
func (x *Tensor) UniqueConsecutive(returnInverse, returnCounts bool) (values, inverse, counts *Tensor) {
	const op = "unique_consecutive"
	fail := func(err error) (*Tensor, *Tensor, *Tensor) {
		return failed(err), pick(returnInverse, failed(err)), pick(returnCounts, failed(err))
	}
	if err := x.check(op); err != nil {
		return fail(err)
	}
	dev := x.t.Device
	n := x.t.Numel()
	flat := relabel(x.Reshape(-1), op)
	if err := flat.Err(); err != nil {
		return fail(err)
	}
	starts, runs, err := runsOf(op, flat)
	if err != nil {
		flat.Release()
		return fail(err)
	}
	at := FromSlice(dev, starts, len(starts))
	values = relabel(flat.IndexSelect(0, at), op)
	// The flattened x and the starts go with the values' graph, which
	// holds them for the backward pass (at once where there is none).
	ReleaseWithGraph(values, flat, at)
	if returnInverse {
		flatInverse := FromSlice(dev, runs, n)
		inverse = relabel(flatInverse.Reshape(x.t.Shape...), op)
		flatInverse.Release() // the reshape, a view, keeps the storage
	}
	if returnCounts {
		counts = relabel(runLengths(dev, starts, n), op)
	}
	return values, inverse, counts
}

// UniqueConsecutiveDim is torch.unique_consecutive(x, return_inverse,
// return_counts, dim): x with each run of equal neighbouring slices along
// dim made one, in x's order (the values keep x's other dims); with
// returnInverse, the Int64 index [x's size along dim] of each slice's run;
// with returnCounts, each run's length (Int64). A result not asked for is
// nil. Two slices are equal where every element is (-0 equals +0, and the
// first of a run is kept); a slice with a NaN equals no other, as in
// torch. A dim out of range (any dim of a 0-d x) is ErrIndex; another dim
// of size 0 is ErrShape, as torch refuses it ("0 sized dimensions ...
// aren't selected"). The values' gradient goes to the first slice of each
// run (torch 1.13 has none).
//
// It syncs once: it reads back whether each slice differs from the one
// before, and gathers the values on the device.
func (x *Tensor) UniqueConsecutiveDim(dim int, returnInverse, returnCounts bool) (values, inverse, counts *Tensor) {
	const op = "unique_consecutive"
	fail := func(err error) (*Tensor, *Tensor, *Tensor) {
		return failed(err), pick(returnInverse, failed(err)), pick(returnCounts, failed(err))
	}
	if err := x.check(op); err != nil {
		return fail(err)
	}
	r := x.t.Rank()
	if dim < -r || dim >= r || r == 0 {
		fix := "use a dim in [" + strconv.Itoa(-r) + ", " + strconv.Itoa(r) + ")"
		if r == 0 {
			fix = "use UniqueConsecutive (dim=None) for a 0-d tensor, or reshape it to [1]"
		}
		return fail(errorf(op, ErrIndex, "dim", "is "+strconv.Itoa(dim)+", out of range for a tensor of rank "+strconv.Itoa(r), fix))
	}
	if dim < 0 {
		dim += r
	}
	for d, size := range x.t.Shape {
		if d != dim && size == 0 {
			return fail(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+", with size 0 in dim "+strconv.Itoa(d)+
				", which is not dim "+strconv.Itoa(dim)+" (torch refuses it: its slices would be empty)", "take the unique slices along the dim of size 0, or drop it"))
		}
	}
	dev := x.t.Device
	n := x.t.Shape[dim]
	front := relabel(x.MoveDim([]int{dim}, []int{0}), op)
	if err := front.Err(); err != nil {
		return fail(err)
	}
	starts, runs, err := runsOf(op, front)
	front.Release()
	if err != nil {
		return fail(err)
	}
	at := FromSlice(dev, starts, len(starts))
	values = relabel(x.IndexSelect(dim, at), op)
	ReleaseWithGraph(values, at)
	if returnInverse {
		inverse = relabel(FromSlice(dev, runs, n), op)
	}
	if returnCounts {
		counts = relabel(runLengths(dev, starts, n), op)
	}
	return values, inverse, counts
}
