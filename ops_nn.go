package lathe

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Neural-network building blocks. Each is a composite op: registered in
// dispatch (so its arguments are validated and errors name it) and computed
// from other ops, so that autodiff needs no rule of its own for it.

// Reduction says how a loss combines its per-element values.
type Reduction int

const (
	ReduceMean Reduction = iota // the mean over elements (over non-ignored targets for class losses)
	ReduceSum                   // the sum
	ReduceNone                  // no reduction: one value per element or sample
)

// String names the reduction as Go spells it ("ReduceSum"), or
// "Reduction(7)" for a value that is none of them.
func (r Reduction) String() string {
	switch r {
	case ReduceMean:
		return "ReduceMean"
	case ReduceSum:
		return "ReduceSum"
	case ReduceNone:
		return "ReduceNone"
	case ReduceBatchMean:
		return "ReduceBatchMean"
	}
	return "Reduction(" + strconv.Itoa(int(r)) + ")"
}

// Valid reports whether r is ReduceMean, ReduceSum or ReduceNone (KLDivLoss
// takes ReduceBatchMean too).
func (r Reduction) Valid() bool { return r == ReduceMean || r == ReduceSum || r == ReduceNone }

// reductionError is the error of a loss given an invalid reduction, which
// PyTorch refuses too (F.mse_loss(x, y, reduction="foo") is a ValueError).
func reductionError(r Reduction) *Error {
	return &Error{Kind: ErrValue, Arg: "reduction", Found: r.String(),
		Detail: "is " + r.String() + ", which is none of ReduceMean, ReduceSum and ReduceNone",
		Fix:    "pass lathe.ReduceMean, lathe.ReduceSum or lathe.ReduceNone"}
}

// LossOption sets an option of a loss function.
type LossOption func(*lossOptions)

type lossOptions struct {
	reduction   Reduction
	ignoreIndex int64
	weight      *Tensor // class weights of nll_loss and cross_entropy; nil for none

	// The options of the other losses (ops_losses.go); set says which
	// were given, so that a loss refuses those it does not take.
	set             int
	beta, delta     float64
	margin, p, eps  float64
	logTarget, swap bool
	logInput, full  bool
	elemWeight      *Tensor // LossWeight's; nil for none
}

// WithReduction sets how the loss is reduced (ReduceMean by default).
func WithReduction(r Reduction) LossOption { return func(o *lossOptions) { o.reduction = r } }

// IgnoreIndex sets the class target that contributes nothing to a class loss
// and is left out of the mean (-100 by default, as in PyTorch).
func IgnoreIndex(i int) LossOption { return func(o *lossOptions) { o.ignoreIndex = int64(i) } }

// ClassWeights gives each class of NLLLoss and CrossEntropy a weight (a
// [C] tensor of x's dtype and device; nil for none, the default): each
// target's loss is scaled by its class's weight, and the mean divides by
// the sum of the weights of the targets not ignored, as PyTorch's weight
// argument does.
func ClassWeights(w *Tensor) LossOption { return func(o *lossOptions) { o.weight = w } }

func lossOpts(opts []LossOption) lossOptions {
	o := lossOptions{reduction: ReduceMean, ignoreIndex: -100}
	for _, f := range opts {
		if f != nil { // a nil option sets nothing, as elsewhere
			f(&o)
		}
	}
	return o
}

