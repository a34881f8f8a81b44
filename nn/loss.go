package nn

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// LossOption sets an option of a loss function.
type LossOption func(*lossConfig)

type lossConfig struct {
	reduction   lathe.Reduction
	ignoreIndex int
	smoothing   float64
	weight      *lathe.Tensor
	more        []lathe.LossOption // the other losses' options (loss_more.go)
	blank       int                // CTC's options (loss_more.go); ctc says one was given
	zeroInf     bool
	ctc         bool
}

// Reduction sets how the loss combines its per-element values
// (lathe.ReduceMean by default).
func Reduction(r lathe.Reduction) LossOption { return func(c *lossConfig) { c.reduction = r } }

// IgnoreIndex sets the class target that contributes nothing to a class
// loss and is left out of its mean (-100 by default, as in PyTorch).
func IgnoreIndex(i int) LossOption { return func(c *lossConfig) { c.ignoreIndex = i } }

// LabelSmoothing mixes the one-hot target with the uniform distribution
// over classes, with weight eps in [0, 1] (CrossEntropy only).
func LabelSmoothing(eps float64) LossOption { return func(c *lossConfig) { c.smoothing = eps } }

// Weight gives each class of CrossEntropy and NLL a weight (a [C] tensor
// of the input's dtype and device), as PyTorch's weight argument: see
// lathe.ClassWeights. With LabelSmoothing, the smoothing term weighs each
// class too. BCE and MultiLabelSoftMargin take it as their weight
// (lathe.LossWeight).
func Weight(w *lathe.Tensor) LossOption { return func(c *lossConfig) { c.weight = w } }

func lossConfigOf(opts []LossOption) lossConfig {
	c := lossConfig{reduction: lathe.ReduceMean, ignoreIndex: -100}
	for _, f := range opts {
		if f != nil { // a nil option sets nothing, as elsewhere
			f(&c)
		}
	}
	return c
}

// check refuses an invalid reduction before a loss computes anything;
// lathe's own losses refuse it too, and BCEWithLogits and label smoothing
// reduce here.
func (c lossConfig) check(op string) error {
	if len(c.more) > 0 || c.ctc {
		return nnError(op, lathe.ErrValue, "options", "include an option of another loss (Beta, Delta, Margin, ...), which "+op+" does not take",
			"leave it out")
	}
	if c.reduction.Valid() {
		return nil
	}
	return nnError(op, lathe.ErrValue, "reduction", "is "+c.reduction.String()+", which is none of ReduceMean, ReduceSum and ReduceNone",
		"pass lathe.ReduceMean, lathe.ReduceSum or lathe.ReduceNone")
}

func (c lossConfig) lathe() []lathe.LossOption {
	return []lathe.LossOption{lathe.WithReduction(c.reduction), lathe.IgnoreIndex(c.ignoreIndex), lathe.ClassWeights(c.weight)}
}

// CrossEntropy is the loss of logits ([N, C], [C] or [N, C, d1, ...])
// against class indices target ([N], [] or [N, d1, ...]; Int64 or Int32),
// or class probabilities of the logits' shape (see lathe's CrossEntropy;
// LabelSmoothing(ε) mixes them with the uniform distribution, target·(1-ε)
// + ε/C), as torch.nn.functional.cross_entropy. With LabelSmoothing(ε) on
// class indices it is
// (1-ε)·nll + ε/C · Σ_c -w_c·log p_c (w_c the class weights, 1 without
// Weight), the second term zero for ignored targets and, for the mean,
// divided by the sum of the weights of the targets not ignored (their
// number without Weight), as in PyTorch 1.13's
// cross_entropy_loss_label_smoothing.
func CrossEntropy(logits, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	c := lossConfigOf(opts)
	if err := c.check("cross_entropy"); err != nil {
		return lathe.Failed(err)
	}
	if !(c.smoothing >= 0 && c.smoothing <= 1) {
		return lathe.Failed(nnError("cross_entropy", lathe.ErrValue, "label_smoothing", "is "+strconv.FormatFloat(c.smoothing, 'g', -1, 64),
			"use a value in [0, 1]"))
	}
	if c.smoothing == 0 {
		return logits.CrossEntropy(target, c.lathe()...)
	}
	if err := logits.CheckArg("cross_entropy", "input"); err != nil {
		return lathe.Failed(err)
	}
	classDim := 1
	if logits.Rank() == 1 {
		classDim = 0
	}
	if target != nil && target.Err() == nil && target.DType().IsFloat() {
		// Class probabilities: mixed with the uniform distribution, as
		// torch's target·(1-ε) + ε/C (its shape is lathe's to check).
		n := 1.0
		if logits.Rank() > 0 {
			n = float64(logits.Dim(classDim))
		}
		return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
			return a[0].CrossEntropy(a[1].MulScalar(1-c.smoothing).AddScalar(c.smoothing/n), c.lathe()...)
		}, logits, target)
	}
	// The log-probabilities and the terms go with the graph (lathe.Compose),
	// and so do what the body makes from the weight (an argument too) and
	// its zeros, which Compose leaves alone (made from nothing).
	var zeros []*lathe.Tensor
	zerosLike := func(t *lathe.Tensor) *lathe.Tensor {
		z := lathe.Zeros(t.Device(), t.DType(), t.Shape()...)
		zeros = append(zeros, z)
		return z
	}
	out := lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		logits, target, weight := a[0], a[1], a[2]
		logp := logits.LogSoftmax(classDim)
		nll := logp.NLLLoss(target, c.lathe()...)
		if err := nll.Err(); err != nil {
			return nll // the target's shape and dtype, and the weight, were checked there
		}
		keep := keptTargets(target, c.ignoreIndex)
		terms, count := logp, keep.Cast(logp.DType())
		if weight != nil {
			// The weight along the class dim: [C] then a 1 per dim after it.
			shape := append([]int{weight.Dim(0)}, slices.Repeat([]int{1}, logits.Rank()-classDim-1)...)
			terms = logp.Mul(weight.Reshape(shape...))
			if weight.Dim(0) > 0 { // with no classes every target is ignored (nll checked), and count is 0s
				safe := lathe.Where(keep, target, zerosLike(target))
				wt := weight.IndexSelect(0, safe.Reshape(-1)).Reshape(target.Shape()...)
				count = lathe.Where(keep, wt, zerosLike(wt))
			}
		}
		smooth := terms.Sum(classDim).Neg()
		smooth = lathe.Where(keep, smooth, zerosLike(smooth))
		switch c.reduction {
		case lathe.ReduceMean:
			smooth = smooth.Sum().Div(count.Sum())
		case lathe.ReduceSum:
			smooth = smooth.Sum()
		}
		n := float64(logits.Dim(classDim))
		return nll.MulScalar(1 - c.smoothing).Add(smooth.MulScalar(c.smoothing / n))
	}, logits, target, c.weight)
	lathe.ReleaseWithGraph(out, zeros...)
	return out
}

