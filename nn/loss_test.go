package nn

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
)

// Reference values from build/torchref/nnpkg_ref.py (PyTorch 1.13, float64).
var (
	ceLogits = []float64{1.0, 2.0, 0.5, 0.1, -1.0, 3.0, 2.0, 2.0, 2.0, -0.5, 0.3, 0.8}
	bceX     = []float64{0.5, -1.5, 3.0, -40.0, 60.0, 0.0}
	bceY     = []float64{1.0, 0.0, 0.3, 1.0, 0.0, 0.5}
)

func TestCrossEntropyMatchesTorch(t *testing.T) {
	target := []int64{1, 2, -100, 0}
	cases := []struct {
		name   string
		logits []float64
		shape  []int
		target []int64
		opts   []LossOption
		want   []float64
	}{
		{"ls0.1/mean", ceLogits, []int{4, 3}, target, []LossOption{LabelSmoothing(0.1)}, []float64{0.9030830978354054}},
		{"ls0.1/sum", ceLogits, []int{4, 3}, target, []LossOption{LabelSmoothing(0.1), Reduction(lathe.ReduceSum)}, []float64{2.7092492935062165}},
		{"ls0.1/none", ceLogits, []int{4, 3}, target, []LossOption{LabelSmoothing(0.1), Reduction(lathe.ReduceNone)},
			[]float64{0.5477021174412783, 0.30077421896049134, 0.0, 1.8607729571044473}},
		{"ls0.25/ignore0", ceLogits, []int{4, 3}, []int64{1, 2, 0, 0}, []LossOption{LabelSmoothing(0.25), IgnoreIndex(0)}, []float64{0.6592381682008848}},
		{"ls0.1/rank1", ceLogits[:3], []int{3}, []int64{2}, []LossOption{LabelSmoothing(0.1)}, []float64{1.8977021174412783}},
		{"plain", ceLogits, []int{4, 3}, target, nil, []float64{0.8219719867242944}},
	}
	for _, c := range cases {
		for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
			t.Run("cross_entropy/"+c.name+"/"+dt.String(), func(t *testing.T) {
				tg := lathe.FromSlice(lathe.CPU, c.target, len(c.target))
				if len(c.shape) == 1 {
					tg = lathe.Scalar(lathe.CPU, c.target[0])
				}
				tol := 1e-14
				if dt == lathe.Float32 {
					tol = 1e-6
				}
				got := CrossEntropy(toDType(t, c.logits, dt, c.shape...), tg, c.opts...)
				assertClose(t, c.name, values(t, got), c.want, tol)
			})
		}
	}
}

func TestBCEWithLogitsMatchesTorch(t *testing.T) {
	cases := []struct {
		name string
		r    lathe.Reduction
		want []float64
	}{
		{"mean", lathe.ReduceMean, []float64{17.252870799049425}},
		{"sum", lathe.ReduceSum, []float64{103.51722479429655}},
		{"none", lathe.ReduceNone, []float64{0.4740769841801067, 0.20141327798275246, 2.1485873515737417, 40.0, 60.0, 0.6931471805599453}},
	}
	for _, c := range cases {
		for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
			t.Run("bce_with_logits/"+c.name+"/"+dt.String(), func(t *testing.T) {
				tol := 1e-14
				if dt == lathe.Float32 {
					tol = 1e-6
				}
				got := BCEWithLogits(toDType(t, bceX, dt, 6), toDType(t, bceY, dt, 6), Reduction(c.r))
				assertClose(t, c.name, values(t, got), c.want, tol)
			})
		}
	}
}

func TestMSEAndNLL(t *testing.T) {
	x := toDType(t, []float64{1, 2, 3}, lathe.Float64, 3)
	y := toDType(t, []float64{0, 2, 5}, lathe.Float64, 3)
	assertClose(t, "mse", values(t, MSE(x, y)), []float64{5.0 / 3}, 1e-15)
	assertClose(t, "mse/sum", values(t, MSE(x, y, Reduction(lathe.ReduceSum))), []float64{5}, 0)
	logp := toDType(t, []float64{math.Log(0.5), math.Log(0.25), math.Log(0.25)}, lathe.Float64, 1, 3)
	assertClose(t, "nll", values(t, NLL(logp, lathe.FromSlice(lathe.CPU, []int64{1}, 1))), []float64{math.Log(4)}, 1e-15)
}

// released returns a released float32 tensor of the shape.
func released(shape ...int) *lathe.Tensor {
	x := lathe.Zeros(lathe.CPU, lathe.Float32, shape...)
	x.Release()
	return x
}