var (
	opNLLLoss = withClassCheck(composite("nll_loss", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		return nllLoss(in[0], in[1], o)
	}))
	opCrossEntropy = withClassCheck(composite("cross_entropy", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		return crossEntropy(in[0], in[1], o)
	}))
	// The weighted losses take the weight as a third argument, so that
	// dispatch checks its device and liveness like the others'.
	opNLLLossWeighted = withClassCheck(compositeVariant("nll_loss", "weighted", []string{"x", "target", "weight"}, func(in []*Tensor, o lossOptions) *Tensor {
		o.weight = in[2]
		return nllLoss(in[0], in[1], o)
	}))
	opCrossEntropyWeighted = withClassCheck(compositeVariant("cross_entropy", "weighted", []string{"x", "target", "weight"}, func(in []*Tensor, o lossOptions) *Tensor {
		o.weight = in[2]
		return crossEntropy(in[0], in[1], o)
	}))
	opMSELoss = composite("mse_loss", []string{"x", "target"}, func(in []*Tensor, o lossOptions) *Tensor {
		x, target := in[0], in[1]
		if !o.reduction.Valid() {
			return failed(reductionError(o.reduction))
		}
		if !slices.Equal(x.t.Shape, target.t.Shape) {
			return failed(&Error{Kind: ErrShape, Arg: "target", Expected: dispatch.FormatShape(x.t.Shape), Found: dispatch.FormatShape(target.t.Shape),
				Detail: "has shape " + dispatch.FormatShape(target.t.Shape) + " but the input has " + dispatch.FormatShape(x.t.Shape),
				Fix:    "give a target of the input's shape (lathe does not broadcast losses)"})
		}
		// torch.nn.functional.mse_loss promotes x and target as a binary
		// op does (a float32 x and a float64 target give float64), and
		// takes a bool target as numbers.
		dt := dispatch.ResultType(dispatch.OperandOf(x.t), dispatch.OperandOf(target.t))
		if dt == Bool || dt.IsInt() {
			dt = dispatch.DefaultFloat
		}
		return reduceLoss(x.promoteTo("mse_loss", "x", dt).Sub(target.promoteTo("mse_loss", "target", dt)).Square(), o.reduction, nil)
	})
	opLayerNorm = composite("layer_norm", []string{"x"}, func(in []*Tensor, a layerNormAttrs) *Tensor {
		return layerNormAffine(in[0], nil, nil, a)
	})
	opLayerNormAffine = compositeVariant("layer_norm", "affine", []string{"x", "weight", "bias"}, func(in []*Tensor, a layerNormAttrs) *Tensor {
		for i, p := range in[1:] {
			if err := checkLayerNormParam([...]string{"weight", "bias"}[i], p, a.shape); err != nil {
				return failed(err)
			}
		}
		// torch refuses a weight or bias of another dtype than x's
		// ("expected scalar type Float but found Double"), not promoting.
		if err := sameDTypeAs("layer_norm", in[0], in[1:], "weight", "bias"); err != nil {
			return failed(err)
		}
		return layerNormAffine(in[0], in[1], in[2], a)
	})
)

// Softmax is exp(x) / Σ exp(x) along dim, computed stably.
func (x *Tensor) Softmax(dim int) *Tensor { return apply(ops.Softmax, ops.Scan{Dim: dim}, x) }

// LogSoftmax is x - logsumexp(x) along dim, computed stably.
func (x *Tensor) LogSoftmax(dim int) *Tensor { return apply(ops.LogSoftmax, ops.Scan{Dim: dim}, x) }

// CrossEntropy is the loss of logits x ([N, C], [C], or [N, C, d1, ...])
// against class indices target ([N], [], or [N, d1, ...]; Int64 or Int32),
// or against class probabilities (a float target of x's shape; the two
// promote as a binary op's operands), as torch.nn.functional.cross_entropy. With probabilities, the loss of a
// sample is -Σ_c w_c·target_c·log_softmax(x)_c (w_c the class weights, 1
// without ClassWeights), the mean divides by the number of samples, and
// an IgnoreIndex of 0 or more is refused, as torch's (a negative one
// ignores nothing).
func (x *Tensor) CrossEntropy(target *Tensor, opts ...LossOption) *Tensor {
	o := lossOpts(opts)
	if o.weight != nil {
		return apply(opCrossEntropyWeighted, o, x, target, o.weight)
	}
	return apply(opCrossEntropy, o, x, target)
}

// NLLLoss is the negative log-likelihood of log-probabilities x against
// class indices target, shaped as for CrossEntropy.
func (x *Tensor) NLLLoss(target *Tensor, opts ...LossOption) *Tensor {
	o := lossOpts(opts)
	if o.weight != nil {
		return apply(opNLLLossWeighted, o, x, target, o.weight)
	}
	return apply(opNLLLoss, o, x, target)
}

