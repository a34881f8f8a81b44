package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Scans along a dim beyond cumsum: cumprod, cummax, cummin, logcumsumexp,
// and diff. Each is a composite of ops every backend has, so each runs on
// every device, and its gradient (and the gradient of that) is the one of
// the ops it is made of.
//
// The running product, extreme and log-sum-exp are computed by doubling
// (Hillis and Steele's scan): after step k every element holds the
// combination of the 2^k elements up to it, so a line of n takes
// ceil(log2 n) steps of elementwise ops on the whole tensor: O(n log n)
// work where torch's kernels take O(n). Without gradients each step's
// intermediates go as the next step is made, so memory stays a few times
// x's size; with them the graph keeps every step's, O(n log n). The order of the products differs from a
// sequential loop's, so float results differ from torch's by rounding
// (torch's cpu accumulates float32 in float64).
//
// cumprod's gradient is that of the products it is made of, so it is
// exact where x holds zeros, as torch's cumprod_backward takes care to be;
// cummax's and cummin's values are x gathered at their indices, so their
// gradient goes to the element each came from, as torch's
// cummaxmin_backward. The indices are argcumextreme's kernel, one pass,
// where the device has one (the cpu), and doubling elsewhere.

// scanAttrs are the attribute of the scans: the dim, counted from the
// front.
type scanAttrs struct{ dim int }

// doubling runs combine over each line of t along d by doubling:
// combine(earlier, later, extra) joins the element that comes before to
// the one after, for a slice of the line at a time, and must be
// associative; extra are tensors it reads besides. Each step runs in a
// Compose of its own, and the step before's result goes once the next is
// made (with the graph where the steps are recorded), so that a scan
// without gradients holds two steps' memory, not all ceil(log2 n).
func doubling(t *Tensor, d int, combine func(earlier, later *Tensor, extra []*Tensor) *Tensor, extra ...*Tensor) *Tensor {
	if t.err != nil || t.t.Rank() == 0 {
		return t
	}
	n := t.t.Shape[d]
	for s := 1; s < n; s *= 2 {
		prev := t
		t = Compose(func(a []*Tensor) *Tensor {
			x := a[0]
			return Concat([]*Tensor{x.Narrow(d, 0, s), combine(x.Narrow(d, 0, n-s), x.Narrow(d, s, n-s), a[1:])}, d)
		}, append([]*Tensor{t}, extra...)...)
		if s > 1 { // the first step's t is the caller's
			ReleaseWithGraph(t, prev)
		}
		if t.err != nil {
			return t
		}
	}
	return t
}

var (
	opCumProd = composite("cumprod", []string{"x"}, func(in []*Tensor, a scanAttrs) *Tensor {
		x := in[0]
		if !x.t.DType.IsFloat() {
			x = x.Cast(Int64) // torch's cumprod of integers and bool is int64
		}
		return inFloat32([]*Tensor{x}, func(in []*Tensor) *Tensor {
			return doubling(in[0], a.dim, func(e, l *Tensor, _ []*Tensor) *Tensor { return e.Mul(l) })
		})
	})
	opLogCumSumExp = composite("logcumsumexp", []string{"x"}, func(in []*Tensor, a scanAttrs) *Tensor {
		return inFloat32(in, func(in []*Tensor) *Tensor {
			return doubling(in[0], a.dim, func(e, l *Tensor, _ []*Tensor) *Tensor { return logAddExp("logcumsumexp", e, l, false) })
		})
	})
)

// CumProd is the running product along dim, as torch.cumprod(x, dim):
// same shape; integer and bool x give Int64, as torch's and CumSum's;
// float16 and bfloat16 are multiplied in float32 and
// rounded once (torch's cpu has no cumprod for them). Its gradient is
// exact where x holds zeros. A dim out of range is ErrIndex.
func (x *Tensor) CumProd(dim int) *Tensor {
	d, err := x.scanDim("cumprod", dim)
	if err != nil {
		return failed(err)
	}
	return apply(opCumProd, scanAttrs{d}, x)
}

