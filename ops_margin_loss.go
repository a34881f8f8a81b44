package lathe

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The margin losses and the likelihood losses of torch.nn.functional
// (ops_losses.go says what they share): margin_ranking_loss,
// hinge_embedding_loss, soft_margin_loss, multilabel_soft_margin_loss,
// cosine_embedding_loss, triplet_margin_loss, poisson_nll_loss and
// gaussian_nll_loss. Each formula is torch 1.13's (Loss.cpp, or
// torch/nn/functional.py where the loss is written in Python).

// promoteAll checks that args (named names) have one shape and returns
// them cast to their result type, float32 where that is an integer or bool
// (torch's losses compute integers as floats once a float margin or exp
// meets them).
func promoteAll(op string, names []string, args ...*Tensor) ([]*Tensor, *Error) {
	operands := make([]dispatch.Operand, len(args))
	for i, a := range args {
		if i > 0 {
			if err := sameShape(args[0], a, names[i], names[0]); err != nil {
				return nil, err
			}
		}
		operands[i] = dispatch.OperandOf(a.t)
	}
	dt := dispatch.ResultType(operands...)
	if !dt.IsFloat() {
		dt = dispatch.DefaultFloat
	}
	out := make([]*Tensor, len(args))
	for i, a := range args {
		out[i] = a.promoteTo(op, names[i], dt)
	}
	return out, nil
}

var (
	// torch: (-y·(x1 - x2) + margin).clamp_min(0).
	opMarginRankingLoss = composite("margin_ranking_loss", []string{"x1", "x2", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		if err := o.only(optMargin, false); err != nil {
			return failed(err)
		}
		a, err := promoteAll("margin_ranking_loss", []string{"x1", "x2", "target"}, in...)
		if err != nil {
			return failed(err)
		}
		return reduceLoss(a[2].Neg().Mul(a[0].Sub(a[1])).AddScalar(o.margin).ReLU(), o.reduction, nil)
	})
	// torch: where(y ≠ 1, max(margin - x, 0), 0) + where(y ≠ -1, x, 0).
	opHingeEmbeddingLoss = composite("hinge_embedding_loss", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		if err := o.only(optMargin, false); err != nil {
			return failed(err)
		}
		x, y := in[0], in[1]
		if err := floatArg(x, "x"); err != nil {
			return failed(err)
		}
		if err := sameShape(x, y, "target", "x"); err != nil {
			return failed(err)
		}
		zero := x.scalarLike("hinge_embedding_loss", 0)
		margin := Where(y.NeScalar(1), x.Neg().AddScalar(o.margin).ReLU(), zero)
		self := Where(y.NeScalar(-1), x, zero)
		return reduceLoss(margin.Add(self), o.reduction, nil)
	})
	// torch: log(1 + exp(-y·x)), computed stably.
	opSoftMarginLoss = composite("soft_margin_loss", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		if err := o.only(0, false); err != nil {
			return failed(err)
		}
		if err := floatArg(in[0], "x"); err != nil {
			return failed(err)
		}
		a, err := promoteAll("soft_margin_loss", []string{"x", "target"}, in...)
		if err != nil {
			return failed(err)
		}
		return reduceLoss(softplus(a[1].Neg().Mul(a[0])), o.reduction, nil)
	})
	opMultiLabelSoftMarginLoss = composite("multilabel_soft_margin_loss", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		return multiLabelSoftMargin(in, o)
	})
	opMultiLabelSoftMarginLossWeighted = compositeVariant("multilabel_soft_margin_loss", "weighted", []string{"x", "target", "weight"},
		func(in []*Tensor, o lossOptions) *Tensor { return multiLabelSoftMargin(in, o) })
	opCosineEmbeddingLoss = composite("cosine_embedding_loss", []string{"x1", "x2", "target"}, cosineEmbedding)
	opTripletMarginLoss   = composite("triplet_margin_loss", []string{"anchor", "positive", "negative"}, triplet)
	opPoissonNLLLoss      = composite("poisson_nll_loss", []string{"x", "target"}, poissonNLL)
	opGaussianNLLLoss     = composite("gaussian_nll_loss", []string{"x", "target", "var", "var_ok"}, gaussianNLL)
)