// keptTargets is target ≠ ignore, compared exactly, as lathe's own class
// losses compare: NeScalar's float64 rounds an index past 2^53 (1<<62 + 1
// became 1<<62), which an int64 target may equal. An int32 target equals
// neither such an index nor the float64 it rounds to.
func keptTargets(target *lathe.Tensor, ignore int) *lathe.Tensor {
	if f := float64(ignore); target.DType() != lathe.Int64 || f < 1<<63 && int(f) == ignore {
		return target.NeScalar(f)
	}
	return target.Ne(lathe.Scalar(target.Device(), int64(ignore)))
}

// NLL is the negative log-likelihood of log-probabilities logp against class
// indices target, shaped as for CrossEntropy (torch.nn.functional.nll_loss).
func NLL(logp, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	c := lossConfigOf(opts)
	if c.smoothing != 0 {
		return lathe.Failed(nnError("nll_loss", lathe.ErrValue, "label_smoothing", "is not an option of nll_loss", "use nn.CrossEntropy"))
	}
	if err := c.check("nll_loss"); err != nil {
		return lathe.Failed(err)
	}
	return logp.NLLLoss(target, c.lathe()...)
}

// MSE is the mean (or sum, or none) of (x - target)²; shapes must be equal
// (torch.nn.functional.mse_loss).
func MSE(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	c := lossConfigOf(opts)
	if len(c.more) > 0 || c.ctc {
		return lathe.Failed(c.check("mse_loss"))
	}
	return x.MSELoss(target, lathe.WithReduction(c.reduction))
}

// BCEWithLogits is the binary cross entropy of sigmoid(x) against target
// probabilities of x's shape and dtype, computed from the logits stably as
// max(x, 0) - x·y + log(1 + exp(-|x|)) (torch's
// binary_cross_entropy_with_logits without weights).
func BCEWithLogits(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	c := lossConfigOf(opts)
	if err := x.CheckArg("bce_with_logits", "input"); err != nil {
		return lathe.Failed(err)
	}
	if err := target.CheckArg("bce_with_logits", "target"); err != nil {
		return lathe.Failed(err)
	}
	if !slices.Equal(x.Shape(), target.Shape()) {
		return lathe.Failed(nnError("bce_with_logits", lathe.ErrShape, "target", "has shape "+shapeString(target.Shape())+
			" but the input has "+shapeString(x.Shape()), "give a target of the input's shape"))
	}
	if err := c.check("bce_with_logits"); err != nil {
		return lathe.Failed(err)
	}
	if lathe.AutocastDType() != 0 {
		// On torch's fp32 list: the whole loss in float32, not only the
		// exp and log1p that lathe's table casts.
		x, target = float32Of(x), float32Of(target)
	}
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		x, target := a[0], a[1]
		loss := x.MaximumScalar(0).Sub(x.Mul(target)).Add(x.Abs().Neg().Exp().Log1p())
		switch c.reduction {
		case lathe.ReduceMean:
			return loss.Mean()
		case lathe.ReduceSum:
			return loss.Sum()
		}
		return loss
	}, x, target)
}

func shapeString(s []int) string {
	b := []byte{'['}
	for i, n := range s {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(append(b, ']'))
}

// float32Of is t cast to float32 where it is a 16-bit float, else t.
func float32Of(t *lathe.Tensor) *lathe.Tensor {
	if dt := t.DType(); dt == lathe.Float16 || dt == lathe.BFloat16 {
		return t.Cast(lathe.Float32)
	}
	return t
}
