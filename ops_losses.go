package lathe

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The regression, probability and margin losses of torch.nn.functional
// beyond mse_loss, cross_entropy and nll_loss: l1_loss, smooth_l1_loss,
// huber_loss, binary_cross_entropy, kl_div, margin_ranking_loss,
// hinge_embedding_loss, soft_margin_loss, multilabel_soft_margin_loss,
// cosine_embedding_loss, triplet_margin_loss, poisson_nll_loss and
// gaussian_nll_loss. Each is a composite op (registered in dispatch, so
// that its arguments are validated and its errors name it) of ops every
// backend has, so that each runs on every device and autodiff
// differentiates it, to any order, with the rules of those ops. The
// formulas are torch 1.13's (aten/src/ATen/native/Loss.cpp and
// torch/nn/functional.py), each cited where it is written.
//
// As lathe's MSELoss, the losses that torch computes on "input" and
// "target" of one shape refuse targets of another shape, which torch
// broadcasts with a warning. The parameters are options (Beta, Delta,
// Margin, ...), with torch's defaults; an option that a loss does not
// take is refused (ErrValue naming it), not ignored.

// The options beyond reduction, ignore index and class weights; a loss
// refuses those it does not take (lossOptions.only).
const (
	optBeta = 1 << iota
	optDelta
	optMargin
	optLogTarget
	optWeight
	optP
	optEps
	optSwap
	optLogInput
	optFull
)

var optionNames = map[int]string{optBeta: "Beta", optDelta: "Delta", optMargin: "Margin", optLogTarget: "LogTarget",
	optWeight: "LossWeight", optP: "NormP", optEps: "Eps", optSwap: "Swap", optLogInput: "LogInput", optFull: "FullLoss"}

// ReduceBatchMean is KLDivLoss's reduction "batchmean": the sum divided by
// the size of x's first dim (by 1 for a 0-d x), which is the mathematical
// KL divergence of a batch. Only KLDivLoss takes it (Valid is false for it).
const ReduceBatchMean Reduction = 3

// Beta sets SmoothL1Loss's beta (≥ 0; 1 by default, as torch's).
func Beta(b float64) LossOption {
	return func(o *lossOptions) { o.beta, o.set = b, o.set|optBeta }
}

// Delta sets HuberLoss's delta (> 0; 1 by default, as torch's).
func Delta(d float64) LossOption {
	return func(o *lossOptions) { o.delta, o.set = d, o.set|optDelta }
}

// Margin sets the margin of the margin losses (MarginRankingLoss,
// CosineEmbeddingLoss, HingeEmbeddingLoss and TripletMarginLoss; torch's
// defaults, 0, 0, 1 and 1, where it is not set).
func Margin(m float64) LossOption {
	return func(o *lossOptions) { o.margin, o.set = m, o.set|optMargin }
}

// LogTarget says that KLDivLoss's target holds log-probabilities (torch's
// log_target=True).
func LogTarget() LossOption {
	return func(o *lossOptions) { o.logTarget, o.set = true, o.set|optLogTarget }
}

// LossWeight gives BCELoss a weight that broadcasts to x's shape, and
// MultiLabelSoftMarginLoss one per class ([C]), as torch's weight
// argument of those losses: each element's (class's) loss is scaled by it.
// It must be a float tensor on x's device; it is cast to x's dtype.
func LossWeight(w *Tensor) LossOption {
	return func(o *lossOptions) { o.elemWeight, o.set = w, o.set|optWeight }
}

// NormP sets the order of the norm of TripletMarginLoss (2 by default).
func NormP(p float64) LossOption {
	return func(o *lossOptions) { o.p, o.set = p, o.set|optP }
}

// Eps sets the small constant of TripletMarginLoss (1e-6 by default),
// PoissonNLLLoss (1e-8) and GaussianNLLLoss (1e-6), as torch's eps.
func Eps(eps float64) LossOption {
	return func(o *lossOptions) { o.eps, o.set = eps, o.set|optEps }
}

// Swap makes TripletMarginLoss use the distance swap (torch's swap=True).
func Swap() LossOption {
	return func(o *lossOptions) { o.swap, o.set = true, o.set|optSwap }
}