// softplus is log(1 + exp(z)) as max(z, 0) + log1p(exp(-|z|)), which
// neither overflows nor loses the small values.
func softplus(z *Tensor) *Tensor {
	return z.ReLU().Add(z.Abs().Neg().Exp().Log1p())
}

// multiLabelSoftMargin is torch's multilabel_soft_margin_loss
// (functional.py): -(y·logσ(x) + (1-y)·logσ(-x))·w summed over the last
// dim and divided by its size, then reduced over the samples.
func multiLabelSoftMargin(in []*Tensor, o lossOptions) *Tensor {
	const op = "multilabel_soft_margin_loss"
	if err := o.only(optWeight, false); err != nil {
		return failed(err)
	}
	x, y := in[0], in[1]
	if err := floatArg(x, "x"); err != nil {
		return failed(err)
	}
	if x.t.Rank() == 0 {
		return failed(&Error{Kind: ErrShape, Arg: "x", Expected: "[C] or [N, C]", Found: "[]",
			Detail: "is 0-d, with no dim of classes", Fix: "give x a last dim of classes"})
	}
	if err := sameShape(x, y, "target", "x"); err != nil {
		return failed(err)
	}
	y = y.promoteTo(op, "target", x.t.DType)
	loss := y.Mul(x.LogSigmoid()).Add(y.scalarLike(op, 1).Sub(y).Mul(x.Neg().LogSigmoid())).Neg()
	if len(in) > 2 {
		w := in[2]
		if err := floatArg(w, "weight"); err != nil {
			return failed(err)
		}
		if s, ok := ops.BroadcastShapes(x.t.Shape, w.t.Shape); !ok || !slices.Equal(s, x.t.Shape) {
			return failed(&Error{Kind: ErrShape, Arg: "weight", Expected: dispatch.FormatShape(x.t.Shape[x.t.Rank()-1:]), Found: dispatch.FormatShape(w.t.Shape),
				Detail: "has shape " + dispatch.FormatShape(w.t.Shape) + ", which does not broadcast to x's " + dispatch.FormatShape(x.t.Shape),
				Fix:    "give one weight per class"})
		}
		loss = loss.Mul(w.promoteTo(op, "weight", x.t.DType))
	}
	c := x.t.Rank() - 1
	return reduceLoss(loss.Sum(c).DivScalar(float64(x.t.Shape[c])), o.reduction, nil)
}