// LogCumSumExp is log(cumsum(exp(x))) along dim, computed without
// overflow, as torch.logcumsumexp(x, dim): -Inf adds nothing, +Inf gives
// +Inf from there on, NaN gives NaN from there on. Floats only, as torch's
// (integers and bool are ErrDType); float16 and bfloat16 are computed in
// float32 and rounded once. A dim out of range is ErrIndex. The gradient
// is that of the log-add-exps it is made of (LogAddExp's): where x is -Inf
// it is finite (an element that adds nothing gets 0 from the later
// results), where torch 1.13's logcumsumexp_backward gives NaN.
func (x *Tensor) LogCumSumExp(dim int) *Tensor {
	const op = "logcumsumexp"
	d, err := x.scanDim(op, dim)
	if err != nil {
		return failed(err)
	}
	if !x.t.DType.IsFloat() {
		return failed(errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but logcumsumexp takes floats, as torch's",
			"cast it with .Cast(lathe.Float32) first"))
	}
	return apply(opLogCumSumExp, scanAttrs{d}, x)
}

// scanDim refuses a failed x and a dim out of range, and counts dim from
// the front (a 0-d x takes 0 and -1).
func (x *Tensor) scanDim(op string, dim int) (int, error) {
	if err := x.check(op); err != nil {
		return 0, err
	}
	return sortDim(op, dim, x.t.Rank())
}

// CumMax returns the running maximum of x along dim and the Int64 index
// of each, as torch.cummax(x, dim): where elements tie, the index is the
// last's (torch's "x >= running max"); once a NaN comes, the value is NaN
// and the index that of the latest NaN, as torch's. bool compares false <
// true. values is x gathered at indices, so the gradient goes to the
// element each value came from. A dim out of range is ErrIndex.
func (x *Tensor) CumMax(dim int) (values, indices *Tensor) { return x.cumExtreme("cummax", dim, true) }

// CumMin is CumMax for the running minimum, as torch.cummin(x, dim): the
// last of tied minima, the latest NaN once one comes.
func (x *Tensor) CumMin(dim int) (values, indices *Tensor) { return x.cumExtreme("cummin", dim, false) }

func (x *Tensor) cumExtreme(op string, dim int, max bool) (values, indices *Tensor) {
	fail := func(err error) (*Tensor, *Tensor) { return failed(err), failed(err) }
	d, err := x.scanDim(op, dim)
	if err != nil {
		return fail(err)
	}
	if x.t.Rank() == 0 { // one element: its own maximum, at 0
		r := x.Reshape(1)
		v, i := r.cumExtreme(op, 0, max)
		if v.err != nil {
			r.Release()
			return v, i
		}
		values = relabel(v.Reshape(), op)
		ReleaseWithGraph(values, v, r)
		indices = i.Reshape()
		i.Release()
		return values, indices
	}
	// The indices need no gradient: computed from x detached, their
	// intermediates released as Compose returns.
	det := x.Detach()
	var idx *Tensor
	if ops.ArgCumExtreme.KernelDTypes(x.t.Device.Kind).Has(x.t.DType) {
		idx = relabel(apply(ops.ArgCumExtreme, ops.CumExtreme{Dim: d, Max: max}, det), op)
	} else {
		idx = relabel(Compose(func(a []*Tensor) *Tensor { return cumExtremeIndex(a[0], d, max) }, det), op)
	}
	det.Release()
	if err := idx.Err(); err != nil {
		return failed(err), idx
	}
	values = relabel(x.Gather(d, idx), op)
	return values, callersIndices(values, idx)
}

// cumExtremeIndex is the Int64 index along d of the running maximum (or
// minimum) of x, by doubling over (value, index) pairs: the later pair
// wins where its value is NaN or at least as large (at most as small) as
// the earlier's, which a NaN never is. That choice is associative, and is
// torch's loop's: the last of equal extremes, the latest NaN.
func cumExtremeIndex(x *Tensor, d int, max bool) *Tensor {
	n := x.t.Shape[d]
	line := make([]int, x.t.Rank())
	for i := range line {
		line[i] = 1
	}
	line[d] = n
	at := x.joined(Arange(x.t.Device, Int64, 0, float64(n), 1)).Reshape(line...).Expand(x.t.Shape...)
	keys := x
	if x.t.DType == Bool {
		keys = x.Cast(Int32) // false < true as 0 < 1
	}
	float := x.t.DType.IsFloat()
	// The state is the index alone: its value is keys gathered there.
	return doubling(at, d, func(ie, il *Tensor, extra []*Tensor) *Tensor {
		keys := extra[0]
		ve, vl := keys.Gather(d, ie), keys.Gather(d, il)
		var later *Tensor
		if max {
			later = vl.Ge(ve)
		} else {
			later = vl.Le(ve)
		}
		if float {
			later = later.LogicalOr(vl.IsNaN())
		}
		return Where(later, il, ie)
	}, keys).Contiguous()
}