// MSELoss is the mean (or sum, or none) of (x - target)²; the shapes must be equal.
// Integer and bool operands are computed in float32, where torch refuses
// them (its mse_loss has no integer kernel).
func (x *Tensor) MSELoss(target *Tensor, opts ...LossOption) *Tensor {
	return apply(opMSELoss, lossOpts(opts), x, target)
}

// withClassCheck gives a class loss its value check: every target is a
// class of x's class dim (1, or 0 for a single sample), or the ignored
// index. It runs where the targets are, so a GPU does not wait for it
// (dispatch's ValueCheck); the shapes and dtypes are the loss's own
// checks.
func withClassCheck(op *dispatch.Op[lossOptions]) *dispatch.Op[lossOptions] {
	op.Checks = func(in []*dispatch.Tensor, o lossOptions) []dispatch.ValueCheck {
		x, target := in[0], in[1]
		if !target.DType.IsInt() || x.Rank() == 0 {
			return nil
		}
		classes := x.Shape[min(1, x.Rank()-1)]
		return []dispatch.ValueCheck{{Arg: 1, Max: int64(classes) - 1, Ignore: o.ignoreIndex, Ignoring: true,
			Fail: func(v int64) *dispatch.Error {
				return &Error{Kind: ErrIndex, Arg: "target", Found: strconv.FormatInt(v, 10),
					Detail: "holds class " + strconv.FormatInt(v, 10) + ", out of range for the " + strconv.Itoa(classes) + " classes of x",
					Fix:    "use classes in [0, " + strconv.Itoa(classes) + "), or the ignore index " + strconv.FormatInt(o.ignoreIndex, 10)}
			}}}
	}
	return op
}

func crossEntropy(x, target *Tensor, o lossOptions) *Tensor {
	if !o.reduction.Valid() {
		return failed(reductionError(o.reduction))
	}
	classDim := 1
	if x.Rank() == 1 {
		classDim = 0
	}
	if target.t.DType.IsFloat() {
		return softCrossEntropy(x, target, classDim, o)
	}
	return nllLoss(x.LogSoftmax(classDim), target, o)
}

