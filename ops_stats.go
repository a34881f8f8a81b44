package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// Statistics of torch built on lathe's reductions and MatMul: var_mean and
// std_mean (two results from Var or Std and Mean), cov and corrcoef
// (torch's aten/src/ATen/native/Correlation.cpp, written with lathe's
// ops, so every device and every order of gradient).

// VarMean is Var and Mean over dims, as torch.var_mean(x, dims,
// unbiased): the variance (divided by N-1 when unbiased, N otherwise) and
// the mean. Floats only. On an error both results carry it.
func (x *Tensor) VarMean(unbiased bool, dims ...int) (variance, mean *Tensor) {
	return x.statMean("var_mean", false, false, unbiased, dims)
}

// VarMeanKeepDim is VarMean keeping the reduced dims as size 1.
func (x *Tensor) VarMeanKeepDim(unbiased bool, dims ...int) (variance, mean *Tensor) {
	return x.statMean("var_mean", false, true, unbiased, dims)
}

// StdMean is Std and Mean over dims, as torch.std_mean(x, dims,
// unbiased); otherwise as VarMean.
func (x *Tensor) StdMean(unbiased bool, dims ...int) (std, mean *Tensor) {
	return x.statMean("std_mean", true, false, unbiased, dims)
}

// StdMeanKeepDim is StdMean keeping the reduced dims as size 1.
func (x *Tensor) StdMeanKeepDim(unbiased bool, dims ...int) (std, mean *Tensor) {
	return x.statMean("std_mean", true, true, unbiased, dims)
}

func (x *Tensor) statMean(op string, std, keep, unbiased bool, dims []int) (*Tensor, *Tensor) {
	if err := x.floatsOnly(op); err != nil {
		return failed(err), failed(err)
	}
	var s *Tensor
	switch {
	case std && keep:
		s = x.StdKeepDim(unbiased, dims...)
	case std:
		s = x.Std(unbiased, dims...)
	case keep:
		s = x.VarKeepDim(unbiased, dims...)
	default:
		s = x.Var(unbiased, dims...)
	}
	if s.err != nil {
		s = relabel(s, op)
		return s, failed(s.err)
	}
	var m *Tensor
	if keep {
		m = x.MeanKeepDim(dims...)
	} else {
		m = x.Mean(dims...)
	}
	if m.err != nil {
		s.Release()
		m = relabel(m, op)
		return failed(m.err), m
	}
	return s, m
}

// covAttrs are cov's correction, which weights it has (the tensors
// follow x in that order) and whether it is corrcoef.
type covAttrs struct {
	correction int
	fw, aw     bool
	corr       bool
}

func covOp(variant string, args ...string) *dispatch.Op[covAttrs] {
	name := "cov"
	if variant == "corrcoef" {
		name, variant = "corrcoef", ""
	}
	return compositeVariant(name, variant, append([]string{"x"}, args...), func(in []*Tensor, a covAttrs) *Tensor {
		c := cov(in, a)
		if a.corr {
			return corrcoef(c)
		}
		return c
	})
}

var (
	opCov         = covOp("")
	opCovF        = covOp("fweights", "fweights")
	opCovA        = covOp("aweights", "aweights")
	opCovFA       = covOp("weights", "fweights", "aweights")
	opCorrcoef    = covOp("corrcoef")
	covOpsByFlags = [2][2]*dispatch.Op[covAttrs]{{opCov, opCovA}, {opCovF, opCovFA}}
)

