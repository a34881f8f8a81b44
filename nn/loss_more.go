package nn

import "github.com/lathe-ml/lathe"

// The losses of torch.nn.functional beyond cross_entropy, nll_loss,
// mse_loss and binary_cross_entropy_with_logits, over lathe's own
// (ops_losses.go, ops_margin_loss.go): each takes Reduction (and
// lathe.ReduceBatchMean for KLDiv), Weight where torch's takes a weight
// (BCE's broadcasts to the input, MultiLabelSoftMargin's is one per
// class), and the options below, with torch's defaults. An option that a
// loss does not take is refused, naming it.

// Beta sets SmoothL1's beta (≥ 0; 1 by default).
func Beta(b float64) LossOption { return more(lathe.Beta(b)) }

// Delta sets Huber's delta (> 0; 1 by default).
func Delta(d float64) LossOption { return more(lathe.Delta(d)) }

// Margin sets the margin of MarginRanking (0 by default), HingeEmbedding
// (1), CosineEmbedding (0) and TripletMargin (1).
func Margin(m float64) LossOption { return more(lathe.Margin(m)) }

// LogTarget says that KLDiv's target holds log-probabilities.
func LogTarget() LossOption { return more(lathe.LogTarget()) }

// NormP sets TripletMargin's norm order (2 by default).
func NormP(p float64) LossOption { return more(lathe.NormP(p)) }

// LossEps sets the eps of TripletMargin (1e-6 by default), PoissonNLL
// (1e-8) and GaussianNLL (1e-6).
func LossEps(eps float64) LossOption { return more(lathe.Eps(eps)) }

// Swap makes TripletMargin use the distance swap.
func Swap() LossOption { return more(lathe.Swap()) }

// LogInput sets whether PoissonNLL's input is the log of the rate (true by
// default).
func LogInput(b bool) LossOption { return more(lathe.LogInput(b)) }

// FullLoss adds the constant terms of PoissonNLL and GaussianNLL.
func FullLoss() LossOption { return more(lathe.FullLoss()) }

func more(o lathe.LossOption) LossOption {
	return func(c *lossConfig) { c.more = append(c.more, o) }
}

// elementwise are c's options as lathe's losses other than the class
// losses take them: the weight is LossWeight's, and the ignore index, where
// set, goes on for lathe to refuse. Label smoothing is refused here.
func (c lossConfig) elementwise(op string) ([]lathe.LossOption, error) {
	if c.smoothing != 0 {
		return nil, nnError(op, lathe.ErrValue, "label_smoothing", "is not an option of "+op, "use nn.CrossEntropy")
	}
	if c.ctc {
		return nil, nnError(op, lathe.ErrValue, "options", "include Blank or ZeroInfinity, which only nn.CTC takes", "leave them out")
	}
	opts := append([]lathe.LossOption{lathe.WithReduction(c.reduction)}, c.more...)
	if c.ignoreIndex != -100 {
		opts = append(opts, lathe.IgnoreIndex(c.ignoreIndex))
	}
	if c.weight != nil {
		opts = append(opts, lathe.LossWeight(c.weight))
	}
	return opts, nil
}

// pairLoss runs a lathe loss of x and target with c's options.
func pairLoss(op string, f func(x, t *lathe.Tensor, opts ...lathe.LossOption) *lathe.Tensor, x, target *lathe.Tensor, opts []LossOption) *lathe.Tensor {
	o, err := lossConfigOf(opts).elementwise(op)
	if err != nil {
		return lathe.Failed(err)
	}
	return f(x, target, o...)
}

// L1 is the mean (or sum, or none) of |x - target| (torch.nn.functional.l1_loss).
func L1(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return pairLoss("l1_loss", (*lathe.Tensor).L1Loss, x, target, opts)
}

// SmoothL1 is torch.nn.functional.smooth_l1_loss (lathe.Tensor.SmoothL1Loss), with Beta.
func SmoothL1(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return pairLoss("smooth_l1_loss", (*lathe.Tensor).SmoothL1Loss, x, target, opts)
}

// Huber is torch.nn.functional.huber_loss (lathe.Tensor.HuberLoss), with Delta.
func Huber(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return pairLoss("huber_loss", (*lathe.Tensor).HuberLoss, x, target, opts)
}

// BCE is the binary cross entropy of probabilities x against target
// (torch.nn.functional.binary_cross_entropy; lathe.Tensor.BCELoss), with
// Weight broadcast to x's shape.
func BCE(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return pairLoss("binary_cross_entropy", (*lathe.Tensor).BCELoss, x, target, opts)
}

// KLDiv is torch.nn.functional.kl_div of log-probabilities x against
// target (lathe.Tensor.KLDivLoss), with LogTarget and
// Reduction(lathe.ReduceBatchMean).
func KLDiv(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return pairLoss("kl_div", (*lathe.Tensor).KLDivLoss, x, target, opts)
}

// HingeEmbedding is torch.nn.functional.hinge_embedding_loss
// (lathe.Tensor.HingeEmbeddingLoss), with Margin.
func HingeEmbedding(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return pairLoss("hinge_embedding_loss", (*lathe.Tensor).HingeEmbeddingLoss, x, target, opts)
}

// SoftMargin is torch.nn.functional.soft_margin_loss (lathe.Tensor.SoftMarginLoss).
func SoftMargin(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return pairLoss("soft_margin_loss", (*lathe.Tensor).SoftMarginLoss, x, target, opts)
}

