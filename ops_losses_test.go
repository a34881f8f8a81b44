package lathe

import (
	"errors"
	"math"
	"runtime/debug"
	"testing"
)

// Tests of the losses and distances of ops_losses.go, ops_margin_loss.go
// and ops_distance.go beyond the conformance suite (internal/conformance,
// losses.json, which compares their values and gradients with torch's on
// every device): their rows of the bad-input table, the options a loss
// refuses, the value checks, and that they leave nothing behind.

func biPairLoss(f func(x, t *Tensor, opts ...LossOption) *Tensor, kinds string, opts ...LossOption) biOp {
	return biOp{args: func(dev Device) []*Tensor { return []*Tensor{biProb(dev), biProb(dev)} },
		call: func(a []*Tensor) *Tensor { return f(a[0], a[1], opts...) }, kinds: kinds,
		huge: func(dev Device) *Tensor { return f(biBig(dev, biHuge, biHuge), biBig(dev, biHuge, biHuge), opts...) }}
}

// biProb is a [2, 3] float32 tensor of probabilities.
func biProb(dev Device) *Tensor {
	return FromSlice(CPU, []float32{0.1, 0.5, 0.9, 0.3, 0.2, 0.7}).Reshape(2, 3).To(dev)
}

func biTriple(f func(a, b, c *Tensor, opts ...LossOption) *Tensor, kinds string, target func(dev Device) *Tensor) biOp {
	return biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 2, 3), target(dev)} },
		call: func(a []*Tensor) *Tensor { return f(a[0], a[1], a[2]) }, kinds: kinds,
		huge: func(dev Device) *Tensor {
			return f(biBig(dev, biHuge, biHuge), biBig(dev, biHuge, biHuge), biBig(dev, biHuge, biHuge))
		}}
}

// biLosses are the bad-input rows of the losses and distances.
func biLosses() map[string]biOp {
	t := map[string]biOp{
		"l1_loss":                     biPairLoss((*Tensor).L1Loss, "ff"),
		"smooth_l1_loss":              biPairLoss((*Tensor).SmoothL1Loss, "ff", Beta(0.5)),
		"huber_loss":                  biPairLoss((*Tensor).HuberLoss, "ff"),
		"kl_div":                      biPairLoss((*Tensor).KLDivLoss, "ff", WithReduction(ReduceBatchMean)),
		"binary_cross_entropy":        biPairLoss((*Tensor).BCELoss, "fs"),
		"soft_margin_loss":            biPairLoss((*Tensor).SoftMarginLoss, "fa"),
		"hinge_embedding_loss":        biPairLoss((*Tensor).HingeEmbeddingLoss, "fa"),
		"poisson_nll_loss":            biPairLoss((*Tensor).PoissonNLLLoss, "aa"),
		"multilabel_soft_margin_loss": biPairLoss((*Tensor).MultiLabelSoftMarginLoss, "fa"),
		"margin_ranking_loss":         biTriple(MarginRankingLoss, "aaa", func(dev Device) *Tensor { return biF(dev, 2, 3) }),
		"triplet_margin_loss":         biTriple(TripletMarginLoss, "aaa", func(dev Device) *Tensor { return biF(dev, 2, 3) }),
	}
	t["binary_cross_entropy_weighted"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biProb(dev), biProb(dev), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].BCELoss(a[1], LossWeight(a[2])) }, kinds: "fsF"}
	t["multilabel_soft_margin_loss_weighted"] = biOp{args: func(dev Device) []*Tensor {
		return []*Tensor{biF(dev, 2, 3), biProb(dev), biF(dev, 3)}
	},
		call: func(a []*Tensor) *Tensor { return a[0].MultiLabelSoftMarginLoss(a[1], LossWeight(a[2])) }, kinds: "faF"}
	t["cosine_embedding_loss"] = biOp{args: func(dev Device) []*Tensor {
		return []*Tensor{biF(dev, 2, 3), biF(dev, 2, 3), FromSlice(CPU, []float32{1, -1}).To(dev)}
	},
		call: func(a []*Tensor) *Tensor { return CosineEmbeddingLoss(a[0], a[1], a[2], Margin(0.1)) }, kinds: "aaa",
		huge: func(dev Device) *Tensor {
			return CosineEmbeddingLoss(biBig(dev, biHuge, biHuge), biBig(dev, biHuge, biHuge), biBig(dev, biHuge))
		}}
	t["gaussian_nll_loss"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 2, 3), biProb(dev)} },
		call: func(a []*Tensor) *Tensor { return a[0].GaussianNLLLoss(a[1], a[2]) }, kinds: "fff",
		huge: func(dev Device) *Tensor {
			return biBig(dev, biHuge, biHuge).GaussianNLLLoss(biBig(dev, biHuge, biHuge), biBig(dev, biHuge, biHuge))
		}}
	t["cosine_similarity"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return CosineSimilarity(a[0], a[1], 1, 1e-8) }, kinds: "aa",
		huge: func(dev Device) *Tensor {
			return CosineSimilarity(biBig(dev, biHuge, biHuge), biBig(dev, biHuge, biHuge), 0, 1e-8)
		}}
	t["pairwise_distance"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return PairwiseDistance(a[0], a[1], 2, 1e-6, false) }, kinds: "ff",
		huge: func(dev Device) *Tensor {
			return PairwiseDistance(biBig(dev, biHuge, biHuge), biBig(dev, biHuge, biHuge), 2, 1e-6, true)
		}}
	t["multi_margin_loss"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{2, 0}, 2).Cast(Int64)} },
		call: func(a []*Tensor) *Tensor { return a[0].MultiMarginLoss(a[1], NormP(2)) }, kinds: "fi",
		huge: func(dev Device) *Tensor {
			return biBig(dev, biHuge, biHuge).MultiMarginLoss(Zeros(dev, Int64, 1).Expand(biHuge))
		}}
	t["multi_margin_loss_weighted"] = biOp{args: func(dev Device) []*Tensor {
		return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{2, 0}, 2).Cast(Int64), biF(dev, 3)}
	},
		call: func(a []*Tensor) *Tensor { return a[0].MultiMarginLoss(a[1], ClassWeights(a[2])) }, kinds: "fiS"}
	t["normalize"] = biUnary(func(x *Tensor) *Tensor { return x.Normalize(2, -1, 1e-12) })
	return t
}

