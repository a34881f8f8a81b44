package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/examples/internal/checktest"
	"github.com/lathe-ml/lathe/internal/mpitest"
)

// TestAlone trains a few epochs as a job of one.
func TestAlone(t *testing.T) {
	if os.Getenv("OMPI_COMM_WORLD_RANK") != "" {
		t.Skip("a rank of TestMPI")
	}
	cfg := DefaultConfig()
	cfg.Epochs = 5
	res, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ranks != 1 || !(res.Loss < 0.9) {
		t.Fatalf("%+v: want 1 rank and a loss below chance (1.10)", res)
	}
}

const rankEnv = "LATHE_EXAMPLE_DDP_RANK"

// TestMPIRank is one rank of TestMPI.
func TestMPIRank(t *testing.T) {
	if os.Getenv(rankEnv) != "1" {
		t.Skip("runs only as a rank under mpirun (TestMPI starts it)")
	}
	cfg := DefaultConfig()
	cfg.Epochs = 5
	res, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("result: ranks %d loss %.6f accuracy %.4f\n", res.Ranks, res.Loss, res.Accuracy)
}

// TestMPI trains on two ranks under mpirun and checks that they end where
// one process does: the sampler gives the two ranks the halves of the
// batches that one process takes whole, and DDP averages the gradients.
func TestMPI(t *testing.T) {
	cmd := mpitest.Command(t, 2, "TestMPIRank", []string{rankEnv + "=1"})
	out, err := mpitest.Run(cmd, 2*time.Minute)
	if err != nil || mpitest.Passed(out, "TestMPIRank") != 2 {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	cfg := DefaultConfig()
	cfg.Epochs = 5
	one, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "result:") {
			continue
		}
		var ranks int
		var loss, acc float64
		if _, err := fmt.Sscanf(l, "result: ranks %d loss %f accuracy %f", &ranks, &loss, &acc); err != nil || ranks != 2 {
			t.Fatalf("%q: %v", l, err)
		}
		if d := loss - one.Loss; d > 1e-4 || d < -1e-4 || acc-one.Accuracy > 1e-3 || one.Accuracy-acc > 1e-3 {
			t.Fatalf("2 ranks: loss %.6f accuracy %.4f; one process: loss %.6f accuracy %.4f", loss, acc, one.Loss, one.Accuracy)
		}
	}
}

// TestBadConfig: settings that cannot make a run fail Train at once, as
// an ErrValue naming the flag or field (before Check, a batch of zero looped for ever).
func TestBadConfig(t *testing.T) {
	checktest.Refusals(t, DefaultConfig, func(c Config) error { _, err := Train(c); return err }, map[string]func(*Config){
		"-lr":      func(c *Config) { c.LR = -1 },
		"-points":  func(c *Config) { c.Points = 0 },
		"-epochs":  func(c *Config) { c.Epochs = -1 },
		"-batch":   func(c *Config) { c.Batch = 0 },
		"-timeout": func(c *Config) { c.Timeout = 0 },
	})
}

// TestUnevenBatch: a global batch that the ranks cannot share evenly is an
// ErrValue naming -batch and saying how to fix it (it was a plain error,
// printed as "ddp: ddp: the batch of 33 does not split evenly over 2
// ranks").
func TestUnevenBatch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Batch = 33
	_, err := cfg.perRank(2)
	var e *lathe.Error
	if !errors.Is(err, lathe.ErrValue) || !errors.As(err, &e) || e.Arg != "-batch" || e.Fix == "" {
		t.Errorf("a batch of 33 over 2 ranks: %v, want an ErrValue naming -batch with a fix", err)
	}
	if n, err := cfg.perRank(3); n != 11 || err != nil {
		t.Errorf("a batch of 33 over 3 ranks: %d each, %v; want 11 each", n, err)
	}
}