// cosineEmbedding is torch 1.13's cosine_embedding_loss (Loss.cpp): with
// cos = Σ x1·x2 / √((Σ x1² + 1e-12)(Σ x2² + 1e-12)) per sample, 1 - cos
// where y = 1, max(cos - margin, 0) where y = -1, 0 elsewhere.
func cosineEmbedding(in []*Tensor, o lossOptions) *Tensor {
	const op = "cosine_embedding_loss"
	if err := o.only(optMargin, false); err != nil {
		return failed(err)
	}
	x1, x2, y := in[0], in[1], in[2]
	switch {
	case y.t.Rank() > 1:
		return failed(&Error{Kind: ErrShape, Arg: "target", Expected: "[N] or []", Found: dispatch.FormatShape(y.t.Shape),
			Detail: "has shape " + dispatch.FormatShape(y.t.Shape) + ", but the loss takes one label per pair (torch: multi-target not supported)",
			Fix:    "give a [N] target for [N, D] inputs, or a 0-d one for [D] inputs"})
	case x1.t.Rank() != y.t.Rank()+1:
		return failed(&Error{Kind: ErrShape, Arg: "x1", Found: dispatch.FormatShape(x1.t.Shape),
			Detail: "has shape " + dispatch.FormatShape(x1.t.Shape) + ", but a " + strconv.Itoa(y.t.Rank()) + "-d target takes " +
				strconv.Itoa(y.t.Rank()+1) + "-d inputs", Fix: "give [N, D] inputs with a [N] target, or [D] inputs with a 0-d one"})
	}
	if err := sameShape(x1, x2, "x2", "x1"); err != nil {
		return failed(err)
	}
	if y.t.Rank() == 1 && y.t.Shape[0] != x1.t.Shape[0] {
		return failed(&Error{Kind: ErrShape, Arg: "target", Expected: dispatch.FormatShape(x1.t.Shape[:1]), Found: dispatch.FormatShape(y.t.Shape),
			Detail: "has shape " + dispatch.FormatShape(y.t.Shape) + " but x1 has " + strconv.Itoa(x1.t.Shape[0]) + " samples",
			Fix:    "give one label per sample"})
	}
	a, err := promoteAll(op, []string{"x1", "x2"}, x1, x2)
	if err != nil {
		return failed(err)
	}
	x1, x2 = a[0], a[1]
	d := y.t.Rank()
	dot := x1.Mul(x2).Sum(d)
	m1 := x1.Mul(x1).Sum(d).AddScalar(1e-12)
	m2 := x2.Mul(x2).Sum(d).AddScalar(1e-12)
	cos := dot.Div(m1.Mul(m2).Sqrt())
	zero := cos.scalarLike(op, 0)
	pos := Where(y.EqScalar(1), cos.Neg().AddScalar(1), zero)
	neg := Where(y.EqScalar(-1), cos.SubScalar(o.margin).ReLU(), zero)
	return reduceLoss(pos.Add(neg), o.reduction, nil)
}

// triplet is torch 1.13's triplet_margin_loss (Loss.cpp):
// max(margin + d(a, p) - d(a, n), 0), d the pairwise distance with p and
// eps, and d(a, n) the smaller of it and d(p, n) with swap.
func triplet(in []*Tensor, o lossOptions) *Tensor {
	const op = "triplet_margin_loss"
	if err := o.only(optMargin|optP|optEps|optSwap, false); err != nil {
		return failed(err)
	}
	a, err := promoteAll(op, []string{"anchor", "positive", "negative"}, in...)
	if err != nil {
		return failed(err)
	}
	if math.IsNaN(o.p) {
		return failed(&Error{Kind: ErrValue, Arg: "p", Detail: "is NaN", Fix: "give a number, or math.Inf(1) for the max norm"})
	}
	dist := func(x, y *Tensor) *Tensor { return x.Sub(y).AddScalar(o.eps).Norm(o.p, -1) }
	pos, neg := dist(a[0], a[1]), dist(a[0], a[2])
	if o.swap {
		neg = neg.Minimum(dist(a[1], a[2]))
	}
	return reduceLoss(pos.Sub(neg).AddScalar(o.margin).ReLU(), o.reduction, nil)
}

// poissonNLL is torch 1.13's poisson_nll_loss (Loss.cpp): exp(x) - y·x
// with log_input, else x - y·log(x + eps); with full, plus the Stirling
// term y·log y - y + ½·log(2πy) where y > 1.
func poissonNLL(in []*Tensor, o lossOptions) *Tensor {
	const op = "poisson_nll_loss"
	if err := o.only(optLogInput|optFull|optEps, false); err != nil {
		return failed(err)
	}
	a, err := promoteAll(op, []string{"x", "target"}, in...)
	if err != nil {
		return failed(err)
	}
	x, y := a[0], a[1]
	var loss *Tensor
	if o.logInput {
		loss = x.Exp().Sub(y.Mul(x))
	} else {
		loss = x.Sub(y.Mul(x.AddScalar(o.eps).Log()))
	}
	if o.full {
		big := y.GtScalar(1)
		ys := Where(big, y, y.scalarLike(op, 2)) // a safe y where the term is masked
		term := ys.Mul(ys.Log()).Sub(ys).Add(ys.MulScalar(2 * math.Pi).Log().MulScalar(0.5))
		loss = loss.Add(Where(big, term, y.scalarLike(op, 0)))
	}
	return reduceLoss(loss, o.reduction, nil)
}

