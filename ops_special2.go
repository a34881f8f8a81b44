package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// More of torch's elementwise and reducing functions as composites:
// signbit, xlog1py, ldexp, frexp, mvlgamma, isin, renorm, nanmedian and
// nanquantile. Each runs on every device; the float ones are
// differentiable to any order.

var (
	// signbit is x < 0, or x = -0 (1/x is -Inf).
	opSignbit = composite("signbit", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		x := in[0]
		if !x.t.DType.IsFloat() {
			return x.LtScalar(0)
		}
		return x.LtScalar(0).LogicalOr(x.EqScalar(0).LogicalAnd(x.Reciprocal().LtScalar(0)))
	})
	// xlog1py is x·log1p(y), 0 where x is 0 and y is not NaN, as torch's
	// kernel; its gradients are log1p(y) and x/(1+y) (derivatives.yaml
	// "special_xlog1py"), 0 where x is 0 and log1p(y) is not finite.
	opXlog1py = binaryMath("xlog1py", []string{"x", "y"}, true, func(x, y *Tensor) *Tensor {
		l := y.Log1p()
		off := x.EqScalar(0).LogicalAnd(l.IsFinite().LogicalNot()).LogicalAnd(y.IsNaN().LogicalNot())
		l = Where(off, y.scalarLike("xlog1py", 0), l)
		return x.Mul(l).AddScalar(0)
	})
	// ldexp is torch's x·2^e, the power in the result's float dtype.
	opLdexp = binaryMath("ldexp", []string{"x", "exponent"}, false, func(x, e *Tensor) *Tensor {
		return x.Mul(x.scalarLike("ldexp", 2).Pow(e))
	})
)

// Signbit is true where x's sign bit is set, as torch.signbit: x < 0 and
// -0 (and -Inf); false for integers ≥ 0 and bool. Unlike torch, a NaN
// counts as positive whatever its sign bit (lathe has no op that reads
// it). The result is Bool.
func (x *Tensor) Signbit() *Tensor {
	if err := x.check("signbit"); err != nil {
		return failed(err)
	}
	return apply(opSignbit, none, x)
}

// Xlog1py is x·log(1+y), 0 where x is 0 (even where y is -1 or Inf) and
// NaN where y is NaN, as torch.special.xlog1py; broadcast, integers
// promoted to float32. Where x is 0 and log1p(y) is not finite both
// gradients are 0.
func (x *Tensor) Xlog1py(y *Tensor) *Tensor { return x.callBinary(opXlog1py, y, ops.Div) }

// Ldexp is x·2^exponent, as torch.ldexp: broadcast, promoted as Div (two
// integer tensors give float32). As torch's, the power is formed first, so
// an exponent past the dtype's range overflows even where x would bring
// the product back.
func (x *Tensor) Ldexp(exponent *Tensor) *Tensor { return x.callBinary(opLdexp, exponent, ops.Div) }

var opFrexpMantissa = composite("frexp", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	m, _ := frexp(in[0])
	return m
})

// frexp is torch.frexp's mantissa and exponent: e = floor(log2|x|) + 1
// corrected by one either way where the logarithm rounded across a power
// of 2, m = x/2^e; zero, Inf and NaN keep x with exponent 0. The exponent
// comes from x detached, so that m's gradient is 1/2^e, as torch's.
func frexp(x *Tensor) (m, e *Tensor) {
	const op = "frexp"
	xd := detached(x)
	a := xd.Abs()
	finite := a.IsFinite().LogicalAnd(a.GtScalar(0))
	one := x.scalarLike(op, 1)
	as := Where(finite, a, one)
	ef := as.Log2().Floor().AddScalar(1)
	two := x.scalarLike(op, 2)
	r := as.Div(two.Pow(ef))
	ef = Where(r.GeScalar(1), ef.AddScalar(1), Where(r.LtScalar(0.5), ef.SubScalar(1), ef))
	// 2^e in two halves: 2^-1074 (float64's least subnormal) is 0 as a
	// power of 2 in float32, where x/2^(e/2)/2^(e - e/2) is exact.
	h := ef.DivScalar(2).Floor()
	m = x.Div(two.Pow(h)).Div(two.Pow(ef.Sub(h)))
	m = Where(finite, m, x)
	e = Where(finite, ef, x.scalarLike(op, 0)).Cast(Int32)
	return m, e
}

