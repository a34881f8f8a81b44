package main

import (
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/examples/internal/accel"
	"github.com/lathe-ml/lathe/examples/internal/checktest"
)

// TestTrainShort trains on half the default data for three epochs (half a
// second on two cores) and checks that the network learns the shapes:
// chance is 25% and a loss of ln 4 ≈ 1.39 (it reaches about 0.28 and 94%).
func TestTrainShort(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a network; skipped with -short")
	}
	cfg := DefaultConfig()
	cfg.Train, cfg.Test, cfg.Epochs = 512, 2048, 3
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

// TestTrainDevices runs a short epoch on each accelerator (wgpu:0,
// cuda:0): the program is the cpu's, unchanged (its labels are int64, as
// ArgMax's and the loss's targets are on every device), and the loss must
// come out finite.
func TestTrainDevices(t *testing.T) {
	accel.Each(t, func(t *testing.T, dev lathe.Device) {
		cfg := DefaultConfig()
		cfg.Train, cfg.Test, cfg.Epochs, cfg.Device = 64, 32, 1, dev
		res, err := Train(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("1 epoch on %v: loss %.4f, test accuracy %.1f%%, %v", dev, res.Loss, 100*res.TestAccuracy, res.Elapsed)
		if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) || res.TestAccuracy < 0 || res.TestAccuracy > 1 {
			t.Errorf("loss %v, accuracy %v", res.Loss, res.TestAccuracy)
		}
	})
}

// TestTrainAMP trains the default run (1024 images, eight epochs; about a
// second on two cores) under Autocast in bfloat16 and in float16 (with a
// GradScaler) and wants the float32 run's result: the parameters stay
// float32, the convolutions and the linear layer compute in 16 bits.
//
// It trains to convergence because a shorter run cannot be judged by its
// accuracy: after TestTrainShort's three epochs of 512 the loss agrees to
// 0.002 (0.2849 in float32, 0.2852–0.2858 in bfloat16, 0.2867–0.2873 in
// float16), but the test accuracy of 2048 images moved between 84.5% and
// 95.8% with nothing changed but the order of a float32 sum's additions
// (four vectors of lanes or eight). After eight epochs both sums with
// OpenBLAS, and the newer with gonum's GEMM, gave losses of 0.0157–0.0163
// and 99.8–99.9% in all three dtypes.
func TestTrainAMP(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a network three times; skipped with -short")
	}
	cfg := DefaultConfig()
	cfg.Test = 2048
	ref, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []lathe.DType{lathe.BFloat16, lathe.Float16} {
		t.Run(dt.String(), func(t *testing.T) {
			cfg.AMP = dt
			res, err := Train(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d epochs under autocast to %v: loss %.4f, test accuracy %.1f%%, %v (float32: %.4f, %.1f%%, %v)",
				cfg.Epochs, dt, res.Loss, 100*res.TestAccuracy, res.Elapsed, ref.Loss, 100*ref.TestAccuracy, ref.Elapsed)
			if !(math.Abs(res.Loss-ref.Loss) <= 0.005) {
				t.Errorf("loss %.4f, float32's %.4f: want within 0.005", res.Loss, ref.Loss)
			}
			if !(res.TestAccuracy >= ref.TestAccuracy-0.01) {
				t.Errorf("test accuracy %.3f, float32's %.3f: want at most a point below", res.TestAccuracy, ref.TestAccuracy)
			}
		})
	}
}

// TestTrainAMPDevices runs TestTrainDevices' short epoch under Autocast
// in bfloat16 and float16 on each accelerator, whose 16-bit floats compute
// in float32 as the cpu's do (wgpu:0 stores them packed), and wants the
// cpu's loss under the same autocast: the same seed and minibatches,
// arithmetic that differs only in float32 rounding before each result
// rounds to 16 bits.
func TestTrainAMPDevices(t *testing.T) {
	accel.Each(t, func(t *testing.T, dev lathe.Device) {
		for _, dt := range []lathe.DType{lathe.BFloat16, lathe.Float16} {
			t.Run(dt.String(), func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Train, cfg.Test, cfg.Epochs, cfg.AMP = 64, 32, 1, dt
				onCPU, err := Train(cfg)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Device = dev
				onDev, err := Train(cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("1 epoch on %v under autocast to %v: loss %.4f, test accuracy %.1f%%, %v (cpu: %.4f, %.1f%%, %v)",
					dev, dt, onDev.Loss, 100*onDev.TestAccuracy, onDev.Elapsed, onCPU.Loss, 100*onCPU.TestAccuracy, onCPU.Elapsed)
				if !(math.Abs(onDev.Loss-onCPU.Loss) <= 0.02) {
					t.Errorf("loss %.4f on %v, %.4f on cpu: want within 0.02", onDev.Loss, dev, onCPU.Loss)
				}
			})
		}
	})
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

// TestBadConfig: settings that cannot make a run fail Train at once, as
// an ErrValue naming the flag or field (before Check, a negative -train panicked and an empty training set gave a loss of NaN).
func TestBadConfig(t *testing.T) {
	checktest.Refusals(t, DefaultConfig, func(c Config) error { _, err := Train(c); return err }, map[string]func(*Config){
		"-lr":     func(c *Config) { c.LR = -1 },
		"-train":  func(c *Config) { c.Train = -5 },
		"Test":    func(c *Config) { c.Test = 0 },
		"Size":    func(c *Config) { c.Size = 3 },
		"-noise":  func(c *Config) { c.Noise = math.NaN() },
		"-epochs": func(c *Config) { c.Epochs = 0 },
		"Batch":   func(c *Config) { c.Batch = 0 },
	})
}