// gaussianNLL is torch 1.13's gaussian_nll_loss (functional.py):
// ½·(log v + (x - y)²/v), v the variance clamped to ≥ eps under no_grad,
// plus ½·log 2π with full. var has x's shape, or x's without its last dim
// (or with it 1). var_ok is 1 where var ≥ 0 (or NaN), which the op checks.
func gaussianNLL(in []*Tensor, o lossOptions) *Tensor {
	const op = "gaussian_nll_loss"
	if err := o.only(optFull|optEps, false); err != nil {
		return failed(err)
	}
	x, y, v := in[0], in[1], in[2]
	for i, t := range in[:3] {
		if err := floatArg(t, []string{"x", "target", "var"}[i]); err != nil {
			return failed(err)
		}
	}
	if err := sameShape(x, y, "target", "x"); err != nil {
		return failed(err)
	}
	xs, vs := x.t.Shape, v.t.Shape
	switch {
	case slices.Equal(vs, xs):
	case len(xs) > 0 && slices.Equal(vs, xs[:len(xs)-1]):
		v = v.Unsqueeze(-1)
	case len(xs) > 0 && len(vs) == len(xs) && slices.Equal(vs[:len(vs)-1], xs[:len(xs)-1]) && vs[len(vs)-1] == 1:
	default:
		want := dispatch.FormatShape(xs)
		if len(xs) > 0 {
			want += ", " + dispatch.FormatShape(xs[:len(xs)-1]) + " or " + dispatch.FormatShape(append(slices.Clone(xs[:len(xs)-1]), 1))
		}
		return failed(&Error{Kind: ErrShape, Arg: "var", Expected: want, Found: dispatch.FormatShape(vs),
			Detail: "has shape " + dispatch.FormatShape(vs) + ", but x " + dispatch.FormatShape(xs) + " takes a var of " + want + " (torch: var is of incorrect size)",
			Fix:    "give one variance per element, or one per sample"})
	}
	a, err := promoteAll(op, []string{"x", "target"}, x, y)
	if err != nil {
		return failed(err)
	}
	x, y = a[0], a[1]
	v = v.promoteTo(op, "var", x.t.DType)
	v = clampNoGrad(v, o.eps)
	loss := v.Log().Add(x.Sub(y).Square().Div(v)).MulScalar(0.5)
	if o.full {
		loss = loss.AddScalar(0.5 * math.Log(2*math.Pi))
	}
	return reduceLoss(loss, o.reduction, nil)
}

// MarginRankingLoss is torch.nn.functional.margin_ranking_loss:
// max(-y·(x1 - x2) + margin, 0), reduced; margin is Margin's (0 by
// default). x1, x2 and target have one shape (torch broadcasts them; lathe
// refuses another shape) and compute in their result type, float32 for
// integers.
func MarginRankingLoss(x1, x2, target *Tensor, opts ...LossOption) *Tensor {
	return apply(opMarginRankingLoss, lossOpts(opts), x1, x2, target)
}

// HingeEmbeddingLoss is torch.nn.functional.hinge_embedding_loss: x where
// target is 1, max(margin - x, 0) where it is -1 (both added where it is
// neither, as torch's), reduced; margin is Margin's (1 by default). x is
// a float tensor and target, of any dtype, has x's shape.
func (x *Tensor) HingeEmbeddingLoss(target *Tensor, opts ...LossOption) *Tensor {
	o := lossOpts(opts)
	if o.set&optMargin == 0 {
		o.margin = 1
	}
	return apply(opHingeEmbeddingLoss, o, x, target)
}

// SoftMarginLoss is torch.nn.functional.soft_margin_loss:
// log(1 + exp(-target·x)), reduced. x is a float tensor and target has its
// shape. It is computed stably: where torch's exp overflows to +Inf
// (-target·x past 88 in float32), lathe gives the finite value.
func (x *Tensor) SoftMarginLoss(target *Tensor, opts ...LossOption) *Tensor {
	return apply(opSoftMarginLoss, lossOpts(opts), x, target)
}