// LogInput sets whether PoissonNLLLoss's x is the log of the rate (true,
// the default, as torch's log_input) or the rate itself.
func LogInput(b bool) LossOption {
	return func(o *lossOptions) { o.logInput, o.set = b, o.set|optLogInput }
}

// FullLoss adds the constant terms to PoissonNLLLoss (the Stirling
// approximation) and GaussianNLLLoss (½·log 2π), as torch's full=True.
func FullLoss() LossOption {
	return func(o *lossOptions) { o.full, o.set = true, o.set|optFull }
}

// only refuses an option that the loss op does not take (allowed is the
// set it takes), a reduction that is not valid, and the class losses'
// options (ignore index, class weights).
func (o lossOptions) only(allowed int, batchMean bool) *Error {
	if !o.reduction.Valid() && !(batchMean && o.reduction == ReduceBatchMean) {
		e := reductionError(o.reduction)
		if batchMean {
			e.Detail = "is " + o.reduction.String() + ", which is none of ReduceMean, ReduceSum, ReduceNone and ReduceBatchMean"
			e.Fix = "pass lathe.ReduceMean, lathe.ReduceSum, lathe.ReduceNone or lathe.ReduceBatchMean"
		}
		return e
	}
	if o.weight != nil {
		return &Error{Kind: ErrValue, Arg: "weight", Detail: "is set with ClassWeights, which only the class losses take",
			Fix: "use LossWeight for this loss's weight, where it takes one"}
	}
	if o.ignoreIndex != -100 {
		return &Error{Kind: ErrValue, Arg: "ignore_index", Detail: "is set, but only the class losses take it", Fix: "leave IgnoreIndex out"}
	}
	for bit := 1; bit <= optFull; bit <<= 1 {
		if o.set&bit != 0 && allowed&bit == 0 {
			return &Error{Kind: ErrValue, Arg: optionNames[bit], Detail: "is not an option of this loss",
				Fix: "leave " + optionNames[bit] + " out"}
		}
	}
	return nil
}

// floatPair checks x and target of an elementwise loss: float dtypes
// (integers and bool are refused, as torch refuses them for the mean),
// target of x's shape; and returns both promoted to their result type,
// as torch's losses promote (a float32 x and a float64 target compute in
// float64).
func floatPair(op string, x, target *Tensor) (*Tensor, *Tensor, *Error) {
	if err := floatArg(x, "x"); err != nil {
		return nil, nil, err
	}
	if err := floatArg(target, "target"); err != nil {
		return nil, nil, err
	}
	if err := sameShape(x, target, "target", "x"); err != nil {
		return nil, nil, err
	}
	dt := dispatch.ResultType(dispatch.OperandOf(x.t), dispatch.OperandOf(target.t))
	return x.promoteTo(op, "x", dt), target.promoteTo(op, "target", dt), nil
}

// floatArg refuses a tensor that is not of a float dtype.
func floatArg(t *Tensor, arg string) *Error {
	if t.t.DType.IsFloat() {
		return nil
	}
	return &Error{Kind: ErrDType, Arg: arg, Found: t.t.DType.String(),
		Detail: "is " + t.t.DType.String() + " but the loss takes float16, bfloat16, float32 or float64 (as torch's)",
		Fix:    "cast it with .Cast(lathe.Float32)"}
}

// sameShape refuses t (the argument arg) where its shape is not ref's (the
// argument refArg).
func sameShape(ref, t *Tensor, arg, refArg string) *Error {
	if slices.Equal(ref.t.Shape, t.t.Shape) {
		return nil
	}
	return &Error{Kind: ErrShape, Arg: arg, Expected: dispatch.FormatShape(ref.t.Shape), Found: dispatch.FormatShape(t.t.Shape),
		Detail: "has shape " + dispatch.FormatShape(t.t.Shape) + " but " + refArg + " has " + dispatch.FormatShape(ref.t.Shape),
		Fix:    "give " + arg + " the shape of " + refArg + " (lathe does not broadcast losses)"}
}

// reduced applies o's reduction to a loss of elements; ReduceBatchMean
// divides the sum by the size of dim 0 of x (1 for a 0-d x).
func reduced(loss *Tensor, o lossOptions, x *Tensor) *Tensor {
	if o.reduction == ReduceBatchMean {
		n := 1
		if x.t.Rank() > 0 {
			n = x.t.Shape[0]
		}
		if n == 0 {
			return loss.Sum().DivScalar(0) // 0/0: NaN, as torch's
		}
		return loss.Sum().DivScalar(float64(n))
	}
	return reduceLoss(loss, o.reduction, nil)
}