// softCrossEntropy is cross_entropy against class probabilities (a float
// target of x's shape and dtype: soft labels, mixup, distillation), as
// torch's: -Σ_c w_c·target_c·log_softmax(x)_c per sample, whose mean
// divides by the number of samples (not by the weights), with no ignored
// index.
func softCrossEntropy(x, target *Tensor, classDim int, o lossOptions) *Tensor {
	const op = "cross_entropy"
	if x.t.Rank() == 0 {
		return failed(errorf(op, ErrShape, "x", "is 0-d, with no class dim", "give x a dim of classes"))
	}
	if !x.t.DType.IsFloat() {
		return failed(errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but cross_entropy takes logits of a float dtype, as torch's",
			"cast it with .Cast(lathe.Float32)"))
	}
	if index := slices.Delete(slices.Clone(x.t.Shape), classDim, classDim+1); slices.Equal(target.t.Shape, index) {
		// The shape of class indices: a float target there is indices of
		// the wrong dtype, as torch reads it.
		return failed(errorf(op, ErrDType, "target", "is "+target.t.DType.String()+" of shape "+dispatch.FormatShape(target.t.Shape)+
			", but class indices are int64 or int32 (class probabilities have x's shape "+dispatch.FormatShape(x.t.Shape)+")",
			"cast it with .Cast(lathe.Int64)"))
	}
	if !slices.Equal(target.t.Shape, x.t.Shape) {
		return failed(errorf(op, ErrShape, "target", "is "+target.t.DType.String()+" of shape "+dispatch.FormatShape(target.t.Shape)+
			", class probabilities, but x has shape "+dispatch.FormatShape(x.t.Shape),
			"give probabilities of x's shape, or class indices (int64) of x's shape without its class dim"))
	}
	// torch refuses only an index that could name a class: a negative
	// one (its default -100 among them) ignores nothing.
	if o.ignoreIndex >= 0 {
		return failed(errorf(op, ErrValue, "ignore_index", "is "+strconv.FormatInt(o.ignoreIndex, 10)+
			", but class probabilities have no class to ignore (torch: not supported for floating point target)", "leave IgnoreIndex out"))
	}
	// torch takes log_softmax in x's dtype, then promotes it and the
	// probabilities as a binary op does (a float32 x and float64
	// probabilities give float64).
	dt := dispatch.ResultType(dispatch.OperandOf(x.t), dispatch.OperandOf(target.t))
	terms := x.LogSoftmax(classDim).promoteTo(op, "x", dt).Mul(target.promoteTo(op, "target", dt))
	if w := o.weight; w != nil {
		classes := x.t.Shape[classDim]
		if w.t.Rank() != 1 || w.t.Shape[0] != classes {
			return failed(errorf(op, ErrShape, "weight", "has shape "+dispatch.FormatShape(w.t.Shape)+" but x has "+strconv.Itoa(classes)+" classes",
				"give one weight per class"))
		}
		if w.t.DType != x.t.DType {
			return failed(errorf(op, ErrDType, "weight", "is "+w.t.DType.String()+" but x is "+x.t.DType.String(),
				"cast it with .Cast(lathe."+x.t.DType.GoString()+")"))
		}
		// The weight along the class dim: [C], then a 1 per dim after it.
		terms = terms.Mul(w.promoteTo(op, "weight", dt).Reshape(append([]int{classes}, slices.Repeat([]int{1}, x.t.Rank()-classDim-1)...)...))
	}
	return reduceLoss(terms.Sum(classDim).Neg(), o.reduction, nil)
}

// classWeights checks w as the class weights of x (a [C] tensor of x's
// dtype, C the size of x's class dim) and returns the weight of each
// target's class, 0 where the target is ignoreIndex, shaped as target.
func classWeights(x, target, w *Tensor, ignoreIndex int64) (*Tensor, error) {
	classes := x.t.Shape[min(1, x.t.Rank()-1)]
	if w.t.Rank() != 1 || w.t.Shape[0] != classes {
		return nil, &Error{Kind: ErrShape, Arg: "weight", Expected: dispatch.FormatShape([]int{classes}), Found: dispatch.FormatShape(w.t.Shape),
			Detail: "has shape " + dispatch.FormatShape(w.t.Shape) + " but x has " + strconv.Itoa(classes) + " classes",
			Fix:    "give one weight per class"}
	}
	if w.t.DType != x.t.DType {
		return nil, &Error{Kind: ErrDType, Arg: "weight", Expected: x.t.DType.String(), Found: w.t.DType.String(),
			Detail: "is " + w.t.DType.String() + " but x is " + x.t.DType.String(), Fix: "cast it with .Cast(lathe." + x.t.DType.GoString() + ")"}
	}
	if classes == 0 { // every target is ignored: the class check refused any other
		out := w.fullLike("nll_loss", 0, target.t.Shape)
		return out, out.err
	}
	keep := keptTargets(target, ignoreIndex)
	safe := Where(keep, target, target.fullLike("nll_loss", 0, nil))
	wt := w.IndexSelect(0, safe.Reshape(-1)).Reshape(target.t.Shape...)
	if wt.err != nil {
		return nil, wt.err
	}
	out := Where(keep, wt, wt.fullLike("nll_loss", 0, nil))
	return out, out.err
}

// keptTargets is target ≠ ignoreIndex, compared exactly: NeScalar's
// float64 rounds an index past 2^53 (1<<62 + 1 became 1<<62), and an int64
// target equal to it was gathered as a class. An int32 target equals
// neither such an index nor the float64 it rounds to, so NeScalar serves
// there.
func keptTargets(target *Tensor, ignoreIndex int64) *Tensor {
	if f := float64(ignoreIndex); target.t.DType != Int64 || f < 1<<63 && int64(f) == ignoreIndex {
		return target.NeScalar(f)
	}
	ig := target.joined(upload("nll_loss", target.t.Device, []int64{ignoreIndex}, Int64, []int{}))
	out := target.Ne(ig)
	ReleaseWithGraph(out, ig)
	return out
}