// MultiLabelSoftMarginLoss is torch.nn.functional.multilabel_soft_margin_loss:
// -(y·logσ(x) + (1-y)·logσ(-x)), times LossWeight's weight (one per class,
// or any shape that broadcasts to x's), averaged over x's last dim (the
// classes), then reduced over the samples. target has x's shape and is
// cast to its dtype.
func (x *Tensor) MultiLabelSoftMarginLoss(target *Tensor, opts ...LossOption) *Tensor {
	o := lossOpts(opts)
	if o.elemWeight != nil {
		return apply(opMultiLabelSoftMarginLossWeighted, o, x, target, o.elemWeight)
	}
	return apply(opMultiLabelSoftMarginLoss, o, x, target)
}

// CosineEmbeddingLoss is torch.nn.functional.cosine_embedding_loss: with
// cos the cosine of x1 and x2 along their last dim (torch's, with 1e-12
// added to each squared norm), 1 - cos where target is 1 and
// max(cos - margin, 0) where it is -1 (0 elsewhere), reduced; margin is
// Margin's (0 by default). x1 and x2 are [N, D] with a [N] target, or [D]
// with a 0-d one.
func CosineEmbeddingLoss(x1, x2, target *Tensor, opts ...LossOption) *Tensor {
	return apply(opCosineEmbeddingLoss, lossOpts(opts), x1, x2, target)
}

// TripletMarginLoss is torch.nn.functional.triplet_margin_loss:
// max(d(a, p) - d(a, n) + margin, 0), reduced, where d is
// PairwiseDistance with NormP's p (2 by default) and Eps's eps (1e-6);
// with Swap, d(a, n) is the smaller of d(a, n) and d(p, n). margin is
// Margin's (1 by default). The three inputs have one shape.
func TripletMarginLoss(anchor, positive, negative *Tensor, opts ...LossOption) *Tensor {
	o := lossOpts(opts)
	if o.set&optMargin == 0 {
		o.margin = 1
	}
	if o.set&optP == 0 {
		o.p = 2
	}
	if o.set&optEps == 0 {
		o.eps = 1e-6
	}
	return apply(opTripletMarginLoss, o, anchor, positive, negative)
}

// PoissonNLLLoss is torch.nn.functional.poisson_nll_loss: exp(x) -
// target·x (x the log of the rate; with LogInput(false), x the rate:
// x - target·log(x + eps)), plus with FullLoss the Stirling term
// target·log target - target + ½·log(2π·target) where target > 1,
// reduced. Eps's eps is 1e-8 by default. target has x's shape.
//
// With FullLoss, the gradient w.r.t. a target ≤ 1 is that of the terms
// without the Stirling term (torch's is NaN at a target of 0).
func (x *Tensor) PoissonNLLLoss(target *Tensor, opts ...LossOption) *Tensor {
	o := lossOpts(opts)
	if o.set&optLogInput == 0 {
		o.logInput = true
	}
	if o.set&optEps == 0 {
		o.eps = 1e-8
	}
	return apply(opPoissonNLLLoss, o, x, target)
}

// GaussianNLLLoss is torch.nn.functional.gaussian_nll_loss:
// ½·(log v + (x - target)²/v), plus ½·log 2π with FullLoss, reduced,
// where v is variance clamped to ≥ eps (Eps's, 1e-6 by default) with the
// gradient of the unclamped variance, as torch clamps it under no_grad.
// variance has x's shape, or x's without its last dim, or with it 1 (one
// variance per sample), as torch 1.13's. A negative variance is an
// ErrValue naming var, as torch refuses it; on a GPU the check runs there
// and its error comes with the next synchronisation.
func (x *Tensor) GaussianNLLLoss(target, variance *Tensor, opts ...LossOption) *Tensor {
	const op = "gaussian_nll_loss"
	o := lossOpts(opts)
	if o.set&optEps == 0 {
		o.eps = 1e-6
	}
	if err := variance.CheckArg(op, "var"); err != nil {
		return failed(err)
	}
	ok := Compose(func(a []*Tensor) *Tensor { return a[0].LtScalar(0).LogicalNot().Cast(Int32) }, variance)
	out := apply(opGaussianNLLLoss, o, x, target, variance, ok)
	ReleaseWithGraph(out, ok)
	return out
}