func TestLossErrors(t *testing.T) {
	logits := lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3)
	tg := lathe.FromSlice(lathe.CPU, []int64{0, 1}, 2)
	cases := []struct {
		name string
		got  *lathe.Tensor
		kind error
	}{
		{"ce/smoothing>1", CrossEntropy(logits, tg, LabelSmoothing(1.5)), lathe.ErrValue},
		{"ce/smoothing<0", CrossEntropy(logits, tg, LabelSmoothing(-0.1)), lathe.ErrValue},
		{"ce/smoothing/float-target", CrossEntropy(logits, lathe.Zeros(lathe.CPU, lathe.Float32, 2), LabelSmoothing(0.1)), lathe.ErrDType},
		{"ce/smoothing/target-shape", CrossEntropy(logits, lathe.FromSlice(lathe.CPU, []int64{0, 1, 2}, 3), LabelSmoothing(0.1)), lathe.ErrShape},
		{"nll/smoothing", NLL(logits, tg, LabelSmoothing(0.1)), lathe.ErrValue},
		{"ce/smoothing/weight-size", CrossEntropy(logits, tg, LabelSmoothing(0.1), Weight(lathe.Ones(lathe.CPU, lathe.Float32, 2))), lathe.ErrShape},
		{"ce/smoothing/weight-dtype", CrossEntropy(logits, tg, LabelSmoothing(0.1), Weight(lathe.Ones(lathe.CPU, lathe.Float64, 3))), lathe.ErrDType},
		{"ce/smoothing/released-weight", CrossEntropy(logits, tg, LabelSmoothing(0.1), Weight(released(3))), lathe.ErrReleased},
		{"bce/shape", BCEWithLogits(logits, lathe.Zeros(lathe.CPU, lathe.Float32, 3)), lathe.ErrShape},
		{"mse/shape", MSE(logits, lathe.Zeros(lathe.CPU, lathe.Float32, 3)), lathe.ErrShape},
		// A released argument is ErrReleased, not a shape mismatch (issue 15, defect 14).
		{"bce/released_input", BCEWithLogits(released(2, 3), lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3)), lathe.ErrReleased},
		{"bce/released_target", BCEWithLogits(logits, released(2, 3)), lathe.ErrReleased},
		{"ce/smoothing/released_logits", CrossEntropy(released(2, 3), tg, LabelSmoothing(0.1)), lathe.ErrReleased},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.got.Err(); !errors.Is(err, c.kind) {
				t.Fatalf("got %v, want %v", err, c.kind)
			}
		})
	}
	// A float64 target promotes the loss to float64, as torch's.
	if l := BCEWithLogits(logits, lathe.Zeros(lathe.CPU, lathe.Float64, 2, 3)); l.Err() != nil || l.DType() != lathe.Float64 {
		t.Errorf("bce of float32 logits and a float64 target: %v %v, want float64", l.DType(), l.Err())
	}
}

// Gradients through the losses (they are built from ops that have rules)
// against torch's, float64.
func TestLossGradientsMatchTorch(t *testing.T) {
	t.Run("cross_entropy/ls0.1/mean", func(t *testing.T) {
		x := toDType(t, ceLogits, lathe.Float64, 4, 3).RequireGrad()
		tg := lathe.FromSlice(lathe.CPU, []int64{1, 2, -100, 0}, 4)
		if err := CrossEntropy(x, tg, LabelSmoothing(0.1)).Backward(); err != nil {
			t.Fatal(err)
		}
		assertClose(t, "grad", values(t, x.Grad()), []float64{0.06596352142960524, -0.10160053804052362, 0.035637016610918386,
			0.005976757458336781, -0.005423053782308642, -0.0005537036760281561, 0.0, 0.0, 0.0,
			-0.26276576161059295, 0.09648344290456498, 0.16628231870602797}, 1e-14)
	})
	t.Run("bce_with_logits/mean", func(t *testing.T) {
		x := toDType(t, bceX, lathe.Float64, 6).RequireGrad()
		if err := BCEWithLogits(x, toDType(t, bceY, lathe.Float64, 6)).Backward(); err != nil {
			t.Fatal(err)
		}
		assertClose(t, "grad", values(t, x.Grad()), []float64{-0.0629234447996909, 0.030404253967726058, 0.10876235447040557,
			-0.16666666666666666, 0.16666666666666666, 0.0}, 1e-14)
	})
}