func l1Loss(op string, in []*Tensor, o lossOptions) *Tensor {
	x, target, err := floatPair(op, in[0], in[1])
	if err != nil {
		return failed(err)
	}
	return reduceLoss(x.Sub(target).Abs(), o.reduction, nil)
}

var (
	opL1Loss = composite("l1_loss", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		if err := o.only(0, false); err != nil {
			return failed(err)
		}
		return l1Loss("l1_loss", in, o)
	})
	// torch's smooth_l1_loss (Loss.cpp, smooth_l1_kernel): with
	// z = |x - target|, 0.5·z²/beta where z < beta, else z - 0.5·beta;
	// beta 0 is l1_loss.
	opSmoothL1Loss = composite("smooth_l1_loss", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		if err := o.only(optBeta, false); err != nil {
			return failed(err)
		}
		if !(o.beta >= 0) {
			return failed(&Error{Kind: ErrValue, Arg: "beta", Found: strconv.FormatFloat(o.beta, 'g', -1, 64),
				Detail: "is " + strconv.FormatFloat(o.beta, 'g', -1, 64) + ", but beta must be ≥ 0 (as torch's)", Fix: "pass a beta ≥ 0"})
		}
		if o.beta == 0 {
			return l1Loss("smooth_l1_loss", in, o)
		}
		x, target, err := floatPair("smooth_l1_loss", in[0], in[1])
		if err != nil {
			return failed(err)
		}
		return reduceLoss(quadraticNear(x.Sub(target), o.beta, 0.5/o.beta, 1, 0.5*o.beta), o.reduction, nil)
	})
	// torch's huber_loss (Loss.cpp, huber_kernel): with z = |x - target|,
	// 0.5·z² where z < delta, else delta·(z - 0.5·delta).
	opHuberLoss = composite("huber_loss", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		if err := o.only(optDelta, false); err != nil {
			return failed(err)
		}
		if !(o.delta > 0) {
			return failed(&Error{Kind: ErrValue, Arg: "delta", Found: strconv.FormatFloat(o.delta, 'g', -1, 64),
				Detail: "is " + strconv.FormatFloat(o.delta, 'g', -1, 64) + ", but delta must be > 0 (as torch's)", Fix: "pass a delta > 0"})
		}
		x, target, err := floatPair("huber_loss", in[0], in[1])
		if err != nil {
			return failed(err)
		}
		// torch's huber_loss writes into a tensor of x's dtype: a float32
		// x and a float64 target compute in float64 and give float32.
		loss := quadraticNear(x.Sub(target), o.delta, 0.5, o.delta, 0.5*o.delta*o.delta)
		if dt := in[0].t.DType; loss.err == nil && loss.t.DType != dt {
			loss = loss.Cast(dt)
		}
		return reduceLoss(loss, o.reduction, nil)
	})
	opBCELoss         = composite("binary_cross_entropy", []string{"x", "target", "in_range"}, bceBody)
	opBCELossWeighted = compositeVariant("binary_cross_entropy", "weighted", []string{"x", "target", "in_range", "weight"}, bceBody)
	opKLDivLoss       = composite("kl_div", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		if err := o.only(optLogTarget, true); err != nil {
			return failed(err)
		}
		x, target, err := floatPair("kl_div", in[0], in[1])
		if err != nil {
			return failed(err)
		}
		// torch 1.13's kl_div (Loss.cpp): exp(target)·(target - x) with
		// log_target, else xlogy(target, target) - target·x, where
		// xlogy(0, 0) is 0 and a negative target gives NaN.
		var loss *Tensor
		if o.logTarget {
			loss = target.Exp().Mul(target.Sub(x))
		} else {
			zero := target.EqScalar(0)
			safe := Where(zero, target.scalarLike("kl_div", 1), target)
			tlogt := Where(zero, target.scalarLike("kl_div", 0), target.Mul(safe.Log()))
			loss = tlogt.Sub(target.Mul(x))
		}
		return reduced(loss, o, x)
	})
)

