package main

import (
	"math"
	"strings"
	"testing"
)

// TestTrainShort runs 20 epochs (a fraction of a second on two cores) and
// checks that the network learns the spiral: the loss at chance level is
// ln 3 ≈ 1.10, and a linear model cannot pass about 50% accuracy.
func TestTrainShort(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Epochs = 20
	var log strings.Builder
	cfg.Log = &log
	res, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("20 epochs: loss %.4f, accuracy %.1f%%, %v", res.Loss, 100*res.Accuracy, res.Elapsed)
	if !(res.Loss < 0.25) {
		t.Errorf("loss %.4f, want < 0.25", res.Loss)
	}
	if !(res.Accuracy >= 0.92) {
		t.Errorf("accuracy %.3f, want ≥ 0.92", res.Accuracy)
	}
	if lines := strings.Count(log.String(), "\n"); lines != cfg.Epochs {
		t.Errorf("%d progress lines, want one per epoch (%d)", lines, cfg.Epochs)
	}
	if !strings.Contains(log.String(), "epoch  20/20") {
		t.Errorf("no line for the last epoch in\n%s", log.String())
	}
}

// TestTrainIsReproducible: the same seed gives the same run.
func TestTrainIsReproducible(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Epochs = 2
	a, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.Loss != b.Loss || a.Accuracy != b.Accuracy {
		t.Fatalf("two runs with seed %d differ: %v vs %v", cfg.Seed, a, b)
	}
}

func TestSpiral(t *testing.T) {
	xs, ys := Spiral(50, 3, 1)
	if len(xs) != 300 || len(ys) != 150 {
		t.Fatalf("%d coordinates, %d labels", len(xs), len(ys))
	}
	for i, y := range ys {
		if y != int64(i/50) {
			t.Fatalf("label %d is %d", i, y)
		}
		if r := math.Hypot(float64(xs[2*i]), float64(xs[2*i+1])); r > 1 {
			t.Fatalf("point %d at radius %g", i, r)
		}
	}
}