// Frexp splits x into a mantissa with |m| in [0.5, 1) and an Int32
// exponent with x = m·2^e, as torch.frexp; zero, ±Inf and NaN give
// themselves with exponent 0. Floats only, as torch's. The mantissa's
// gradient is 1/2^e, as torch's.
func (x *Tensor) Frexp() (mantissa, exponent *Tensor) {
	const op = "frexp"
	if err := x.floatsOnly(op); err != nil {
		return failed(err), failed(err)
	}
	mantissa = apply(opFrexpMantissa, none, x)
	if mantissa.err != nil {
		return mantissa, failed(mantissa.err)
	}
	exponent = Compose(func(a []*Tensor) *Tensor {
		_, e := frexp(a[0])
		return e
	}, x)
	if exponent.err != nil {
		mantissa.Release()
		return failed(exponent.err), exponent
	}
	return mantissa, exponent
}

// mvlgamma is Σ_{i<p} lgamma(x - i/2) + p(p-1)/4·ln π (torch's formula).
var opMvlgamma = unaryMath("mvlgamma", true, func(x *Tensor, a mathAttrs) *Tensor {
	p := int(a.a)
	s := x.Lgamma()
	for i := 1; i < p; i++ {
		s = s.Add(x.SubScalar(float64(i) / 2).Lgamma())
	}
	return s.AddScalar(float64(p*(p-1)) / 4 * math.Log(math.Pi))
})

// Mvlgamma is the multivariate log-gamma function of dimension p, as
// torch.mvlgamma(x, p): Σ_{i<p} lgamma(x - i/2) + p(p-1)/4·ln π. Floats
// only; p < 1 is ErrValue. As torch 1.13's (which no longer checks that x
// is above (p-1)/2), x at or below (p-1)/2 gives what the formula gives.
func (x *Tensor) Mvlgamma(p int) *Tensor {
	const op = "mvlgamma"
	if err := x.floatsOnly(op); err != nil {
		return failed(err)
	}
	if p < 1 {
		return failed(errorf(op, ErrValue, "p", "is "+strconv.Itoa(p)+" but must be 1 or more", "use a dimension p ≥ 1"))
	}
	return apply(opMvlgamma, mathAttrs{a: float64(p)}, x)
}

// isinAttrs are isin's invert and the dtype elements and test meet in.
type isinAttrs struct {
	invert bool
	dt     DType
}

// isin compares each element with every test element where the test is
// short, as torch's: fewer than 10·n^0.145 of them for n elements (74
// for a million). Otherwise, as torch's, it sorts the test and finds
// each element's place in it (searchSorted), so that time and memory go
// as n·log m rather than n·m. A NaN test element, which sorts last, is
// searched as +Inf, which keeps the order a binary search needs, and
// compared as itself, which matches nothing.
var opIsin = composite("isin", []string{"elements", "test_elements"}, func(in []*Tensor, a isinAttrs) *Tensor {
	const op = "isin"
	x, t := in[0].Cast(a.dt), in[1].Cast(a.dt).Reshape(-1)
	if t.err != nil {
		return t
	}
	var hit *Tensor
	if m, n := t.t.Shape[0], x.t.Numel(); m == 0 || a.dt == Bool || float64(m) < 10*math.Pow(float64(n), 0.145) {
		hit = x.Unsqueeze(-1).Eq(t).Any(-1)
	} else {
		sorted, order := t.Sort(0, false)
		order.Release()
		search := sorted
		if a.dt.IsFloat() {
			search = Where(sorted.IsNaN(), sorted.scalarLike(op, math.Inf(1)), sorted)
		}
		at := searchSorted(search, x, searchAttrs{out: Int64, cmp: a.dt}).MinimumScalar(float64(m - 1))
		hit = sorted.IndexSelect(0, at.Reshape(-1)).Reshape(x.t.Shape...).Eq(x)
	}
	if a.invert {
		return hit.LogicalNot()
	}
	return hit
})

