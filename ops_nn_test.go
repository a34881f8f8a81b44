package lathe

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestNNValues checks the losses and norms against torch.nn.functional in
// float64 (torchNN, written by build/torchref/literals.py).
func TestNNValues(t *testing.T) {
	logits := FromSlice(CPU, []float64{1, 2, 3, 1000, 0, -1000}, 2, 3)
	target := FromSlice(CPU, []int64{2, 0})
	ln := FromSlice(CPU, []float64{1, 2, 4, 0, 0, 3}, 2, 3)
	cases := map[string]*Tensor{
		"log_softmax/large":       logits.LogSoftmax(1),
		"softmax/rows_sum_to_one": logits.Softmax(-1).Sum(1),
		"cross_entropy/mean":      logits.CrossEntropy(target),
		"cross_entropy/none":      logits.CrossEntropy(target, WithReduction(ReduceNone)),
		"cross_entropy/sum":       logits.CrossEntropy(target, WithReduction(ReduceSum)),
		"cross_entropy/ignore":    logits.CrossEntropy(FromSlice(CPU, []int64{2, -100})),
		"nll_loss/single":         FromSlice(CPU, []float64{-0.5, -1, -2}).NLLLoss(Scalar(CPU, int64(1))),
		"mse_loss":                FromSlice(CPU, []float64{1, 2, 3}).MSELoss(FromSlice(CPU, []float64{1, 0, 0})),
		"layer_norm":              ln.LayerNorm([]int{3}, nil, nil, 1e-5),
		"layer_norm/affine": ln.Narrow(0, 0, 1).LayerNorm([]int{3}, FromSlice(CPU, []float64{2, 2, 2}),
			FromSlice(CPU, []float64{1, 1, 1}), 1e-5),
		"dropout/eval": logits.Dropout(0.5, false),
	}
	for _, name := range nnValueNames {
		t.Run(name, func(t *testing.T) {
			want := torchRef(t, torchNN, name)
			checkValues(t, cases[name], want.Shape, want.Values, 1e-12)
		})
	}
}

// nnValueNames are TestNNValues' cases, in order.
var nnValueNames = []string{"log_softmax/large", "softmax/rows_sum_to_one", "cross_entropy/mean", "cross_entropy/none",
	"cross_entropy/sum", "cross_entropy/ignore", "nll_loss/single", "mse_loss", "layer_norm", "layer_norm/affine",
	"dropout/eval"}

func TestNNErrors(t *testing.T) {
	x := Zeros(CPU, Float32, 2, 3)
	cases := []struct {
		name string
		got  *Tensor
		kind error
	}{
		{"cross_entropy/float_target", x.CrossEntropy(Zeros(CPU, Float32, 2)), ErrDType},
		{"cross_entropy/target_shape", x.CrossEntropy(Zeros(CPU, Int64, 3)), ErrShape},
		{"cross_entropy/class_out_of_range", x.CrossEntropy(FromSlice(CPU, []int64{0, 3})), ErrIndex},
		{"cross_entropy/weight_size", x.CrossEntropy(FromSlice(CPU, []int64{0, 2}), ClassWeights(Ones(CPU, Float32, 2))), ErrShape},
		{"cross_entropy/weight_2d", x.CrossEntropy(FromSlice(CPU, []int64{0, 2}), ClassWeights(Ones(CPU, Float32, 1, 3))), ErrShape},
		{"nll_loss/weight_dtype", x.NLLLoss(FromSlice(CPU, []int64{0, 2}), ClassWeights(Ones(CPU, Float64, 3))), ErrDType},
		{"nll_loss/weight_class_out_of_range", x.NLLLoss(FromSlice(CPU, []int64{0, 3}), ClassWeights(Ones(CPU, Float32, 3))), ErrIndex},
		{"mse_loss/shape", x.MSELoss(Zeros(CPU, Float32, 3)), ErrShape},
		{"layer_norm/shape", x.LayerNorm([]int{2}, nil, nil, 1e-5), ErrShape},
		{"layer_norm/weight", x.LayerNorm([]int{3}, Ones(CPU, Float32, 2), nil, 1e-5), ErrShape},
		{"softmax/dim", x.Softmax(2), ErrIndex},
		{"dropout/p", x.Dropout(1.5, true), ErrValue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.got.Err(); !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want kind %v", err, c.kind)
			}
		})
	}
	if err := x.CrossEntropy(FromSlice(CPU, []int64{0, 3})).Err(); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Op != "cross_entropy" {
			t.Errorf("error names op %q, want cross_entropy: %v", e.Op, err)
		}
	}
}