// An invalid Reduction is an ErrValue in every loss (issue 15, defect 16).
func TestInvalidReduction(t *testing.T) {
	x := lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3)
	tg := lathe.FromSlice(lathe.CPU, []int64{0, 1}, 2)
	for name, got := range map[string]*lathe.Tensor{
		"cross_entropy":           CrossEntropy(x, tg, Reduction(7)),
		"cross_entropy/smoothing": CrossEntropy(x, tg, Reduction(7), LabelSmoothing(0.1)),
		"nll_loss":                NLL(x, tg, Reduction(7)),
		"mse_loss":                MSE(x, x, Reduction(7)),
		"bce_with_logits":         BCEWithLogits(x, x, Reduction(7)),
	} {
		var e *lathe.Error
		if err := got.Err(); !errors.Is(err, lathe.ErrValue) || !errors.As(err, &e) || e.Arg != "reduction" {
			t.Errorf("%s with reduction 7: error %v, want an ErrValue about the reduction", name, err)
		}
	}
}

// TestBCEWithLogitsAutocast checks that under autocast the loss runs in
// float32 throughout (torch's fp32 list): on bfloat16 logits it equals
// the loss of the logits widened first.
func TestBCEWithLogitsAutocast(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float32{3.1, -2.7, 0.45, 17.5, -0.01, 1.9}, 2, 3).Cast(lathe.BFloat16)
	y := lathe.FromSlice(lathe.CPU, []float32{1, 0, 0.25, 1, 0.5, 0}, 2, 3).Cast(lathe.BFloat16)
	var got *lathe.Tensor
	if err := lathe.Autocast(lathe.BFloat16, func() { got = BCEWithLogits(x, y, Reduction(lathe.ReduceNone)) }); err != nil {
		t.Fatal(err)
	}
	want := BCEWithLogits(x.Cast(lathe.Float32), y.Cast(lathe.Float32), Reduction(lathe.ReduceNone))
	if got.DType() != lathe.Float32 {
		t.Fatalf("dtype %v under autocast, want float32", got.DType())
	}
	g, err := got.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	w, err := want.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g, w) {
		t.Errorf("under autocast %v, want float32's %v", g, w)
	}
}

// TestLabelSmoothingIgnoreIndexPastFloat64: with label smoothing, a target
// equal to an ignore index that float64 does not hold (past 2^53) is left
// out of the smoothing term and its mean, as torch's; the comparison went
// through a float64 (1<<62 + 1 became 1<<62), so the target was kept there
// (2.5706 for torch's 2.3076) and, with Weight, gathered as a class
// (ErrIndex). Found by lathe's FuzzLoss.
func TestLabelSmoothingIgnoreIndexPastFloat64(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float64{1, 2, 3, 0, 0, 10}, 2, 3)
	const ignore = 1<<62 + 1
	target := lathe.FromSlice(lathe.CPU, []int64{0, ignore})
	const want = 2.3076059644443805 // F.cross_entropy(x, [0, 2**62+1], ignore_index=2**62+1, label_smoothing=0.1), with weight ones too
	for name, got := range map[string]*lathe.Tensor{
		"unweighted": CrossEntropy(x, target, IgnoreIndex(ignore), LabelSmoothing(0.1)),
		"weighted":   CrossEntropy(x, target, IgnoreIndex(ignore), LabelSmoothing(0.1), Weight(lathe.Ones(lathe.CPU, lathe.Float64, 3))),
	} {
		v, err := got.Float64s()
		if err != nil || len(v) != 1 || math.Abs(v[0]-want) > 1e-12 {
			t.Errorf("%s: %v %v, want [%v]", name, v, err, want)
		}
	}
}

// TestLabelSmoothingNoClasses: an input of no classes whose targets are
// all ignored is torch's NaN mean with label smoothing and Weight too,
// where the weighted count gathered class 0 (ErrIndex).
func TestLabelSmoothingNoClasses(t *testing.T) {
	x := lathe.Zeros(lathe.CPU, lathe.Float64, 2, 0)
	target := lathe.FromSlice(lathe.CPU, []int64{-100, -100})
	for name, got := range map[string]*lathe.Tensor{
		"unweighted": CrossEntropy(x, target, LabelSmoothing(0.1)),
		"weighted":   CrossEntropy(x, target, LabelSmoothing(0.1), Weight(lathe.Zeros(lathe.CPU, lathe.Float64, 0))),
	} {
		if v, err := got.Float64s(); err != nil || len(v) != 1 || !math.IsNaN(v[0]) {
			t.Errorf("%s: %v %v, want [NaN]", name, v, err)
		}
	}
}
