package main

import (
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestTrainShort trains on half the default data for three epochs (half a
// second on two cores) and checks that the network learns the shapes:
// chance is 25% and a loss of ln 4 ≈ 1.39 (it reaches about 0.28 and 94%).
func TestTrainShort(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a network; skipped with -short")
	}
	cfg := DefaultConfig()
	cfg.Train, cfg.Test, cfg.Epochs = 512, 256, 3
	var log strings.Builder
	cfg.Log = &log
	res, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d epochs: loss %.4f, test accuracy %.1f%%, %v", cfg.Epochs, res.Loss, 100*res.TestAccuracy, res.Elapsed)
	if !(res.Loss < 0.5) {
		t.Errorf("loss %.4f, want < 0.5", res.Loss)
	}
	if !(res.TestAccuracy >= 0.85) {
		t.Errorf("test accuracy %.3f, want ≥ 0.85", res.TestAccuracy)
	}
	if lines := strings.Count(log.String(), "\n"); lines != cfg.Epochs {
		t.Errorf("%d progress lines, want one per epoch (%d)", lines, cfg.Epochs)
	}
}

// TestTrainWGPU runs a short epoch on wgpu:0: the program is the cpu's,
// unchanged (its labels are int64, as ArgMax's and the loss's targets are
// on every device), and the loss must come out finite.
func TestTrainWGPU(t *testing.T) {
	gpu := lathe.WGPU(0)
	for _, info := range lathe.DeviceStatus() {
		if info.Device == gpu && !info.Available {
			testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %s", info.Detail)
		}
	}
	cfg := DefaultConfig()
	cfg.Train, cfg.Test, cfg.Epochs, cfg.Device = 64, 32, 1, gpu
	res, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1 epoch on wgpu:0: loss %.4f, test accuracy %.1f%%, %v", res.Loss, 100*res.TestAccuracy, res.Elapsed)
	if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) || res.TestAccuracy < 0 || res.TestAccuracy > 1 {
		t.Errorf("loss %v, accuracy %v", res.Loss, res.TestAccuracy)
	}
}

func TestShapes(t *testing.T) {
	pix, labels := Shapes(64, 16, 0, 3)
	if len(pix) != 64*16*16 || len(labels) != 64 {
		t.Fatalf("%d pixels, %d labels", len(pix), len(labels))
	}
	seen := map[int64]bool{}
	for i, y := range labels {
		if y < 0 || int(y) >= len(classes) {
			t.Fatalf("label %d is %d", i, y)
		}
		seen[y] = true
		lit := 0
		for _, v := range pix[i*256 : (i+1)*256] {
			if v > 0 {
				lit++
			}
		}
		if lit < 8 || lit > 200 {
			t.Errorf("image %d (%s) has %d lit pixels without noise", i, classes[y], lit)
		}
	}
	if len(seen) != len(classes) {
		t.Errorf("64 images drew only classes %v", seen)
	}
}
