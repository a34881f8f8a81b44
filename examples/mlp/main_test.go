package main

import (
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"

	"github.com/lathe-ml/lathe/internal/testenv"
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

// TestTrainWGPU trains the same run on wgpu:0 and wants the cpu's result:
// the same seed gives the same initial weights and minibatches, and the
// float32 arithmetic differs only in rounding.
func TestTrainWGPU(t *testing.T) {
	gpu := lathe.WGPU(0)
	for _, info := range lathe.DeviceStatus() {
		if info.Device == gpu && !info.Available {
			testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %s", info.Detail)
		}
	}
	cfg := DefaultConfig()
	cfg.Epochs = 20
	onCPU, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Device = gpu
	onGPU, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("20 epochs on wgpu:0: loss %.4f, accuracy %.1f%%, %v (cpu: %.4f, %.1f%%, %v)",
		onGPU.Loss, 100*onGPU.Accuracy, onGPU.Elapsed, onCPU.Loss, 100*onCPU.Accuracy, onCPU.Elapsed)
	if !(onGPU.Accuracy >= 0.92) || math.Abs(onGPU.Accuracy-onCPU.Accuracy) > 0.02 {
		t.Errorf("accuracy %.3f on wgpu:0, %.3f on cpu: want ≥ 0.92 and within 2 points", onGPU.Accuracy, onCPU.Accuracy)
	}
	if math.Abs(onGPU.Loss-onCPU.Loss) > 0.02 {
		t.Errorf("loss %.4f on wgpu:0, %.4f on cpu: want within 0.02", onGPU.Loss, onCPU.Loss)
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
		if y != int32(i/50) {
			t.Fatalf("label %d is %d", i, y)
		}
		if r := math.Hypot(float64(xs[2*i]), float64(xs[2*i+1])); r > 1 {
			t.Fatalf("point %d at radius %g", i, r)
		}
	}
}
