package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the losses and distances that lathe builds as
// composites (losses.json and grad_losses.json, made by
// build/torchref/losses.py). Every loss takes "reduction" ("mean", "sum",
// "none", and "batchmean" for kl_div); weights are attributes (a list
// and its shape), as torch takes no gradient for them.

func init() {
	for k, f := range lossOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_losses.go and another table")
		}
		ops[k] = f
		accumulatingOps[k] = true
	}
}

// lossReduction is the case's reduction as a lathe option.
func lossReduction(a *Attrs) lathe.LossOption {
	if a.Str("reduction") == "batchmean" {
		return lathe.WithReduction(lathe.ReduceBatchMean)
	}
	return reduction(a, lathe.WithReduction, lathe.ReduceMean, lathe.ReduceSum, lathe.ReduceNone)
}

// lossOpts are the case's reduction and the options it names.
func lossOpts(a *Attrs, x *lathe.Tensor) []lathe.LossOption {
	opts := []lathe.LossOption{lossReduction(a)}
	for k, f := range map[string]func(float64) lathe.LossOption{
		"beta": lathe.Beta, "delta": lathe.Delta, "margin": lathe.Margin, "p": lathe.NormP, "eps": lathe.Eps,
	} {
		if a.Has(k) {
			opts = append(opts, f(a.Float(k)))
		}
	}
	if a.Has("log_target") && a.Bool("log_target") {
		opts = append(opts, lathe.LogTarget())
	}
	if a.Has("swap") && a.Bool("swap") {
		opts = append(opts, lathe.Swap())
	}
	if a.Has("full") && a.Bool("full") {
		opts = append(opts, lathe.FullLoss())
	}
	if a.Has("log_input") {
		opts = append(opts, lathe.LogInput(a.Bool("log_input")))
	}
	if a.Has("weight") {
		w := lathe.FromSlice(lathe.CPU, a.Floats("weight")).Reshape(a.Ints("weight_shape")...)
		opts = append(opts, lathe.LossWeight(w.Cast(x.DType()).To(x.Device())))
	}
	return opts
}

// pairLoss is a loss method of x and a target.
func pairLoss(f func(x, t *lathe.Tensor, opts ...lathe.LossOption) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(f(in[0], in[1], lossOpts(a, in[0])...))
	}
}

// tripleLoss is a loss function of three tensors.
func tripleLoss(f func(a, b, c *lathe.Tensor, opts ...lathe.LossOption) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(f(in[0], in[1], in[2], lossOpts(a, in[0])...))
	}
}

var lossOps = map[string]opFunc{
	"l1_loss":                     pairLoss((*lathe.Tensor).L1Loss),
	"smooth_l1_loss":              pairLoss((*lathe.Tensor).SmoothL1Loss),
	"huber_loss":                  pairLoss((*lathe.Tensor).HuberLoss),
	"binary_cross_entropy":        pairLoss((*lathe.Tensor).BCELoss),
	"kl_div":                      pairLoss((*lathe.Tensor).KLDivLoss),
	"soft_margin_loss":            pairLoss((*lathe.Tensor).SoftMarginLoss),
	"hinge_embedding_loss":        pairLoss((*lathe.Tensor).HingeEmbeddingLoss),
	"poisson_nll_loss":            pairLoss((*lathe.Tensor).PoissonNLLLoss),
	"multilabel_soft_margin_loss": pairLoss((*lathe.Tensor).MultiLabelSoftMarginLoss),
	"margin_ranking_loss":         tripleLoss(lathe.MarginRankingLoss),
	"cosine_embedding_loss":       tripleLoss(lathe.CosineEmbeddingLoss),
	"triplet_margin_loss":         tripleLoss(lathe.TripletMarginLoss),
	"multi_margin_loss": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		opts := []lathe.LossOption{lossReduction(a)}
		if a.Has("p") {
			opts = append(opts, lathe.NormP(a.Float("p")))
		}
		if a.Has("margin") {
			opts = append(opts, lathe.Margin(a.Float("margin")))
		}
		if a.Has("weight") { // class weights, [C]
			opts = append(opts, lathe.ClassWeights(classWeight(a, in[0])))
		}
		return one(in[0].MultiMarginLoss(in[1], opts...))
	},
	"gaussian_nll_loss": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].GaussianNLLLoss(in[1], in[2], lossOpts(a, in[0])...))
	},

	"cosine_similarity": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.CosineSimilarity(in[0], in[1], a.Int("dim"), a.Float("eps")))
	},
	"pairwise_distance": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.PairwiseDistance(in[0], in[1], a.Float("p"), a.Float("eps"), a.Bool("keepdim")))
	},
	"normalize": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Normalize(a.Float("p"), a.Int("dim"), a.Float("eps")))
	},
}