func nllLoss(logp, target *Tensor, o lossOptions) *Tensor {
	// logp may be the failed result of an op before (cross_entropy's
	// log_softmax on a device without it): pass its error on.
	if logp.err != nil {
		return logp
	}
	if !o.reduction.Valid() {
		return failed(reductionError(o.reduction))
	}
	if !target.t.DType.IsInt() {
		return failed(&Error{Kind: ErrDType, Arg: "target", Found: target.t.DType.String(),
			Detail: "is " + target.t.DType.String() + " but class targets are int64 or int32", Fix: "cast it with .Cast(lathe.Int64)"})
	}
	if !logp.t.DType.IsFloat() {
		return failed(&Error{Kind: ErrDType, Arg: "x", Detail: "is " + logp.t.DType.String() + " but the op takes float32, float64",
			Fix: "cast it with .Cast(lathe.Float32)"})
	}
	if logp.t.Rank() == 0 {
		return failed(&Error{Kind: ErrShape, Arg: "x", Expected: "[C], [N, C] or [N, C, d1, ...]", Found: "[]",
			Detail: "is 0-d, with no class dim", Fix: "give x a dim of classes"})
	}
	single := logp.t.Rank() == 1 // [C] with a 0-d target
	if single {
		logp, target = logp.Unsqueeze(0), target.Unsqueeze(0)
	}
	if logp.t.Rank() < 2 || target.t.Rank() != logp.t.Rank()-1 || !slices.Equal(target.t.Shape[:1], logp.t.Shape[:1]) ||
		!slices.Equal(target.t.Shape[1:], logp.t.Shape[2:]) {
		want := append([]int{logp.t.Shape[0]}, logp.t.Shape[min(2, len(logp.t.Shape)):]...)
		return failed(&Error{Kind: ErrShape, Arg: "target", Expected: dispatch.FormatShape(want), Found: dispatch.FormatShape(target.t.Shape),
			Detail: "has shape " + dispatch.FormatShape(target.t.Shape) + " but input " + dispatch.FormatShape(logp.t.Shape) +
				" needs " + dispatch.FormatShape(want), Fix: "give one class index per sample (the input without its class dim)"})
	}
	keep := keptTargets(target, o.ignoreIndex)
	var picked *Tensor
	if logp.t.Shape[1] == 0 { // no classes: every target is ignored (the class check refused any other)
		picked = logp.Sum(1) // 0s, in the graph
	} else {
		safe := Where(keep, target, target.fullLike("nll_loss", 0, nil))
		picked = logp.Gather(1, safe.Unsqueeze(1)).Squeeze(1)
	}
	zero := logp.fullLike("nll_loss", 0, nil)
	loss := Where(keep, picked.Neg(), zero)
	var wt *Tensor // each target's class weight, 0 where ignored
	if o.weight != nil {
		var err error
		if wt, err = classWeights(logp, target, o.weight, o.ignoreIndex); err != nil {
			return failed(err)
		}
		loss = loss.Mul(wt)
	}
	if single && o.reduction == ReduceNone {
		loss = loss.Squeeze(0)
	}
	if wt != nil && o.reduction == ReduceMean {
		// torch's nll_loss: Σ w[t]·loss / Σ w[t] over the targets kept.
		return loss.Sum().Div(wt.Sum())
	}
	return reduceLoss(loss, o.reduction, keep)
}

// reduceLoss applies a reduction; a class loss's mean divides by the number
// of targets that were not ignored, as PyTorch's does.
func reduceLoss(loss *Tensor, r Reduction, keep *Tensor) *Tensor {
	switch r {
	case ReduceSum:
		return loss.Sum()
	case ReduceNone:
		return loss
	}
	if keep == nil {
		return loss.Mean()
	}
	return loss.Sum().Div(keep.Cast(loss.DType()).Sum())
}

