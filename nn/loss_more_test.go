package nn

import (
	"errors"
	"math"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestMoreLosses checks that nn's wrappers of lathe's losses pass their
// options on (values against lathe's own; internal/conformance holds
// lathe's against torch's), and refuse what the loss does not take.
func TestMoreLosses(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float32{0.1, 0.5, 0.9, 0.3, 0.2, 0.7}).Reshape(2, 3)
	y := lathe.FromSlice(lathe.CPU, []float32{0.2, 0.5, 0.1, 0.9, 0.6, 0.4}).Reshape(2, 3)
	w := lathe.FromSlice(lathe.CPU, []float32{1, 2, 0.5})
	sign := y.SubScalar(0.5).Sign()
	lp := lathe.RandN(lathe.CPU, lathe.Float32, 4, 2, 4).LogSoftmax(2)
	labels := lathe.FromSlice(lathe.CPU, []int64{1, 2, 2, 1}).Reshape(2, 2)
	il, tl := lathe.FromSlice(lathe.CPU, []int64{4, 1}), lathe.FromSlice(lathe.CPU, []int64{2, 2})
	for _, c := range []struct {
		name      string
		got, want *lathe.Tensor
	}{
		{"l1", L1(x, y, Reduction(lathe.ReduceSum)), x.L1Loss(y, lathe.WithReduction(lathe.ReduceSum))},
		{"smooth_l1", SmoothL1(x, y, Beta(0.25)), x.SmoothL1Loss(y, lathe.Beta(0.25))},
		{"huber", Huber(x, y, Delta(0.3), Reduction(lathe.ReduceNone)), x.HuberLoss(y, lathe.Delta(0.3), lathe.WithReduction(lathe.ReduceNone))},
		{"bce", BCE(x, y, Weight(w)), x.BCELoss(y, lathe.LossWeight(w))},
		{"kl", KLDiv(x.Log(), y.Log(), LogTarget(), Reduction(lathe.ReduceBatchMean)),
			x.Log().KLDivLoss(y.Log(), lathe.LogTarget(), lathe.WithReduction(lathe.ReduceBatchMean))},
		{"hinge", HingeEmbedding(x, sign, Margin(0.6)), x.HingeEmbeddingLoss(sign, lathe.Margin(0.6))},
		{"soft_margin", SoftMargin(x, sign), x.SoftMarginLoss(sign)},
		{"multilabel", MultiLabelSoftMargin(x, y, Weight(w)), x.MultiLabelSoftMarginLoss(y, lathe.LossWeight(w))},
		{"poisson", PoissonNLL(x, y, LogInput(false), FullLoss(), LossEps(0.1)),
			x.PoissonNLLLoss(y, lathe.LogInput(false), lathe.FullLoss(), lathe.Eps(0.1))},
		{"gaussian", GaussianNLL(x, y, w.AddScalar(0).Reshape(1, 3).Expand(2, 3), FullLoss()),
			x.GaussianNLLLoss(y, w.Reshape(1, 3).Expand(2, 3), lathe.FullLoss())},
		{"ranking", MarginRanking(x, y, sign, Margin(0.1)), lathe.MarginRankingLoss(x, y, sign, lathe.Margin(0.1))},
		{"cosine", CosineEmbedding(x, y, sign.Sum(1).Sign(), Margin(0.2)), lathe.CosineEmbeddingLoss(x, y, sign.Sum(1).Sign(), lathe.Margin(0.2))},
		{"multi_margin", MultiMargin(x, lathe.FromSlice(lathe.CPU, []int64{2, 0}), NormP(2), Margin(0.5), Weight(w)),
			x.MultiMarginLoss(lathe.FromSlice(lathe.CPU, []int64{2, 0}), lathe.NormP(2), lathe.Margin(0.5), lathe.ClassWeights(w))},
		{"triplet", TripletMargin(x, y, y.Flip(0), Margin(2), NormP(1), LossEps(0), Swap()),
			lathe.TripletMarginLoss(x, y, y.Flip(0), lathe.Margin(2), lathe.NormP(1), lathe.Eps(0), lathe.Swap())},
		{"ctc", CTC(lp, labels, il, tl, Blank(3), ZeroInfinity(), Reduction(lathe.ReduceNone)),
			lathe.CTCLoss(lp, labels, il, tl, 3, lathe.ReduceNone, true)},
		{"ctc/default", CTC(lp, labels, il, tl.SubScalar(1)), lathe.CTCLoss(lp, labels, il, tl.SubScalar(1), 0, lathe.ReduceMean, false)},
	} {
		g, err := c.got.Float32s()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		want, err := c.want.Float32s()
		if err != nil {
			t.Errorf("%s: lathe's: %v", c.name, err)
			continue
		}
		for i := range g {
			if math.Abs(float64(g[i]-want[i])) > 1e-6 || math.IsNaN(float64(g[i])) {
				t.Errorf("%s: %v, want %v", c.name, g, want)
				break
			}
		}
	}
	for _, c := range []struct {
		name string
		out  *lathe.Tensor
		arg  string
	}{
		{"l1 with Margin", L1(x, y, Margin(1)), "Margin"},
		{"mse with Beta", MSE(x, y, Beta(1)), "options"},
		{"cross_entropy with Delta", CrossEntropy(x, lathe.FromSlice(lathe.CPU, []int64{0, 1}), Delta(1)), "options"},
		{"bce with IgnoreIndex", BCE(x, y, IgnoreIndex(1)), "ignore_index"},
		{"huber with smoothing", Huber(x, y, LabelSmoothing(0.1)), "label_smoothing"},
		{"l1 batchmean", L1(x, y, Reduction(lathe.ReduceBatchMean)), "reduction"},
		{"multi_margin with IgnoreIndex", MultiMargin(x, lathe.FromSlice(lathe.CPU, []int64{2, 0}), IgnoreIndex(0)), "ignore_index"},
		{"l1 with Blank", L1(x, y, Blank(1)), "options"},
		{"mse with ZeroInfinity", MSE(x, y, ZeroInfinity()), "options"},
		{"multi_margin with Blank", MultiMargin(x, lathe.FromSlice(lathe.CPU, []int64{2, 0}), Blank(1)), "options"},
		{"ctc with Margin", CTC(lp, labels, il, tl, Margin(1)), "options"},
		{"ctc with Weight", CTC(lp, labels, il, tl, Weight(w)), "weight"},
		{"ctc with IgnoreIndex", CTC(lp, labels, il, tl, IgnoreIndex(0)), "ignore_index"},
		{"ctc with blank 4", CTC(lp, labels, il, tl, Blank(4)), "blank"},
	} {
		var e *lathe.Error
		if err := c.out.Err(); !errors.As(err, &e) || !errors.Is(err, lathe.ErrValue) || e.Arg != c.arg {
			t.Errorf("%s: %v, want ErrValue naming %s", c.name, err, c.arg)
		}
	}
}