func TestLossesOptionsAndChecks(t *testing.T) {
	for _, dev := range biDevices(t) {
		x := biProb(dev)
		cases := []struct {
			what string
			out  *Tensor
			kind error
			op   string
			arg  string
		}{
			{"l1 with Beta", x.L1Loss(x, Beta(1)), ErrValue, "l1_loss", "Beta"},
			{"l1 with ClassWeights", x.L1Loss(x, ClassWeights(x)), ErrValue, "l1_loss", "weight"},
			{"l1 with IgnoreIndex", x.L1Loss(x, IgnoreIndex(3)), ErrValue, "l1_loss", "ignore_index"},
			{"l1 batchmean", x.L1Loss(x, WithReduction(ReduceBatchMean)), ErrValue, "l1_loss", "reduction"},
			{"kl reduction 9", x.KLDivLoss(x, WithReduction(Reduction(9))), ErrValue, "kl_div", "reduction"},
			{"huber with Margin", x.HuberLoss(x, Margin(1)), ErrValue, "huber_loss", "Margin"},
			{"smooth_l1 NaN beta", x.SmoothL1Loss(x, Beta(math.NaN())), ErrValue, "smooth_l1_loss", "beta"},
			{"huber delta 0", x.HuberLoss(x, Delta(0)), ErrValue, "huber_loss", "delta"},
			{"l1 target shape", x.L1Loss(x.Reshape(3, 2)), ErrShape, "l1_loss", "target"},
			{"l1 int", x.Cast(Int32).L1Loss(x), ErrDType, "l1_loss", "x"},
			{"bce dtypes", x.BCELoss(x.Cast(Float16)), ErrDType, "binary_cross_entropy", "target"},
			{"bce weight shape", x.BCELoss(x, LossWeight(Ones(dev, Float32, 2))), ErrShape, "binary_cross_entropy", "weight"},
			{"triplet shapes", TripletMarginLoss(x, x, x.Reshape(3, 2)), ErrShape, "triplet_margin_loss", "negative"},
			{"triplet LogTarget", TripletMarginLoss(x, x, x, LogTarget()), ErrValue, "triplet_margin_loss", "LogTarget"},
			{"cosine dim", CosineSimilarity(x, x, 2, 1e-8), ErrIndex, "cosine_similarity", "dim"},
			{"normalize int", x.Cast(Int64).Normalize(2, 1, 1e-12), ErrDType, "normalize", "x"},
			{"gaussian var shape", x.GaussianNLLLoss(x, Ones(dev, Float32, 3)), ErrShape, "gaussian_nll_loss", "var"},
			{"cosine embedding target", CosineEmbeddingLoss(x, x, Ones(dev, Float32, 3)), ErrShape, "cosine_embedding_loss", "target"},
			{"multilabel 0-d", x.Sum().MultiLabelSoftMarginLoss(x.Sum()), ErrShape, "multilabel_soft_margin_loss", "x"},
			{"multi margin p 3", x.MultiMarginLoss(Zeros(dev, Int64, 2), NormP(3)), ErrValue, "multi_margin_loss", "p"},
			{"multi margin int32", x.MultiMarginLoss(Zeros(dev, Int32, 2)), ErrDType, "multi_margin_loss", "target"},
			{"multi margin weight", x.MultiMarginLoss(Zeros(dev, Int64, 2), ClassWeights(Ones(dev, Float32, 2))), ErrShape, "multi_margin_loss", "weight"},
		}
		for _, c := range cases {
			moreOpsErr(t, dev.String()+": "+c.what, c.out.Err(), c.kind, c.op, c.arg)
		}
		// The value checks run where the values are: the error comes with
		// the result on the cpu, at the next synchronisation elsewhere.
		for _, c := range []struct {
			what, op, arg string
			out           func() *Tensor
			kind          error
		}{
			{"bce x > 1", "binary_cross_entropy", "x", func() *Tensor { return x.MulScalar(2).BCELoss(x) }, nil},
			{"bce x NaN", "binary_cross_entropy", "x", func() *Tensor { return x.Log().Neg().Log().BCELoss(x) }, nil},
			{"gaussian var < 0", "gaussian_nll_loss", "var", func() *Tensor { return x.GaussianNLLLoss(x, x.SubScalar(0.25)) }, nil},
			{"multi margin target 3", "multi_margin_loss", "target", func() *Tensor {
				return x.MultiMarginLoss(FromSlice(CPU, []int64{0, 3}).To(dev))
			}, ErrIndex},
		} {
			out := c.out()
			err := out.Err()
			if err == nil {
				_, err = out.Float32s()
			}
			if err == nil {
				err = Synchronize(dev)
			}
			if c.kind == nil {
				c.kind = ErrValue
			}
			moreOpsErr(t, dev.String()+": "+c.what, err, c.kind, c.op, c.arg)
			// The loss's own check reports it; nothing inside may leave a
			// second failure pending on the device (multi_margin_loss's
			// gather of the bad target did, which a later call met).
			if err := Synchronize(dev); err != nil {
				t.Errorf("%s: %s left a failure pending: %v", dev, c.what, err)
			}
		}
		// A valid call after the refusals works.
		if _, err := x.BCELoss(x).Float32s(); err != nil {
			t.Errorf("%s: bce after a refused one: %v", dev, err)
		}
	}
}

func TestLossesLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		// [64, 128]: 32 KiB, above the size under which the cpu's
		// MemoryStats leaves buffers out.
		x := Rand(CPU, Float32, 64, 128).MulScalar(0.8).AddScalar(0.1).To(dev).RequireGrad()
		y := Rand(CPU, Float32, 64, 128).To(dev)
		v := Rand(CPU, Float32, 64).AddScalar(0.1).To(dev)
		lab := Rand(CPU, Float32, 64).SubScalar(0.5).Sign().To(dev)
		w := Ones(dev, Float32, 128)
		sign, flip, counts := y.SubScalar(0.5).Sign(), y.Flip(0), y.MulScalar(3)
		classes := y.ArgMax(1)
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"l1":         func(x *Tensor) *Tensor { return x.L1Loss(y) },
			"smoothl1":   func(x *Tensor) *Tensor { return x.SmoothL1Loss(y, Beta(0.3)) },
			"huber":      func(x *Tensor) *Tensor { return x.HuberLoss(y, WithReduction(ReduceSum)) },
			"bce":        func(x *Tensor) *Tensor { return x.BCELoss(y, LossWeight(w)) },
			"kl":         func(x *Tensor) *Tensor { return x.Log().KLDivLoss(y, WithReduction(ReduceBatchMean)) },
			"cos":        func(x *Tensor) *Tensor { return CosineSimilarity(x, y, 1, 1e-8) },
			"pdist":      func(x *Tensor) *Tensor { return PairwiseDistance(x, y, 3, 1e-6, true) },
			"normalize":  func(x *Tensor) *Tensor { return x.Normalize(2, 0, 1e-12) },
			"ranking":    func(x *Tensor) *Tensor { return MarginRankingLoss(x, y, sign, Margin(0.2)) },
			"hinge":      func(x *Tensor) *Tensor { return x.HingeEmbeddingLoss(sign) },
			"softmargin": func(x *Tensor) *Tensor { return x.SoftMarginLoss(sign) },
			"multilabel": func(x *Tensor) *Tensor { return x.MultiLabelSoftMarginLoss(y, LossWeight(w)) },
			"cosemb":     func(x *Tensor) *Tensor { return CosineEmbeddingLoss(x, y, lab) },
			"triplet":    func(x *Tensor) *Tensor { return TripletMarginLoss(x, y, flip, Swap()) },
			"poisson":    func(x *Tensor) *Tensor { return x.PoissonNLLLoss(counts, FullLoss()) },
			"gaussian":   func(x *Tensor) *Tensor { return x.GaussianNLLLoss(y, v) },
			"multimargin": func(x *Tensor) *Tensor {
				return x.MultiMarginLoss(classes, NormP(2), ClassWeights(w), WithReduction(ReduceNone))
			},
		} {
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
	}
}