// cov is torch's: the (weighted) mean of each variable taken away, the
// products summed by a MatMul and divided by Σw - correction·(Σw·a/Σw
// where aweights are given), clamped at 0.
func cov(in []*Tensor, a covAttrs) *Tensor {
	const op = "cov"
	x := in[0]
	if !x.t.DType.IsFloat() {
		x = x.Cast(Float32) // torch's default dtype
		if x.err != nil {
			return x
		}
	}
	if x.t.Rank() < 2 {
		x = x.Reshape(1, x.t.Numel())
	}
	n := x.t.Shape[1]
	var w, aw *Tensor
	rest := in[1:]
	if a.fw {
		w, rest = rest[0].Cast(x.t.DType), rest[1:]
	}
	if a.aw {
		aw = rest[0].Cast(x.t.DType)
		if w != nil {
			w = w.Mul(aw)
		} else {
			w = aw
		}
	}
	var wsum, avg, norm *Tensor
	if w == nil {
		wsum = x.scalarLike(op, float64(n))
		avg = x.Sum(1).Div(wsum)
		norm = wsum.SubScalar(float64(a.correction))
	} else {
		wsum = w.Sum()
		avg = x.Mul(w).Sum(1).Div(wsum)
		switch {
		case a.correction == 0:
			norm = wsum
		case aw != nil:
			norm = wsum.Sub(w.Mul(aw).Sum().Div(wsum).MulScalar(float64(a.correction)))
		default:
			norm = wsum.SubScalar(float64(a.correction))
		}
	}
	// torch warns where the degrees of freedom are ≤ 0 and divides by 0.
	norm = Where(norm.LeScalar(0), norm.scalarLike(op, 0), norm)
	xc := x.Sub(avg.Unsqueeze(1))
	xw := xc
	if w != nil {
		xw = xc.Mul(w)
	}
	c := xc.MatMul(xw.MT()).Div(norm)
	if c.t != nil && c.t.Shape[0] == 1 {
		c = c.Reshape()
	}
	return c
}

// corrcoef is torch's: cov normalised by the outer product of the
// standard deviations, clipped to [-1, 1].
func corrcoef(c *Tensor) *Tensor {
	if c.err != nil {
		return c
	}
	if c.t.Rank() == 0 {
		return c.Div(c)
	}
	sd := c.Diagonal(0, 0, 1).Sqrt()
	c = c.Div(sd.Unsqueeze(1)).Div(sd.Unsqueeze(0))
	return c.Clamp(-1, 1)
}

// covArgs checks cov's x and weights.
func covArgs(op string, x, fweights, aweights *Tensor) error {
	if err := x.check(op); err != nil {
		return err
	}
	if x.t.Rank() > 2 {
		return errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" but "+op+" takes at most 2 dims (variables × observations), as torch's",
			"reshape it to [variables, observations]")
	}
	n := x.t.Numel()
	if x.t.Rank() == 2 {
		n = x.t.Shape[1]
	}
	for _, w := range []struct {
		name string
		t    *Tensor
	}{{"fweights", fweights}, {"aweights", aweights}} {
		if w.t == nil {
			continue
		}
		if err := w.t.CheckArg(op, w.name); err != nil {
			return err
		}
		if w.t.t.Rank() > 1 {
			return errorf(op, ErrShape, w.name, "has shape "+dispatch.FormatShape(w.t.t.Shape)+" but cov takes one weight per observation (rank 0 or 1)",
				"give a vector of "+strconv.Itoa(n)+" weights")
		}
		if w.t.t.Numel() != n {
			return errorf(op, ErrShape, w.name, "has "+strconv.Itoa(w.t.t.Numel())+" elements but x has "+strconv.Itoa(n)+" observations",
				"give one weight per observation")
		}
		isInt := w.t.t.DType.IsInt()
		if w.name == "fweights" && !isInt {
			return errorf(op, ErrDType, w.name, "is "+w.t.t.DType.String()+" but frequency weights are integers, as torch's", "cast it with .Cast(lathe.Int64)")
		}
		if w.name == "aweights" && !w.t.t.DType.IsFloat() {
			return errorf(op, ErrDType, w.name, "is "+w.t.t.DType.String()+" but observation weights are floats, as torch's", "cast it with .Cast(lathe.Float32)")
		}
		lt := w.t.LtScalar(0)
		neg := lt.Any()
		v, err := neg.Bools()
		releaseAll([]*Tensor{lt, neg})
		if err != nil {
			return located(err, op)
		}
		if v[0] {
			return errorf(op, ErrValue, w.name, "has a negative weight, which cov refuses (as torch's)", "give weights ≥ 0")
		}
	}
	return nil
}

