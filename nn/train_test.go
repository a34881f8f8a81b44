package nn

import (
	"bytes"
	"testing"

	"github.com/lathe-ml/lathe"
)

// Training end to end needs gradient rules for matmul, reductions, views
// and indexing (autodiff/rules_*.go); these tests fail, not skip, without them.

// TestTrainRegression fits y = 2x - 1 with one Linear layer and SGD with
// momentum, with the loss as MSE.
func TestTrainRegression(t *testing.T) {
	lathe.Seed(11)
	l := NewLinear(1, 1, WithDType(lathe.Float64))
	opt, err := NewSGD(l.Parameters(), 0.1, Momentum(0.9))
	if err != nil {
		t.Fatal(err)
	}
	x := lathe.FromSlice(lathe.CPU, []float64{-1, -0.5, 0, 0.5, 1, 1.5}, 6, 1)
	y := x.MulScalar(2).SubScalar(1)
	var loss float64
	for range 200 {
		opt.ZeroGrad()
		l2 := MSE(l.Forward(x), y)
		if err := l2.Backward(); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if loss, err = l2.Item(); err != nil {
			t.Fatal(err)
		}
	}
	if loss > 1e-8 {
		t.Fatalf("loss %g after 200 steps", loss)
	}
	assertClose(t, "weight", values(t, l.Weight), []float64{2}, 1e-4)
	assertClose(t, "bias", values(t, l.Bias), []float64{-1}, 1e-4)
}

// TestTrainEveryLayer trains a model that uses every layer (embedding,
// layer norm, GELU, dropout, linear) with AdamW and gradient clipping to map
// each index to its own class, saves it midway and checks that the loaded
// copy computes the same outputs.
func TestTrainEveryLayer(t *testing.T) {
	lathe.Seed(5)
	m := Sequential(NewEmbedding(6, 8), NewLayerNorm([]int{8}), GELU{}, NewDropout(0.1), NewLinear(8, 6))
	opt, err := NewAdamW(m.Parameters(), 0.05, WeightDecay(0.01))
	if err != nil {
		t.Fatal(err)
	}
	idx := lathe.FromSlice(lathe.CPU, []int64{0, 1, 2, 3, 4, 5}, 6)
	var loss float64
	for step := range 150 {
		opt.ZeroGrad()
		l := CrossEntropy(m.Forward(idx), idx, LabelSmoothing(0.05))
		if err := l.Backward(); err != nil {
			t.Fatal(err)
		}
		if _, err := ClipGradNorm(m.Parameters(), 1); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if loss, err = l.Item(); err != nil {
			t.Fatal(err)
		}
		if step == 0 && loss < 1 {
			t.Fatalf("first loss %g is already small: the test proves nothing", loss)
		}
	}
	// Label smoothing 0.05 over 6 classes keeps the loss above ~0.2.
	if loss > 0.5 {
		t.Fatalf("loss %g after 150 steps", loss)
	}
	m.Train(false)
	var buf bytes.Buffer
	if err := Save(&buf, m); err != nil {
		t.Fatal(err)
	}
	lathe.Seed(99)
	c := Sequential(NewEmbedding(6, 8), NewLayerNorm([]int{8}), GELU{}, NewDropout(0.1), NewLinear(8, 6))
	c.Train(false)
	if err := Load(&buf, c); err != nil {
		t.Fatal(err)
	}
	assertClose(t, "loaded model", values(t, c.Forward(idx)), values(t, m.Forward(idx)), 0)
	pred, err := m.Forward(idx).ArgMax(1).Int64s()
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pred {
		if p != int64(i) {
			t.Fatalf("index %d predicted as %d", i, p)
		}
	}
}