func TestDropoutTrain(t *testing.T) {
	Seed(7)
	const n = 20000
	y, err := Ones(CPU, Float64, n).Dropout(0.25, true).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	zeros := 0
	for _, v := range y {
		switch v {
		case 0:
			zeros++
		case 1 / 0.75:
		default:
			t.Fatalf("dropout produced %v, want 0 or %v", v, 1/0.75)
		}
	}
	// 25% ± 5 standard deviations of a binomial(n, 0.25).
	if frac := float64(zeros) / n; math.Abs(frac-0.25) > 5*math.Sqrt(0.25*0.75/n) {
		t.Errorf("dropped %.4f of elements, want about 0.25", frac)
	}
	Seed(7)
	again, _ := Ones(CPU, Float64, n).Dropout(0.25, true).Float64s()
	for i := range y {
		if y[i] != again[i] {
			t.Fatal("dropout is not reproducible after Seed")
		}
	}
}

// TestDropoutRefusesIntegers: an integer x is an ErrDType whose message
// lists every dtype dropout takes, the 16-bit floats among them (it named
// float32 and float64 only).
func TestDropoutRefusesIntegers(t *testing.T) {
	err := Ones(CPU, Int8, 4).Dropout(0.5, true).Err()
	if !errors.Is(err, ErrDType) || !strings.Contains(err.Error(), "bfloat16") {
		t.Errorf("dropout of int8: %v, want an ErrDType listing bfloat16", err)
	}
	if y := Ones(CPU, BFloat16, 4).Dropout(0.5, true); y.Err() != nil || y.DType() != BFloat16 {
		t.Errorf("dropout of bfloat16: %v, %v", y.DType(), y.Err())
	}
}

// TestNLLLossOfA0DInput: a 0-d input has no class dim, an ErrShape (torch:
// "Expected 1 or more dimensions (got 0)"); nll_loss indexed its shape's
// first element to say what the target should be, and panicked. Found by
// FuzzLoss.
func TestNLLLossOfA0DInput(t *testing.T) {
	for _, target := range []*Tensor{Scalar(CPU, int64(0)), FromSlice(CPU, []int64{0})} {
		if err := Scalar(CPU, float32(1)).NLLLoss(target).Err(); !errors.Is(err, ErrShape) {
			t.Errorf("nll_loss of a 0-d input, target %v: error %v, want an ErrShape", target.Shape(), err)
		}
	}
}

// TestIgnoreIndexPastFloat64: a target equal to an ignore index that
// float64 does not hold (past 2^53) is ignored, as torch's; the comparison
// went through a float64, 1<<62 + 1 became 1<<62, and the target was
// gathered as a class (ErrIndex). Found by FuzzLoss.
func TestIgnoreIndexPastFloat64(t *testing.T) {
	for _, dev := range Devices() {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, []float32{1, 2, 3, 4, 5, 6}, 2, 3).To(dev)
			for _, ignore := range []int{1<<62 + 1, math.MaxInt64, 1<<53 + 1, -(1 << 53) - 1} {
				target := FromSlice(CPU, []int64{0, int64(ignore)}).To(dev)
				for name, c := range map[string]struct {
					got  *Tensor
					want float64 // torch's, the second target ignored
				}{
					"cross_entropy":          {x.CrossEntropy(target, IgnoreIndex(ignore)), 2.4076059644443806},
					"nll_loss":               {x.NLLLoss(target, IgnoreIndex(ignore)), -1},
					"cross_entropy/weighted": {x.CrossEntropy(target, IgnoreIndex(ignore), ClassWeights(Ones(dev, Float32, 3))), 2.4076059644443806},
				} {
					v, err := c.got.Float32s()
					if err != nil || len(v) != 1 || math.Abs(float64(v[0])-c.want) > 1e-6 {
						t.Errorf("%s, ignore %d: %v %v, want [%v] (the second target ignored)", name, ignore, v, err, c.want)
					}
				}
			}
		})
	}
}

