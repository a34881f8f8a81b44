package lathe

import (
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