// diffAttrs are diff's: how many times, along which dim (from the front).
type diffAttrs struct{ n, dim int }

var opDiff = composite("diff", []string{"x"}, func(in []*Tensor, a diffAttrs) *Tensor {
	x := in[0]
	for i := 0; i < a.n && x.err == nil; i++ {
		m := x.t.Shape[a.dim]
		if m == 0 {
			break
		}
		hi, lo := x.Narrow(a.dim, 1, m-1), x.Narrow(a.dim, 0, m-1)
		if x.t.DType == Bool {
			x = hi.Ne(lo) // torch's diff of bool is logical xor
		} else {
			x = hi.Sub(lo)
		}
	}
	return x
})

// Diff is the n-th forward difference along dim, out[i] = x[i+1] - x[i]
// applied n times, as torch.diff(x, n, dim, prepend, append): prepend and
// append (nil for none) are joined to x along dim first; they must have
// x's rank and its sizes off dim, and are promoted with x to their common
// dtype, as torch's cat. Each difference makes dim one shorter; past its
// size the result is empty along it. bool x gives the logical xor of
// neighbours, as torch's. n 0 or less returns x as it is (in a handle of
// its own), without prepend and append, as torch's. A 0-d x is ErrShape, a dim out of range ErrIndex.
func (x *Tensor) Diff(n, dim int, prepend, append_ *Tensor) *Tensor {
	const op = "diff"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if x.t.Rank() == 0 {
		return failed(errorf(op, ErrShape, "x", "is 0-d but diff takes differences along a dim",
			"give a tensor of rank 1 or more (Reshape(1))"))
	}
	d, err := sortDim(op, dim, x.t.Rank())
	if err != nil {
		return failed(err)
	}
	var parts []*Tensor
	var names []string
	dt := x.t.DType
	for _, p := range []struct {
		t    *Tensor
		name string
	}{{prepend, "prepend"}, {x, "x"}, {append_, "append"}} {
		if p.t == nil {
			continue
		}
		if p.t != x {
			if err := p.t.CheckArg(op, p.name); err != nil {
				return failed(err)
			}
			if err := diffShape(x, p.t, d, p.name); err != nil {
				return failed(err)
			}
			dt = dispatch.PromoteTypes(dt, p.t.t.DType)
		}
		parts, names = append(parts, p.t), append(names, p.name)
	}
	switch {
	case n <= 0: // x as it is, without prepend and append, as torch's
		return x.alias()
	case len(parts) == 1:
		return apply(opDiff, diffAttrs{n: n, dim: d}, x)
	}
	// The casts and the joined tensor go with the result's graph.
	out := Compose(func(parts []*Tensor) *Tensor {
		cast := make([]*Tensor, len(parts))
		for i, p := range parts {
			if cast[i] = p.promoteTo(op, names[i], dt); cast[i].err != nil {
				return cast[i]
			}
		}
		return apply(opDiff, diffAttrs{n: n, dim: d}, Concat(cast, d))
	}, parts...)
	return relabel(out, op)
}

// diffShape refuses a prepend or append that does not have x's rank and
// sizes off dim d, as torch does.
func diffShape(x, p *Tensor, d int, arg string) error {
	const op = "diff"
	if p.t.Device != x.t.Device {
		return errorf(op, ErrDevice, arg, "is on "+p.t.Device.String()+" but x is on "+x.t.Device.String(),
			"move it with .To("+x.t.Device.String()+")")
	}
	if p.t.Rank() != x.t.Rank() {
		return errorf(op, ErrShape, arg, "has rank "+strconv.Itoa(p.t.Rank())+" but x has rank "+strconv.Itoa(x.t.Rank()),
			"give it x's rank (Unsqueeze the dim it adds along)")
	}
	for i, s := range p.t.Shape {
		if i != d && s != x.t.Shape[i] {
			return errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(p.t.Shape)+" but x has "+
				dispatch.FormatShape(x.t.Shape)+": they differ in dim "+strconv.Itoa(i)+", which is not dim "+strconv.Itoa(d),
				"give it x's sizes in every dim but "+strconv.Itoa(d))
		}
	}
	return nil
}