// quadraticNear is a·d² where |d| < bound, else b·|d| - c: smooth_l1 and
// huber. The square is taken of d where it is used and of 0 elsewhere, so
// that an infinite d has the gradient of the linear branch, not 0·∞.
func quadraticNear(d *Tensor, bound, a, b, c float64) *Tensor {
	z := d.Abs()
	near := z.LtScalar(bound)
	ds := Where(near, d, d.scalarLike("loss", 0))
	return Where(near, ds.Square().MulScalar(a), z.MulScalar(b).SubScalar(c))
}

// L1Loss is the mean (or sum, or none) of |x - target|, as
// torch.nn.functional.l1_loss. x and target are float tensors of one
// shape (a float32 and a float64 compute in float64); integer inputs are
// refused (torch refuses them for the mean, and computes the others).
func (x *Tensor) L1Loss(target *Tensor, opts ...LossOption) *Tensor {
	return apply(opL1Loss, lossOpts(opts), x, target)
}

// SmoothL1Loss is torch.nn.functional.smooth_l1_loss: with
// z = |x - target|, 0.5·z²/β where z < β, else z - 0.5·β, reduced; β is
// Beta (1 by default, ≥ 0; 0 is L1Loss). Shapes and dtypes as L1Loss.
func (x *Tensor) SmoothL1Loss(target *Tensor, opts ...LossOption) *Tensor {
	o := lossOpts(opts)
	if o.set&optBeta == 0 {
		o.beta = 1
	}
	return apply(opSmoothL1Loss, o, x, target)
}

// HuberLoss is torch.nn.functional.huber_loss: with z = |x - target|,
// 0.5·z² where z < δ, else δ·(z - 0.5·δ), reduced; δ is Delta (1 by
// default, > 0). Shapes as L1Loss; the result has x's dtype, as torch's
// (computed in the promoted dtype of x and target, then rounded).
func (x *Tensor) HuberLoss(target *Tensor, opts ...LossOption) *Tensor {
	o := lossOpts(opts)
	if o.set&optDelta == 0 {
		o.delta = 1
	}
	return apply(opHuberLoss, o, x, target)
}

// KLDivLoss is torch.nn.functional.kl_div: the pointwise
// target·(log target - x) of log-probabilities x and probabilities
// target (with LogTarget, exp(target)·(target - x) of log-probabilities
// target), reduced. ReduceBatchMean divides the sum by the batch size
// (x's dim 0), torch's "batchmean"; ReduceMean divides by the number of
// elements, as torch's "mean". A target of 0 contributes 0 and a negative
// one NaN, as torch's xlogy. Shapes and dtypes as L1Loss.
//
// The gradient w.r.t. a target of exactly 0 (without LogTarget) is -x;
// torch's is NaN (its xlogy's backward divides 0 by 0).
func (x *Tensor) KLDivLoss(target *Tensor, opts ...LossOption) *Tensor {
	return apply(opKLDivLoss, lossOpts(opts), x, target)
}

