package main

import (
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/examples/internal/accel"
	"github.com/lathe-ml/lathe/examples/internal/checktest"
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

// TestTrainDevices trains the same run on each accelerator (wgpu:0,
// cuda:0) and wants the cpu's result: the same seed gives the same initial
// weights and minibatches, and the float32 arithmetic differs only in
// rounding.
func TestTrainDevices(t *testing.T) {
	accel.Each(t, func(t *testing.T, dev lathe.Device) {
		cfg := DefaultConfig()
		cfg.Epochs = 20
		onCPU, onDev := trainOnBoth(t, cfg, dev)
		t.Logf("20 epochs on %v: loss %.4f, accuracy %.1f%%, %v (cpu: %.4f, %.1f%%, %v)",
			dev, onDev.Loss, 100*onDev.Accuracy, onDev.Elapsed, onCPU.Loss, 100*onCPU.Accuracy, onCPU.Elapsed)
		if !(onDev.Accuracy >= 0.92) || math.Abs(onDev.Accuracy-onCPU.Accuracy) > 0.02 {
			t.Errorf("accuracy %.3f on %v, %.3f on cpu: want ≥ 0.92 and within 2 points", onDev.Accuracy, dev, onCPU.Accuracy)
		}
		if math.Abs(onDev.Loss-onCPU.Loss) > 0.02 {
			t.Errorf("loss %.4f on %v, %.4f on cpu: want within 0.02", onDev.Loss, dev, onCPU.Loss)
		}
	})
}

// TestTrainAMP trains the 20-epoch run under Autocast in bfloat16 and in
// float16 (with a GradScaler) and wants the float32 run's result: the
// parameters stay float32 and only the two Linear layers compute in 16
// bits, so the loss may differ by rounding (measured: 0.1173 in float32,
// 0.1175 in bfloat16, 0.1173 in float16; 97.2%, 97.3%, 97.3%).
func TestTrainAMP(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Epochs = 20
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
			t.Logf("20 epochs under autocast to %v: loss %.4f, accuracy %.1f%%, %v (float32: %.4f, %.1f%%, %v)",
				dt, res.Loss, 100*res.Accuracy, res.Elapsed, ref.Loss, 100*ref.Accuracy, ref.Elapsed)
			if !(math.Abs(res.Loss-ref.Loss) <= 0.03) {
				t.Errorf("loss %.4f, float32's %.4f: want within 0.03", res.Loss, ref.Loss)
			}
			if !(res.Accuracy >= ref.Accuracy-0.02) {
				t.Errorf("accuracy %.3f, float32's %.3f: want at most 2 points below", res.Accuracy, ref.Accuracy)
			}
		})
	}
}

// trainOnBoth runs cfg on the cpu and then on dev.
func trainOnBoth(t *testing.T, cfg Config, dev lathe.Device) (onCPU, onDev Result) {
	t.Helper()
	cfg.Device = lathe.CPU
	onCPU, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Device = dev
	if onDev, err = Train(cfg); err != nil {
		t.Fatal(err)
	}
	return onCPU, onDev
}

// TestTrainAMPDevices trains TestTrainAMP's runs, shortened to 8 epochs,
// on each accelerator, whose float16 and bfloat16 compute in float32 as
// the cpu's do (wgpu:0 stores them packed), and wants the cpu's result
// under the same autocast: the same seed and minibatches, arithmetic that
// differs only in float32 rounding before each result rounds to 16 bits
// (measured at 20 epochs on wgpu:0: loss 0.1175 and 0.1173 on both
// devices, bfloat16 and float16).
func TestTrainAMPDevices(t *testing.T) {
	accel.Each(t, func(t *testing.T, dev lathe.Device) {
		for _, dt := range []lathe.DType{lathe.BFloat16, lathe.Float16} {
			t.Run(dt.String(), func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Epochs, cfg.AMP = 8, dt
				onCPU, onDev := trainOnBoth(t, cfg, dev)
				t.Logf("8 epochs on %v under autocast to %v: loss %.4f, accuracy %.1f%%, %v (cpu: %.4f, %.1f%%, %v)",
					dev, dt, onDev.Loss, 100*onDev.Accuracy, onDev.Elapsed, onCPU.Loss, 100*onCPU.Accuracy, onCPU.Elapsed)
				if !(math.Abs(onDev.Loss-onCPU.Loss) <= 0.03) {
					t.Errorf("loss %.4f on %v, %.4f on cpu: want within 0.03", onDev.Loss, dev, onCPU.Loss)
				}
				if !(onDev.Loss < 0.8) || math.Abs(onDev.Accuracy-onCPU.Accuracy) > 0.02 {
					t.Errorf("loss %.4f, accuracy %.3f on %v (%.3f on cpu): want a loss well under chance's 1.10 and the accuracy within 2 points",
						onDev.Loss, onDev.Accuracy, dev, onCPU.Accuracy)
				}
			})
		}
	})
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

// TestBadConfig: settings that cannot make a run fail Train at once, as
// an ErrValue naming the flag or field (before Check, a negative -points panicked and -epochs 0 "trained" to a loss of 0).
func TestBadConfig(t *testing.T) {
	checktest.Refusals(t, DefaultConfig, func(c Config) error { _, err := Train(c); return err }, map[string]func(*Config){
		"-lr":     func(c *Config) { c.LR = -1 },
		"-points": func(c *Config) { c.Points = -3 },
		"Classes": func(c *Config) { c.Classes = 1 },
		"-hidden": func(c *Config) { c.Hidden = 0 },
		"-epochs": func(c *Config) { c.Epochs = 0 },
		"Batch":   func(c *Config) { c.Batch = 0 },
	})
}