// MultiLabelSoftMargin is torch.nn.functional.multilabel_soft_margin_loss
// (lathe.Tensor.MultiLabelSoftMarginLoss), with Weight (one per class).
func MultiLabelSoftMargin(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return pairLoss("multilabel_soft_margin_loss", (*lathe.Tensor).MultiLabelSoftMarginLoss, x, target, opts)
}

// PoissonNLL is torch.nn.functional.poisson_nll_loss
// (lathe.Tensor.PoissonNLLLoss), with LogInput, FullLoss and LossEps.
func PoissonNLL(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return pairLoss("poisson_nll_loss", (*lathe.Tensor).PoissonNLLLoss, x, target, opts)
}

// GaussianNLL is torch.nn.functional.gaussian_nll_loss of x against target
// with variance var (lathe.Tensor.GaussianNLLLoss), with FullLoss and
// LossEps.
func GaussianNLL(x, target, variance *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	o, err := lossConfigOf(opts).elementwise("gaussian_nll_loss")
	if err != nil {
		return lathe.Failed(err)
	}
	return x.GaussianNLLLoss(target, variance, o...)
}

// tripleLoss runs a lathe loss of three tensors with c's options.
func tripleLoss(op string, f func(a, b, c *lathe.Tensor, opts ...lathe.LossOption) *lathe.Tensor, a, b, c *lathe.Tensor, opts []LossOption) *lathe.Tensor {
	o, err := lossConfigOf(opts).elementwise(op)
	if err != nil {
		return lathe.Failed(err)
	}
	return f(a, b, c, o...)
}

// MarginRanking is torch.nn.functional.margin_ranking_loss
// (lathe.MarginRankingLoss), with Margin.
func MarginRanking(x1, x2, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return tripleLoss("margin_ranking_loss", lathe.MarginRankingLoss, x1, x2, target, opts)
}

// CosineEmbedding is torch.nn.functional.cosine_embedding_loss
// (lathe.CosineEmbeddingLoss), with Margin.
func CosineEmbedding(x1, x2, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return tripleLoss("cosine_embedding_loss", lathe.CosineEmbeddingLoss, x1, x2, target, opts)
}

// TripletMargin is torch.nn.functional.triplet_margin_loss
// (lathe.TripletMarginLoss), with Margin, NormP, LossEps and Swap.
func TripletMargin(anchor, positive, negative *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	return tripleLoss("triplet_margin_loss", lathe.TripletMarginLoss, anchor, positive, negative, opts)
}

// MultiMargin is torch.nn.functional.multi_margin_loss of x ([N, C] or
// [C]) against int64 class indices (lathe.Tensor.MultiMarginLoss), with
// NormP (1 or 2), Margin and Weight (class weights, [C]).
func MultiMargin(x, target *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	c := lossConfigOf(opts)
	if c.smoothing != 0 {
		return lathe.Failed(nnError("multi_margin_loss", lathe.ErrValue, "label_smoothing", "is not an option of multi_margin_loss",
			"use nn.CrossEntropy"))
	}
	if c.ctc {
		return lathe.Failed(nnError("multi_margin_loss", lathe.ErrValue, "options", "include Blank or ZeroInfinity, which only nn.CTC takes",
			"leave them out"))
	}
	o := append([]lathe.LossOption{lathe.WithReduction(c.reduction), lathe.ClassWeights(c.weight)}, c.more...)
	if c.ignoreIndex != -100 {
		o = append(o, lathe.IgnoreIndex(c.ignoreIndex))
	}
	return x.MultiMarginLoss(target, o...)
}

// Blank sets CTC's blank class (0 by default).
func Blank(b int) LossOption { return func(c *lossConfig) { c.blank, c.ctc = b, true } }

// ZeroInfinity makes CTC give a loss of 0, and a gradient of 0, where no
// alignment exists (torch's zero_infinity=True).
func ZeroInfinity() LossOption { return func(c *lossConfig) { c.zeroInf, c.ctc = true, true } }

// CTC is the connectionist temporal classification loss of
// log-probabilities logProbs ([T, N, C], or [T, C] unbatched) against
// targets (padded [N, S] or concatenated), with each sample's input and
// target lengths (integer tensors), as torch.nn.functional.ctc_loss and
// torch.nn.CTCLoss (lathe.CTCLoss says what it computes), with Reduction,
// Blank and ZeroInfinity.
func CTC(logProbs, targets, inputLengths, targetLengths *lathe.Tensor, opts ...LossOption) *lathe.Tensor {
	const op = "ctc_loss"
	c := lossConfigOf(opts)
	switch {
	case len(c.more) > 0:
		return lathe.Failed(nnError(op, lathe.ErrValue, "options", "include an option of another loss (Beta, Delta, Margin, ...), which ctc_loss does not take",
			"leave it out"))
	case c.smoothing != 0:
		return lathe.Failed(nnError(op, lathe.ErrValue, "label_smoothing", "is not an option of ctc_loss", "leave LabelSmoothing out"))
	case c.weight != nil:
		return lathe.Failed(nnError(op, lathe.ErrValue, "weight", "is not an option of ctc_loss", "leave Weight out"))
	case c.ignoreIndex != -100:
		return lathe.Failed(nnError(op, lathe.ErrValue, "ignore_index", "is not an option of ctc_loss", "leave IgnoreIndex out"))
	}
	return lathe.CTCLoss(logProbs, targets, inputLengths, targetLengths, c.blank, c.reduction, c.zeroInf)
}