// BCELoss is torch.nn.functional.binary_cross_entropy: the loss
// -w·(target·log x + (1-target)·log(1-x)) of probabilities x in [0, 1]
// against target of x's shape and dtype, each log clamped to ≥ -100 as
// torch clamps it, reduced; w is LossWeight's weight (broadcast to x's
// shape), 1 without it. A value of x outside [0, 1] (or NaN) is an
// ErrValue naming x, as torch refuses it; on a GPU the check runs there
// and its error comes with the next synchronisation (the result's Err,
// or Synchronize). The target is not checked, as torch's is not.
// float16 and bfloat16 are computed in float32 and rounded once (torch's
// cpu refuses them; its cuda computes them so).
//
// The gradient w.r.t. x is torch's, (x - target)/(x·(1-x))·w, inside
// (0, 1); at x exactly 0 or 1, where a log is clamped, it is that of the
// clamped formula ((1-target)·w at 0, -target·w at 1), where torch's is
// (x - target)/1e-12·w. Likewise the gradient w.r.t. the target is
// log(1-x) - log(x) with the logs clamped (±100 at the ends), where
// torch's is ±Inf.
func (x *Tensor) BCELoss(target *Tensor, opts ...LossOption) *Tensor {
	const op = "binary_cross_entropy"
	o := lossOpts(opts)
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if !x.t.DType.IsFloat() {
		return failed(errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but the loss takes float probabilities", "cast it with .Cast(lathe.Float32)"))
	}
	// 1 where x is in [0, 1], checked by the op's value check where x
	// lives; made outside the op, which checks its arguments.
	inRange := Compose(func(a []*Tensor) *Tensor { return a[0].GeScalar(0).LogicalAnd(a[0].LeScalar(1)).Cast(Int32) }, x)
	var out *Tensor
	if o.elemWeight != nil {
		out = apply(opBCELossWeighted, o, x, target, inRange, o.elemWeight)
	} else {
		out = apply(opBCELoss, o, x, target, inRange)
	}
	ReleaseWithGraph(out, inRange)
	return out
}

func init() {
	for _, op := range []*dispatch.Op[lossOptions]{opBCELoss, opBCELossWeighted} {
		op.Checks = func(in []*dispatch.Tensor, _ lossOptions) []dispatch.ValueCheck {
			if in[2].DType != Int32 {
				return nil
			}
			return []dispatch.ValueCheck{{Arg: 2, Min: 1, Max: 1, Fail: func(int64) *dispatch.Error {
				return &Error{Kind: ErrValue, Arg: "x", Detail: "holds a value outside [0, 1] (or NaN), which is no probability (torch refuses it too)",
					Fix: "pass probabilities, e.g. x.Sigmoid(), or use BCEWithLogits on the logits"}
			}}}
		}
	}
}

func bceBody(in []*Tensor, o lossOptions) *Tensor {
	const op = "binary_cross_entropy"
	if err := o.only(optWeight, false); err != nil {
		return failed(err)
	}
	x, target := in[0], in[1]
	if err := floatArg(x, "x"); err != nil {
		return failed(err)
	}
	if target.t.DType != x.t.DType {
		return failed(&Error{Kind: ErrDType, Arg: "target", Expected: x.t.DType.String(), Found: target.t.DType.String(),
			Detail: "is " + target.t.DType.String() + " but x is " + x.t.DType.String() + " (torch does not promote them either)",
			Fix:    "cast it with .Cast(lathe." + x.t.DType.GoString() + ")"})
	}
	if err := sameShape(x, target, "target", "x"); err != nil {
		return failed(err)
	}
	var w *Tensor
	if len(in) > 3 {
		w = in[3]
		if err := floatArg(w, "weight"); err != nil {
			return failed(err)
		}
		if s, ok := ops.BroadcastShapes(x.t.Shape, w.t.Shape); !ok || !slices.Equal(s, x.t.Shape) {
			return failed(&Error{Kind: ErrShape, Arg: "weight", Expected: dispatch.FormatShape(x.t.Shape), Found: dispatch.FormatShape(w.t.Shape),
				Detail: "has shape " + dispatch.FormatShape(w.t.Shape) + ", which does not broadcast to x's " + dispatch.FormatShape(x.t.Shape),
				Fix:    "give a weight that broadcasts to x's shape"})
		}
		w = w.promoteTo(op, "weight", x.t.DType)
	}
	args := []*Tensor{x, target}
	if w != nil {
		args = append(args, w)
	}
	return inFloat32(args, func(a []*Tensor) *Tensor {
		x, y := a[0], a[1]
		// torch's binary_cross_entropy (Loss.cpp):
		// (y - 1)·max(log(1 - x), -100) - y·max(log(x), -100). The log
		// of 0 is taken of a safe 1 and replaced, so that its gradient
		// is 0, not 0·∞.
		lx := clampedLog(x)
		l1x := clampedLog(x.scalarLike(op, 1).Sub(x))
		loss := y.SubScalar(1).Mul(l1x).Sub(y.Mul(lx))
		if len(a) > 2 {
			loss = loss.Mul(a[2])
		}
		return reduceLoss(loss, o.reduction, nil)
	})
}

// clampedLog is max(log u, -100), with u = 0 giving -100 and gradient 0.
func clampedLog(u *Tensor) *Tensor {
	pos := u.GtScalar(0)
	safe := Where(pos, u, u.scalarLike("binary_cross_entropy", 1))
	return Where(pos, safe.Log().MaximumScalar(-100), u.scalarLike("binary_cross_entropy", -100))
}