// Isin is true where an element of elements equals one of testElements,
// as torch.isin(elements, test_elements, invert=invert) (NaN is in
// nothing): the result has elements' shape and is Bool. The dtypes
// promote as a comparison's. Against a long test it sorts the test and
// searches it, as torch's, so that time and memory grow as the elements
// times the log of the test's length.
func Isin(elements, testElements *Tensor, invert bool) *Tensor {
	const op = "isin"
	if err := elements.CheckArg(op, "elements"); err != nil {
		return failed(err)
	}
	if err := testElements.CheckArg(op, "test_elements"); err != nil {
		return failed(err)
	}
	dt := dispatch.ResultType(dispatch.OperandOf(elements.t), dispatch.OperandOf(testElements.t))
	return apply(opIsin, isinAttrs{invert: invert, dt: dt}, elements, testElements)
}

// renormAttrs are renorm's p, dim and maxnorm.
type renormAttrs struct {
	p       float64
	dim     int
	maxnorm float64
}

// renorm scales each slice along dim whose p-norm is above maxnorm by
// maxnorm/(norm + 1e-7), as torch's renorm; the norm in float32 for the
// 16-bit dtypes.
var opRenorm = composite("renorm", []string{"x"}, func(in []*Tensor, a renormAttrs) *Tensor {
	return inFloat32(in, func(in []*Tensor) *Tensor {
		x := in[0]
		var dims []int
		for d := range x.t.Rank() {
			if d != a.dim {
				dims = append(dims, d)
			}
		}
		norm := x
		if len(dims) > 0 {
			norm = x.NormKeepDim(a.p, dims...)
		} else {
			norm = x.Abs()
		}
		scale := norm.AddScalar(1e-7).Reciprocal().MulScalar(a.maxnorm)
		return Where(norm.GtScalar(a.maxnorm), x.Mul(scale), x)
	})
})

// Renorm scales each slice of x along dim (x.Select(dim, i)) whose p-norm
// exceeds maxnorm down to maxnorm, as torch.renorm(x, p, dim, maxnorm):
// by maxnorm/(norm + 1e-7). Floats only; p ≤ 0 or NaN, a negative maxnorm
// or a 0-d x (as torch's) is an error.
func (x *Tensor) Renorm(p float64, dim int, maxnorm float64) *Tensor {
	const op = "renorm"
	if err := x.floatsOnly(op); err != nil {
		return failed(err)
	}
	if !(p > 0) {
		return failed(errorf(op, ErrValue, "p", "is "+ftoa(p)+" but renorm takes a norm p > 0, as torch's", "use p = 2 or another positive p"))
	}
	if !(maxnorm >= 0) {
		return failed(errorf(op, ErrValue, "maxnorm", "is "+ftoa(maxnorm)+" but must be 0 or more, as torch's", "give a maxnorm ≥ 0"))
	}
	if x.t.Rank() == 0 {
		return failed(errorf(op, ErrShape, "x", "is 0-d, which has no slices to renormalise (as torch's)", "give a tensor of rank 1 or more"))
	}
	d, err := sortDim(op, dim, x.t.Rank())
	if err != nil {
		return failed(err)
	}
	return apply(opRenorm, renormAttrs{p: p, dim: d, maxnorm: maxnorm}, x)
}

// nanAttrs are nanquantile's q and interpolation and nanmedian's (q 0.5,
// "lower"), the dim (all flattened where all is set) and keep.
type nanAttrs struct {
	q             float64
	interpolation string
	dim           int
	all, keep     bool
}

// nanRanks is torch's ranks for nanquantile along d of y (kept as size
// 1): q·(k-1) for the k elements of a line that are not NaN, 0 where k is
// 0, rounded as interpolation says; with the Int64 ranks below and above.
func nanRanks(y *Tensor, d int, a nanAttrs) (r, below, above *Tensor) {
	k := y.IsNaN().LogicalNot().Cast(y.t.DType).SumKeepDim(d)
	r = k.SubScalar(1).MulScalar(a.q)
	r = Where(r.LtScalar(0), r.scalarLike("nanquantile", 0), r)
	switch a.interpolation {
	case "lower":
		r = r.Floor()
	case "higher":
		r = r.Ceil()
	case "nearest":
		r = r.Round()
	}
	return r, r.Floor().Cast(Int64), r.Ceil().Cast(Int64)
}