// TestNoClassesAllIgnored: an input of no classes whose targets are all
// ignored is torch's 0/0 (NaN) for the mean, 0 for the sum and zeros for
// none; the loss gathered class 0, which it has not (ErrIndex), and with
// class weights panicked. Found by FuzzLoss.
func TestNoClassesAllIgnored(t *testing.T) {
	for _, dev := range Devices() {
		t.Run(dev.String(), func(t *testing.T) {
			x := Zeros(dev, Float32, 2, 0)
			target := FromSlice(CPU, []int64{-100, -100}).To(dev)
			for _, w := range []*Tensor{nil, Zeros(dev, Float32, 0)} {
				for r, want := range map[Reduction][]float32{ReduceMean: {float32(math.NaN())}, ReduceSum: {0}, ReduceNone: {0, 0}} {
					v, err := x.CrossEntropy(target, WithReduction(r), ClassWeights(w)).Float32s()
					if err != nil || len(v) != len(want) || !(v[0] == want[0] || v[0] != v[0] && want[0] != want[0]) {
						t.Errorf("weights %v, %v: %v %v, want %v", w != nil, r, v, err, want)
					}
				}
			}
		})
	}
}

// A Reduction that is none of ReduceMean, ReduceSum and ReduceNone is an
// ErrValue naming it (issue 15, defect 16), as torch's
// F.cross_entropy(x, t, reduction="foo") is a ValueError; it once meant
// the mean.
func TestInvalidReduction(t *testing.T) {
	for _, dev := range Devices() {
		x := Zeros(dev, Float32, 2, 3)
		target := FromSlice(CPU, []int32{0, 1}).To(dev)
		for _, r := range []Reduction{7, -1, ReduceBatchMean} { // batchmean is kl_div's alone
			for name, got := range map[string]*Tensor{
				"cross_entropy": x.CrossEntropy(target, WithReduction(r)),
				"nll_loss":      x.NLLLoss(target, WithReduction(r)),
				"mse_loss":      x.MSELoss(x, WithReduction(r)),
			} {
				err := got.Err()
				var e *Error
				if !errors.Is(err, ErrValue) || !errors.As(err, &e) || e.Arg != "reduction" || e.Op != name ||
					!strings.Contains(err.Error(), r.String()) {
					t.Errorf("%s: %s with reduction %d: error %v, want an ErrValue of %s naming the reduction and its value", dev, name, r, err, name)
				}
			}
		}
	}
}

// TestDropoutHoldsNoMask: with a graph, what a dropout leaves held is its
// result alone: the backward pass makes the mask again from the op's key,
// where the composite it replaced held the mask and the masked x (and
// before that the uniform draw and the booleans too); the gradient is the
// mask, scaled.
func TestDropoutHoldsNoMask(t *testing.T) {
	const n = 1 << 16 // 256 KiB of float32: past the cpu's 16 KiB heap blocks, which it does not count
	live := func() int64 { return liveBytes(t, CPU) }
	x := RandN(CPU, Float32, n).RequireGrad()
	base := live()
	y := x.Dropout(0.5, true)
	if held := live() - base; held > 4*n {
		t.Errorf("a dropout holds %d bytes after it, want at most %d (the result)", held, 4*n)
	}
	if err := y.Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	out, _ := y.Float32s()
	g, err := x.Grad().Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range g {
		want := float32(2) // 1/(1-p) where the element was kept
		if out[i] == 0 {
			want = 0
		}
		if g[i] != want {
			t.Fatalf("gradient %d is %v where the output is %v, want %v", i, g[i], out[i], want)
		}
	}
}