func init() {
	opGaussianNLLLoss.Checks = func(in []*dispatch.Tensor, _ lossOptions) []dispatch.ValueCheck {
		if in[3].DType != Int32 {
			return nil
		}
		return []dispatch.ValueCheck{{Arg: 3, Min: 1, Max: 1, Fail: func(int64) *dispatch.Error {
			return &Error{Kind: ErrValue, Arg: "var", Detail: "holds a negative variance (torch refuses it too)",
				Fix: "pass variances ≥ 0, e.g. softplus of a prediction"}
		}}}
	}
}

var (
	opMultiMarginLoss         = withMarginClassCheck(composite("multi_margin_loss", []string{"x", "target"}, multiMargin))
	opMultiMarginLossWeighted = withMarginClassCheck(compositeVariant("multi_margin_loss", "weighted", []string{"x", "target", "weight"}, multiMargin))
)

// withMarginClassCheck gives multi_margin_loss its value check: every
// target is a class of x's last dim (torch's "target out of range"; no
// index is ignored).
func withMarginClassCheck(op *dispatch.Op[lossOptions]) *dispatch.Op[lossOptions] {
	op.Checks = func(in []*dispatch.Tensor, _ lossOptions) []dispatch.ValueCheck {
		x, target := in[0], in[1]
		if target.DType != Int64 || x.Rank() == 0 || x.Rank() > 2 {
			return nil
		}
		classes := x.Shape[x.Rank()-1]
		return []dispatch.ValueCheck{{Arg: 1, Min: 0, Max: int64(classes) - 1, Fail: func(v int64) *dispatch.Error {
			return &Error{Kind: ErrIndex, Arg: "target", Found: strconv.FormatInt(v, 10),
				Detail: "holds class " + strconv.FormatInt(v, 10) + ", out of range for the " + strconv.Itoa(classes) + " classes of x",
				Fix:    "use classes in [0, " + strconv.Itoa(classes) + ")"}
		}}}
	}
	return op
}