var opNanQuantile = composite("nanquantile", []string{"x"}, func(in []*Tensor, a nanAttrs) *Tensor {
	x := in[0]
	rank := x.t.Rank()
	y, d := x, a.dim
	if a.all || rank == 0 {
		y, d = x.Reshape(-1), 0
	}
	sorted, _ := y.Sort(d, false) // NaN sorts last
	r, below, above := nanRanks(detached(y), d, a)
	if r.err != nil {
		return r
	}
	lo := sorted.Gather(d, below)
	var out *Tensor
	switch a.interpolation {
	case "linear", "midpoint":
		w := r.Sub(below.Cast(r.t.DType))
		if a.interpolation == "midpoint" {
			w = r.scalarLike("nanquantile", 0.5)
		}
		out = lo.Lerp(sorted.Gather(d, above), w.Expand(lo.Shape()...))
	default:
		out = lo
	}
	return reducedTo(out, rank, d, a.all, a.keep)
})

// NanQuantile is Quantile ignoring NaN, as torch.nanquantile(x, q, dim,
// keepdim, interpolation): each line's quantile of the elements that are
// not NaN, NaN where all are. Otherwise as Quantile.
func (x *Tensor) NanQuantile(q float64, interpolation string, dims ...int) *Tensor {
	return x.nanQuantile(q, interpolation, false, dims)
}

// NanQuantileKeepDim is NanQuantile keeping the reduced dims as size 1.
func (x *Tensor) NanQuantileKeepDim(q float64, interpolation string, dims ...int) *Tensor {
	return x.nanQuantile(q, interpolation, true, dims)
}

func (x *Tensor) nanQuantile(q float64, interpolation string, keep bool, dims []int) *Tensor {
	const op = "nanquantile"
	if err := quantileArgs(op, x, q, interpolation, dims); err != nil {
		return failed(err)
	}
	a := nanAttrs{q: q, interpolation: interpolation, keep: keep, all: len(dims) == 0}
	if len(dims) == 1 {
		a.dim, _ = ops.NormDim(dims[0], x.t.Rank(), "dims")
	}
	return apply(opNanQuantile, a, x)
}

// quantileArgs is Quantile's checks for op.
func quantileArgs(op string, x *Tensor, q float64, interpolation string, dims []int) error {
	if err := x.check(op); err != nil {
		return err
	}
	if dt := x.t.DType; dt != Float32 && dt != Float64 {
		return errorf(op, ErrDType, "x", "is "+dt.String()+" but "+op+" takes float32 or float64, as torch's", "cast it with .Cast(lathe.Float32) first")
	}
	if !(q >= 0 && q <= 1) {
		return errorf(op, ErrValue, "q", "is "+ftoa(q)+", outside [0, 1]", "give a q in [0, 1] (0.5 is the median)")
	}
	switch interpolation {
	case "linear", "lower", "higher", "midpoint", "nearest":
	default:
		return errorf(op, ErrValue, "interpolation", "is "+strconv.Quote(interpolation), `use "linear", "lower", "higher", "midpoint" or "nearest"`)
	}
	switch len(dims) {
	case 0:
	case 1:
		if _, err := ops.NormDim(dims[0], x.t.Rank(), "dims"); err != nil {
			return located(err, op)
		}
	default:
		return errorf(op, ErrValue, "dims", "has "+strconv.Itoa(len(dims))+" dims", "pass none (all elements) or one")
	}
	if x.t.Numel() == 0 {
		return errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+", with no elements", "give a nonempty tensor, as torch requires")
	}
	n := x.t.Numel()
	if len(dims) == 1 && x.t.Rank() > 0 {
		d, _ := ops.NormDim(dims[0], x.t.Rank(), "dims")
		n = x.t.Shape[d]
	}
	if n > quantileMaxLine {
		return errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+", a line of "+strconv.Itoa(n)+
			" elements, more than the 2^24 that torch's "+op+" takes", "take it over shorter lines")
	}
	return nil
}