// Cov is the covariance matrix of the variables in the rows of x (a 1-D x
// is one variable), as torch.cov(x, correction=correction,
// fweights=fweights, aweights=aweights) (torch's default correction is 1,
// Bessel's): fweights are integer counts of each observation and aweights
// float weights of importance, either or both nil. A single variable gives
// a 0-d result. Integer x is computed in float32, as torch's. Degrees of
// freedom ≤ 0 divide by 0 (Inf or NaN), where torch also warns.
func (x *Tensor) Cov(correction int, fweights, aweights *Tensor) *Tensor {
	if err := covArgs("cov", x, fweights, aweights); err != nil {
		return failed(err)
	}
	args := []*Tensor{x}
	if fweights != nil {
		args = append(args, fweights)
	}
	if aweights != nil {
		args = append(args, aweights)
	}
	op := covOpsByFlags[b2i(fweights != nil)][b2i(aweights != nil)]
	return apply(op, covAttrs{correction: correction, fw: fweights != nil, aw: aweights != nil}, args...)
}

// Corrcoef is the matrix of Pearson's correlation coefficients of the
// variables in the rows of x, as torch.corrcoef: Cov(1) divided by the
// outer product of the standard deviations and clipped to [-1, 1]. A
// variable of zero variance gives NaN, as torch's.
func (x *Tensor) Corrcoef() *Tensor {
	if err := covArgs("corrcoef", x, nil, nil); err != nil {
		return failed(err)
	}
	return apply(opCorrcoef, covAttrs{correction: 1, corr: true}, x)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Histogram counts x's elements in bins equal bins over [min(x), max(x)]
// (widened by 0.5 each way where they are equal, [0, 1] for an empty x),
// as torch.histogram(x, bins, weight=weight, density=density): hist and
// the bins+1 bin_edges. See HistogramRange.
func (x *Tensor) Histogram(bins int, weight *Tensor, density bool) (hist, binEdges *Tensor) {
	return x.histogram(bins, math.NaN(), math.NaN(), weight, density)
}

// HistogramRange is Histogram over [lo, hi], as torch.histogram(x, bins,
// range=(lo, hi), weight, density): an element outside it is not counted,
// one equal to hi goes in the last bin. The edges are torch's linspace in
// x's dtype, and an element's bin is found against them (torch's local
// search), so that both agree at the edges. Each element adds its weight
// (1 where weight is nil; else a tensor of x's shape and dtype); density
// divides by the total and by each bin's width. Float32 and float64 only,
// as torch's; bins < 1, lo > hi or a range that is not finite is an
// error. The results have no gradient (torch's histogram has none). It
// reads x's range (where not given) and counts on the device (Bincount).
func (x *Tensor) HistogramRange(bins int, lo, hi float64, weight *Tensor, density bool) (hist, binEdges *Tensor) {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		err := errorf("histogram", ErrValue, "range", "is ["+ftoa(lo)+", "+ftoa(hi)+"], which is not finite (as torch's)",
			"give a finite range, or use Histogram for x's own")
		return failed(err), failed(err)
	}
	return x.histogram(bins, lo, hi, weight, density)
}