// multiMargin is torch 1.13's multi_margin_loss (LossMultiMargin.cpp): per
// sample, Σ_{j ≠ y} w[y]·max(margin - x[y] + x[j], 0)^p / C.
func multiMargin(in []*Tensor, o lossOptions) *Tensor {
	const op = "multi_margin_loss"
	o.weight = nil // the class weights are this loss's weight, in[2]
	if err := o.only(optMargin|optP, false); err != nil {
		return failed(err)
	}
	x, y := in[0], in[1]
	if err := floatArg(x, "x"); err != nil {
		return failed(err)
	}
	if o.p != 1 && o.p != 2 {
		return failed(&Error{Kind: ErrValue, Arg: "p", Found: strconv.FormatFloat(o.p, 'g', -1, 64),
			Detail: "is " + strconv.FormatFloat(o.p, 'g', -1, 64) + ", but the loss takes p 1 or 2 (as torch's)", Fix: "pass NormP(1) or NormP(2)"})
	}
	if y.t.DType != Int64 {
		return failed(&Error{Kind: ErrDType, Arg: "target", Found: y.t.DType.String(),
			Detail: "is " + y.t.DType.String() + " but the loss takes int64 class indices (as torch's)", Fix: "cast it with .Cast(lathe.Int64)"})
	}
	single := x.t.Rank() == 1
	switch {
	case x.t.Rank() == 0 || x.t.Rank() > 2:
		return failed(&Error{Kind: ErrShape, Arg: "x", Expected: "[C] or [N, C]", Found: dispatch.FormatShape(x.t.Shape),
			Detail: "has shape " + dispatch.FormatShape(x.t.Shape) + ", but the loss takes [C] or [N, C]", Fix: "reshape x to [N, C]"})
	case y.t.Rank() > 1 || single && y.t.Numel() != 1 || !single && y.t.Numel() != x.t.Shape[0]:
		want := "[] or [1]"
		if !single {
			want = dispatch.FormatShape(x.t.Shape[:1])
		}
		return failed(&Error{Kind: ErrShape, Arg: "target", Expected: want, Found: dispatch.FormatShape(y.t.Shape),
			Detail: "has shape " + dispatch.FormatShape(y.t.Shape) + ", but x " + dispatch.FormatShape(x.t.Shape) + " takes a target of " + want,
			Fix:    "give one class index per sample"})
	}
	c := x.t.Shape[x.t.Rank()-1]
	if c == 0 {
		return failed(&Error{Kind: ErrShape, Arg: "x", Found: dispatch.FormatShape(x.t.Shape),
			Detail: "has no classes (its last dim is empty)", Fix: "give x at least one class"})
	}
	if single {
		x = x.Unsqueeze(0)
	}
	y = y.Reshape(x.t.Shape[0]) // a 0-d target of one sample too, as torch's
	var w *Tensor
	if len(in) > 2 {
		w = in[2]
		if w.t.Rank() != 1 || w.t.Shape[0] != c {
			return failed(&Error{Kind: ErrShape, Arg: "weight", Expected: dispatch.FormatShape([]int{c}), Found: dispatch.FormatShape(w.t.Shape),
				Detail: "has shape " + dispatch.FormatShape(w.t.Shape) + " but x has " + strconv.Itoa(c) + " classes", Fix: "give one weight per class"})
		}
		if err := floatArg(w, "weight"); err != nil {
			return failed(err)
		}
		w = w.promoteTo(op, "weight", x.t.DType)
	}
	// The op's value check reports a target out of [0, C); the indexing
	// below reads a clamped one, so that on a GPU its own checks leave no
	// second failure pending on the device for a later call to meet.
	y = y.Clamp(0, float64(c-1))
	col := y.Unsqueeze(1)
	picked := x.Gather(1, col)
	// torch adds the terms where z > 0: a NaN term is left out, as there.
	z := x.Sub(picked).AddScalar(o.margin)
	z = Where(z.GtScalar(0), z, z.scalarLike(op, 0))
	if o.p == 2 {
		z = z.Square()
	}
	if w != nil {
		z = z.Mul(w.IndexSelect(0, y).Unsqueeze(1))
	}
	own := y.OneHot(c).Cast(Bool)
	z = Where(own, z.scalarLike(op, 0), z)
	loss := z.Sum(1).DivScalar(float64(c))
	if single {
		loss = loss.Squeeze(0)
	}
	return reduceLoss(loss, o.reduction, nil)
}

// MultiMarginLoss is torch.nn.functional.multi_margin_loss: per sample,
// Σ_{j ≠ y} w[y]·max(margin - x[y] + x[j], 0)^p / C, reduced, for x of
// [N, C] (or [C]) and int64 class indices target of [N] (or a single one);
// p is NormP's (1 by default; 1 or 2), margin Margin's (1 by default),
// and w the class weights of ClassWeights ([C]; 1 without them). A target
// out of [0, C) is an ErrIndex, as torch refuses it; so is a weight of
// another size than C (torch 1.13 reads past it). With no samples the mean
// is NaN and the sum 0 (torch 1.13 returns uninitialised memory). A term
// that is NaN is left out, as torch's kernel leaves out what is not > 0.
// Unlike torch's, the loss has second derivatives (torch's backward has
// none).
func (x *Tensor) MultiMarginLoss(target *Tensor, opts ...LossOption) *Tensor {
	o := lossOpts(opts)
	if o.set&optMargin == 0 {
		o.margin = 1
	}
	if o.set&optP == 0 {
		o.p = 1
	}
	if o.weight != nil {
		return apply(opMultiMarginLossWeighted, o, x, target, o.weight)
	}
	return apply(opMultiMarginLoss, o, x, target)
}