// NanMedian is the lower median of x's elements that are not NaN, as
// torch.nanmedian(x): NaN where all are (or x is empty). Floats and
// integers; bool is ErrDType. Unlike torch, whose gradient is spread over
// the elements equal to the median, it goes to one of them.
func (x *Tensor) NanMedian() *Tensor {
	const op = "nanmedian"
	if err := x.orderDType(op); err != nil {
		return failed(err)
	}
	if x.t.Numel() == 0 {
		if !x.t.DType.IsFloat() {
			return failed(errorf(op, ErrShape, "x", "is empty and integer, which has no median", "give a nonempty tensor"))
		}
		return relabel(x.Median(), op)
	}
	return relabel(Compose(func(a []*Tensor) *Tensor {
		v, i := a[0].Reshape(-1).NanMedianDim(0, false)
		i.Release()
		return v
	}, x), op)
}

// NanMedianDim is the lower median along dim of the elements that are not
// NaN and its index, as torch.nanmedian(x, dim, keepdim): NaN and the
// middle index where all are, as torch's. Otherwise as MedianDim.
func (x *Tensor) NanMedianDim(dim int, keepDim bool) (values, indices *Tensor) {
	const op = "nanmedian"
	fail := func(err error) (*Tensor, *Tensor) { return failed(err), failed(err) }
	if err := x.orderDType(op); err != nil {
		return fail(err)
	}
	if !x.t.DType.IsFloat() {
		v, i := x.MedianDim(dim, keepDim)
		return relabel(v, op), relabel(i, op)
	}
	if x.t.Rank() == 0 {
		v, i := x.Reshape(1).NanMedianDim(0, true)
		if v.err != nil {
			return v, i
		}
		values = v.Reshape()
		ReleaseWithGraph(values, v)
		indices = i.Reshape()
		i.Release()
		return values, indices
	}
	d, err := sortDim(op, dim, x.t.Rank())
	if err != nil {
		return fail(err)
	}
	if x.t.Shape[d] == 0 {
		return fail(errorf(op, ErrIndex, "dim", "is dim "+strconv.Itoa(d)+" of shape "+dispatch.FormatShape(x.t.Shape)+
			", which is empty: there is no nanmedian of nothing", "reduce a dim of size 1 or more"))
	}
	det := x.Detach()
	idx := relabel(Compose(func(a []*Tensor) *Tensor {
		y := a[0]
		order := y.ArgSort(d, false)
		k := y.IsNaN().LogicalNot().Cast(Float32).SumKeepDim(d)
		// All NaN: the middle of the line, as torch's.
		pos := Where(k.EqScalar(0), k.scalarLike(op, float64((y.t.Shape[d]-1)/2)), k.SubScalar(1).DivScalar(2).Floor()).Cast(Int64)
		return order.Gather(d, pos)
	}, det), op)
	det.Release()
	if err := idx.Err(); err != nil {
		return failed(err), idx
	}
	values = relabel(x.Gather(d, idx), op)
	if keepDim {
		return values, callersIndices(values, idx)
	}
	out, outIdx := values.Squeeze(d), idx.Squeeze(d)
	ReleaseWithGraph(out, values, idx)
	return out, outIdx
}

// Multigammaln is Mvlgamma under torch.special's name,
// torch.special.multigammaln(x, p); its errors name it. As torch 1.13's
// (which does not check that x is above (p-1)/2), x at or below (p-1)/2
// gives what the formula gives.
func (x *Tensor) Multigammaln(p int) *Tensor {
	const op = "special_multigammaln"
	if err := x.floatsOnly(op); err != nil {
		return failed(err)
	}
	if p < 1 {
		return failed(errorf(op, ErrValue, "p", "is "+strconv.Itoa(p)+" but must be 1 or more", "use a dimension p ≥ 1"))
	}
	return apply(opMvlgamma, mathAttrs{a: float64(p)}, x)
}