// TestLossesReductionString checks the name of the new reduction.
func TestLossesReductionString(t *testing.T) {
	if s := ReduceBatchMean.String(); s != "ReduceBatchMean" {
		t.Errorf("ReduceBatchMean.String() = %q", s)
	}
	if ReduceBatchMean.Valid() {
		t.Errorf("ReduceBatchMean.Valid() = true, want false (only KLDivLoss takes it)")
	}
	var e *Error
	if err := Ones(CPU, Float32, 2).MSELoss(Ones(CPU, Float32, 2), WithReduction(ReduceBatchMean)).Err(); !errors.As(err, &e) {
		t.Errorf("mse_loss with ReduceBatchMean: %v, want a refusal", err)
	}
}

// TestLossesAutocast checks that the losses on torch's autocast fp32 list
// compute a bfloat16 input in float32 and give float32, as torch's.
func TestLossesAutocast(t *testing.T) {
	x := FromSlice(CPU, []float32{0.25, 1.5, -2, 3}).Cast(BFloat16)
	y := FromSlice(CPU, []float32{0.5, 1, 1, -1}).Cast(BFloat16)
	for name, f := range map[string]func() *Tensor{
		"l1":         func() *Tensor { return x.L1Loss(y) },
		"huber":      func() *Tensor { return x.HuberLoss(y, Delta(0.5)) },
		"softmargin": func() *Tensor { return x.SoftMarginLoss(y) },
		"cosine":     func() *Tensor { return CosineSimilarity(x, y, 0, 1e-8) },
	} {
		var out *Tensor
		if err := Autocast(BFloat16, func() { out = f() }); err != nil {
			t.Fatal(err)
		}
		if err := out.Err(); err != nil || out.DType() != Float32 {
			t.Errorf("%s under autocast: %v, dtype %v, want float32", name, err, out.DType())
		}
	}
}