func (x *Tensor) histogram(bins int, lo, hi float64, weight *Tensor, density bool) (*Tensor, *Tensor) {
	const op = "histogram"
	fail := func(err error) (*Tensor, *Tensor) { return failed(err), failed(err) }
	if err := x.check(op); err != nil {
		return fail(err)
	}
	dt := x.t.DType
	if dt != Float32 && dt != Float64 {
		return fail(errorf(op, ErrDType, "x", "is "+dt.String()+" but histogram takes float32 or float64, as torch's", "cast it with .Cast(lathe.Float32) first"))
	}
	if bins < 1 {
		return fail(errorf(op, ErrValue, "bins", "is "+strconv.Itoa(bins)+" but must be 1 or more", "give a number of bins ≥ 1"))
	}
	if bins > maxHistogramBins {
		return fail(errorf(op, ErrOutOfMemory, "bins", "is "+strconv.Itoa(bins)+", more than the 2^28 bins whose edges lathe builds on the host",
			"use fewer bins"))
	}
	if weight != nil {
		if err := weight.CheckArg(op, "weight"); err != nil {
			return fail(err)
		}
		if weight.t.DType != dt {
			return fail(errorf(op, ErrDType, "weight", "is "+weight.t.DType.String()+" but x is "+dt.String()+" (as torch's, one dtype)", "cast it with .Cast("+dt.GoString()+")"))
		}
		if !equalShapes(weight.t.Shape, x.t.Shape) {
			return fail(errorf(op, ErrShape, "weight", "has shape "+dispatch.FormatShape(weight.t.Shape)+" but x has "+dispatch.FormatShape(x.t.Shape),
				"give one weight per element"))
		}
		if weight.t.Device != x.t.Device {
			return fail(errorf(op, ErrDevice, "weight", "is on "+weight.t.Device.String()+" but x is on "+x.t.Device.String(), "move it with .To("+x.t.Device.GoString()+")"))
		}
	}
	if math.IsNaN(lo) { // x's own range
		lo, hi = 0, 1
		if x.t.Numel() > 0 {
			var err error
			if lo, err = scalarOf(op, x.Detach(), (*Tensor).Min); err == nil {
				hi, err = scalarOf(op, x.Detach(), (*Tensor).Max)
			}
			if err != nil {
				return fail(err)
			}
		}
	}
	round := func(v float64) float64 {
		if dt == Float32 {
			return float64(float32(v))
		}
		return v
	}
	lo, hi = round(lo), round(hi)
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return fail(errorf(op, ErrValue, "range", "is ["+ftoa(lo)+", "+ftoa(hi)+"], which is not finite (as torch's)", "give a finite range, or remove the NaN and Inf from x"))
	}
	if lo > hi {
		return fail(errorf(op, ErrValue, "range", "is ["+ftoa(lo)+", "+ftoa(hi)+"]: min exceeds max", "give min ≤ max"))
	}
	if lo == hi {
		lo, hi = round(lo-0.5), round(hi+0.5)
	}
	// torch's linspace in x's dtype: from the start for the first half,
	// from the end for the second.
	edges := make([]float64, bins+1)
	step := round(round(hi-lo) / float64(bins))
	for i := range edges {
		if i < (bins+1)/2 {
			edges[i] = round(lo + round(step*float64(i)))
		} else {
			edges[i] = round(hi - round(step*float64(bins-i)))
		}
	}
	var e *Tensor
	if dt == Float32 {
		f := make([]float32, len(edges))
		for i, v := range edges {
			f[i] = float32(v)
		}
		e = FromSlice(CPU, f).To(x.t.Device)
	} else {
		e = FromSlice(CPU, edges).To(x.t.Device)
	}
	if e.err != nil {
		return fail(e.err)
	}
	// Detached, joined to x's composite where Histogram runs in one, so
	// that hist goes with its intermediates as an op's result does.
	args := []*Tensor{detached(x), e}
	if weight != nil {
		args = append(args, detached(weight))
	}
	hist := relabel(Compose(func(a []*Tensor) *Tensor {
		v, edges := a[0].Reshape(-1), a[1]
		w := v.scalarLike(op, 1).Expand(v.Shape()...)
		if len(a) > 2 {
			w = a[2].Reshape(-1)
		}
		pos := v.Bucketize(edges, true, false).SubScalar(1)
		pos = Where(pos.EqScalar(float64(bins)), pos.SubScalar(1), pos)
		inside := v.GeScalar(lo).LogicalAnd(v.LeScalar(hi))
		pos = Where(inside, pos, pos.scalarLike(op, float64(bins)))
		w = Where(inside, w, w.scalarLike(op, 0))
		h := pos.Bincount(w, bins+1).Narrow(0, 0, bins)
		if density {
			widths := edges.Narrow(0, 1, bins).Sub(edges.Narrow(0, 0, bins))
			h = h.Div(h.Sum()).Div(widths)
		}
		return h
	}, args...), op)
	for _, t := range args[:1] {
		t.Release()
	}
	if weight != nil {
		args[2].Release()
	}
	if hist.err != nil {
		e.Release()
		return hist, failed(hist.err)
	}
	return hist, e
}

// maxHistogramBins is the most bins Histogram takes: their edges are
// made on the host, two gigabytes of float64s at this size.
const maxHistogramBins = 1 << 28

// scalarOf is f (Min or Max) of all of x's elements, read back; x is
// released.
func scalarOf(op string, x *Tensor, f func(*Tensor, ...int) *Tensor) (float64, error) {
	r := f(x)
	defer r.Release()
	defer x.Release()
	v, err := r.Item()
	if err != nil {
		return 0, located(err, op)
	}
	return v, nil
}