// TestDropoutSecondDerivative differentiates dropout twice on every
// device: d/dx of sum(y²) is 2·y·m, and of that summed again 2·m², m the
// scaled mask, which y gives where x is 1.
func TestDropoutSecondDerivative(t *testing.T) {
	for _, dev := range Devices() {
		t.Run(dev.String(), func(t *testing.T) {
			x := Ones(dev, Float32, 3, 50).RequireGrad()
			y := x.Dropout(0.4, true)
			g, err := Grad(y.Mul(y).Sum(), []*Tensor{x}, CreateGraph())
			if err != nil {
				t.Fatal(err)
			}
			gg, err := Grad(g[0].Sum(), []*Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := y.Float32s()
			first, _ := g[0].Float32s()
			second, err := gg[0].Float32s()
			if err != nil {
				t.Fatal(err)
			}
			kept := 0
			for i, v := range m {
				if v != 0 {
					kept++
				}
				if first[i] != 2*v*v || second[i] != 2*v*v {
					t.Fatalf("element %d: y %v, first derivative %v, second %v, want %v and %v", i, v, first[i], second[i], 2*v*v, 2*v*v)
				}
			}
			if kept == 0 || kept == len(m) {
				t.Errorf("%d of %d kept: the mask is degenerate", kept, len(m))
			}
		})
	}
}

// TestCrossEntropyProbabilities: class probabilities of x's shape (soft
// labels) take log_softmax in x's dtype and promote with it, as torch's
// (float32 x, float64 probabilities: float64); a float target of the class
// indices' shape is a dtype error with the cast, of another shape a shape
// error, and an IgnoreIndex or a bad weight is refused, naming each.
func TestCrossEntropyProbabilities(t *testing.T) {
	xs := []float64{0.5, -1, 2, 0, 1.5, -0.5}
	ps := []float64{0.2, 0.3, 0.5, 0.6, 0.1, 0.3}
	// -Σ p·log_softmax(x) per row, mean over the two rows.
	want := 0.0
	for r := range 2 {
		row := xs[3*r : 3*r+3]
		lse := math.Log(math.Exp(row[0]) + math.Exp(row[1]) + math.Exp(row[2]))
		for c := range 3 {
			want -= ps[3*r+c] * (row[c] - lse) / 2
		}
	}
	x := FromSlice(CPU, xs, 2, 3).Cast(Float32)
	p := FromSlice(CPU, ps, 2, 3)
	loss := x.CrossEntropy(p)
	got, err := loss.Float64s()
	if err != nil || loss.DType() != Float64 || math.Abs(got[0]-want) > 1e-6 {
		t.Errorf("float32 x, float64 probabilities: %v %v (%v), want %v float64", got, loss.DType(), err, want)
	}
	x64 := FromSlice(CPU, xs, 2, 3).RequireGrad()
	g, err := Grad(x64.CrossEntropy(p, WithReduction(ReduceSum)), []*Tensor{x64})
	if err != nil {
		t.Fatal(err)
	}
	gv, _ := g[0].Float64s()
	for r := range 2 { // softmax(x) - p, as the probabilities sum to 1
		row := xs[3*r : 3*r+3]
		z := math.Exp(row[0]) + math.Exp(row[1]) + math.Exp(row[2])
		for c := range 3 {
			if w := math.Exp(row[c])/z - ps[3*r+c]; math.Abs(gv[3*r+c]-w) > 1e-12 {
				t.Errorf("gradient [%d, %d] = %v, want %v", r, c, gv[3*r+c], w)
			}
		}
	}
	moreOpsErr(t, "0-d x", Scalar(CPU, float32(1)).CrossEntropy(Scalar(CPU, float32(1))).Err(), ErrShape, "cross_entropy", "x")
	moreOpsErr(t, "float indices", x.CrossEntropy(FromSlice(CPU, []float32{0, 2})).Err(), ErrDType, "cross_entropy", "target")
	moreOpsErr(t, "probabilities [2, 4]", x.CrossEntropy(Zeros(CPU, Float32, 2, 4)).Err(), ErrShape, "cross_entropy", "target")
	moreOpsErr(t, "ignore_index", x.CrossEntropy(p, IgnoreIndex(1)).Err(), ErrValue, "cross_entropy", "ignore_index")
	// Integer logits with probabilities panicked (found by FuzzLoss).
	moreOpsErr(t, "int32 x", Ones(CPU, Int32, 2, 3).CrossEntropy(p).Err(), ErrDType, "cross_entropy", "x")
	moreOpsErr(t, "ignore_index 0", x.CrossEntropy(p, IgnoreIndex(0)).Err(), ErrValue, "cross_entropy", "ignore_index")
	// A negative index names no class, and torch takes it (found by FuzzLoss).
	plain, _ := x.CrossEntropy(p).Float64s()
	for _, ignore := range []int{-1, -100, -5} {
		got, err := x.CrossEntropy(p, IgnoreIndex(ignore)).Float64s()
		if err != nil || !slices.Equal(got, plain) {
			t.Errorf("probabilities with IgnoreIndex(%d): %v, %v; want %v, as without it", ignore, got, err, plain)
		}
	}
	moreOpsErr(t, "weight [2]", x.CrossEntropy(p, ClassWeights(Ones(CPU, Float32, 2))).Err(), ErrShape, "cross_entropy", "weight")
	moreOpsErr(t, "weight float64", x.CrossEntropy(p, ClassWeights(Ones(CPU, Float64, 3))).Err(), ErrDType, "cross_entropy", "weight")
}