type layerNormAttrs struct {
	shape []int
	eps   float64
}

// LayerNorm normalises x over its last len(normalizedShape) dims to mean 0
// and variance 1 (biased, plus eps), then scales by weight and shifts by bias
// when they are given (nil for none), as torch.nn.functional.layer_norm.
func (x *Tensor) LayerNorm(normalizedShape []int, weight, bias *Tensor, eps float64) *Tensor {
	a := layerNormAttrs{shape: append([]int(nil), normalizedShape...), eps: eps}
	if (weight == nil) != (bias == nil) {
		// One without the other: fill in the identity for the missing one,
		// once the given one has normalized_shape, so that a shape that
		// nothing holds (a size near int's edge) is refused, not allocated.
		if err := x.check("layer_norm"); err != nil {
			return failed(err)
		}
		given, name := weight, "weight"
		if weight == nil {
			given, name = bias, "bias"
		}
		if err := given.CheckArg("layer_norm", name); err != nil {
			return failed(err)
		}
		if err := checkLayerNormParam(name, given, a.shape); err != nil {
			return failed(err)
		}
		if weight == nil {
			weight = x.fullLike("layer_norm", 1, a.shape)
		} else {
			bias = x.fullLike("layer_norm", 0, a.shape)
		}
	}
	if weight == nil {
		return apply(opLayerNorm, a, x)
	}
	return apply(opLayerNormAffine, a, x, weight, bias)
}

// layerNormAffine is layer_norm with weight and bias (nil for none): the
// fused op where x's device has its kernels for x's dtype, the composite
// (layerNorm, then mul and add) elsewhere.
func layerNormAffine(x, weight, bias *Tensor, a layerNormAttrs) *Tensor {
	if err := checkLayerNorm(x, a); err != nil {
		return failed(err)
	}
	if fusedLayerNorm(x.t.Device, x.t.DType) {
		return layerNormFused(x, weight, bias, a)
	}
	y := layerNorm(x, a)
	if weight != nil {
		y = y.Mul(weight).Add(bias)
	}
	return y
}

// fusedLayerNorm reports whether dev has the fused layer norm kernels
// (ops.LayerNorm and its backward) for dt.
func fusedLayerNorm(dev Device, dt DType) bool {
	return ops.LayerNorm.KernelDTypes(dev.Kind).Has(dt) && ops.LayerNormBackward.KernelDTypes(dev.Kind).Has(dt)
}

// layerNormFused runs layer_norm as the fused op, over x's last dim, with
// weight and bias as [D] (ones and zeros when there are none). A normalized
// shape of several dims is merged into one, x viewed as [rows, D], and its
// gradient comes back through the reshapes' rules. x has been checked
// (checkLayerNorm).
func layerNormFused(x, weight, bias *Tensor, a layerNormAttrs) *Tensor {
	r, n := x.t.Rank(), len(a.shape)
	d := 1
	for _, s := range a.shape {
		d *= s
	}
	if weight == nil {
		weight, bias = x.fullLike("layer_norm", 1, []int{d}), x.fullLike("layer_norm", 0, []int{d})
	} else if n > 1 {
		weight, bias = weight.Reshape(d), bias.Reshape(d)
	}
	if n == 1 {
		return apply(ops.LayerNorm, ops.LayerNormParams{Eps: a.eps}, x, weight, bias)
	}
	rows := 1
	for _, s := range x.t.Shape[:r-n] {
		rows *= s
	}
	y := apply(ops.LayerNorm, ops.LayerNormParams{Eps: a.eps}, x.Reshape(rows, d), weight, bias)
	return y.Reshape(x.t.Shape...)
}

// checkLayerNormParam checks that layer_norm's weight or bias (name) has
// the normalized shape.
func checkLayerNormParam(name string, p *Tensor, shape []int) *Error {
	if slices.Equal(p.t.Shape, shape) {
		return nil
	}
	return errorf("layer_norm", ErrShape, name, "has shape "+dispatch.FormatShape(p.t.Shape)+
		" but normalized_shape is "+dispatch.FormatShape(shape), "give "+name+" the normalized shape")
}

// checkLayerNorm checks x's shape against normalized_shape, and eps.
func checkLayerNorm(x *Tensor, a layerNormAttrs) error {
	r, n := x.t.Rank(), len(a.shape)
	if n == 0 || n > r || !slices.Equal(x.t.Shape[r-n:], a.shape) {
		return &Error{Kind: ErrShape, Arg: "x", Detail: "has shape " + dispatch.FormatShape(x.t.Shape) +
			", which does not end in normalized_shape " + dispatch.FormatShape(a.shape), Fix: "pass the sizes of x's last dims"}
	}
	return ops.CheckEps(a.eps)
}

// layerNorm is the normalisation as a composite of mean, sub, mul and
// rsqrt: the path of the devices and dtypes without the fused op, and the
// reference that the fused op is tested against.
func layerNorm(x *Tensor, a layerNormAttrs) *Tensor {
	if err := checkLayerNorm(x, a); err != nil {
		return failed(err)
	}
	r, n := x.t.Rank(), len(a.shape)
	dims := make([]int, n)
	for i := range dims {
		dims[i] = r - n + i
	}
	xc := x.Sub(x.MeanKeepDim(dims...))
	variance := xc.Square().MeanKeepDim(dims...)
	return xc.Mul(variance.AddScalar(a.eps).Rsqrt())
}

// Dropout zeroes each element with probability p and scales the rest by
// 1/(1-p) when train is true, the mask made on x's device from a key
// drawn from the stream Seed sets (the same mask on every device; an x of
// no elements draws none); with train false (or p = 0) it returns x's
// elements as they are, in a new handle (as Cast to x's own dtype does). x must be floating: an integer or bool
// x is an ErrDType even where torch returns it as it is (train false, p 0
// or 1).
func (x *Tensor) Dropout(p float64, train bool) *Tensor {
	if err := x.check("dropout"); err != nil {
		return failed(err)
	}
	if !(p >= 0 && p <= 1) {
		return failed(errorf("dropout", ErrValue, "p", "is "+strconv.FormatFloat(p, 'g', -1, 64), "use a probability in [0, 1]"))
	}
	if !x.t.DType.IsFloat() {
		return failed(errorf("dropout", ErrDType, "x", "is "+x.t.DType.String()+" but the op takes float32, float64, float16, bfloat16", "cast it with .Cast(lathe.Float32)"))
	}
	if !train || p == 0 {
		return x.alias()
	}
	if p == 1 {
		return x.MulScalar(0)
	}
	if x.t.Numel() == 0 {
		// No elements, no mask: no key is drawn, as torch's dropout of an
		// empty tensor draws nothing, so that an empty batch leaves the
		// draws after it as they were.
		return apply(ops.Dropout, ops.Mask{P: p}, x)
	}
	// One op, whose mask each device makes from a key drawn from the
	// stream (ops.Dropout): nothing is drawn on the host or uploaded, and
	// the graph holds no mask, since the backward pass makes it again.
	return keyed(func(key uint64) *Tensor { return apply(ops.Dropout, ops.Mask{P: p, Key: key}, x) })
}

// sameDTypeAs refuses a parameter whose dtype is not x's, for the
// composites that torch does not promote.
func sameDTypeAs(op string, x *Tensor, params []*Tensor, names ...string) error {
	for i, p := range params {
		if p.t.DType != x.t.DType {
			return &Error{Kind: ErrDType, Arg: names[i], Expected: x.t.DType.String(), Found: p.t.DType.String(),
				Detail: "is " + p.t.DType.String() + " but x is " + x.t.DType.String() + " (" + op + " does not promote, as torch's)",
				Fix:    "cast it with .Cast(" + x.t.DType.GoString() + ")"}
		}
	}
	return nil
}
