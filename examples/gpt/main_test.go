package main

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/examples/gpt/model"
	"github.com/lathe-ml/lathe/examples/internal/checktest"
)

// TestTrainShort trains a small model for 30 steps on the repository's
// source (a few seconds on two cores) and checks that the validation loss
// falls from about ln 98 ≈ 4.58, the uniform guess, that every progress line
// is there and that the sample starts with the prompt and has the length
// asked for.
func TestTrainShort(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Model = model.Config{Vocab: vocabSize, Context: 32, Layers: 2, Heads: 2, Dim: 32}
	cfg.Batch, cfg.Steps, cfg.Warmup = 8, 30, 5
	cfg.LogEvery, cfg.EvalEvery, cfg.EvalBatches = 10, 15, 2
	cfg.Sample = 40
	var log strings.Builder
	cfg.Log = &log
	res, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("30 steps: validation loss %.4f → %.4f, %v\n%s", res.Untrained, res.Val, res.Elapsed, log.String())
	if !(res.Untrained > 4.3 && res.Untrained < 4.9) {
		t.Errorf("untrained validation loss %.4f, want about ln 98 = 4.58", res.Untrained)
	}
	if !(res.Val < res.Untrained-0.5) {
		t.Errorf("validation loss %.4f after 30 steps, want at least 0.5 below the untrained %.4f", res.Val, res.Untrained)
	}
	for _, want := range []string{"step   10/30  loss", "step   30/30  loss", "step   15/30  validation loss", "step   30/30  validation loss", "sample (temperature"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("no %q in the log", want)
		}
	}
	if !strings.HasPrefix(res.Sample, cfg.Prompt) || len(res.Sample) != len(cfg.Prompt)+cfg.Sample {
		t.Errorf("sample %q: want the prompt %q and %d more characters", res.Sample, cfg.Prompt, cfg.Sample)
	}
}

func TestVocabularyRoundTrip(t *testing.T) {
	var ascii []byte
	for c := byte(' '); c <= '~'; c++ {
		ascii = append(ascii, c)
	}
	text := "\tfunc f() {}\n" + string(ascii)
	ids := encode([]byte(text))
	for _, id := range ids {
		if id < 0 || id >= otherToken {
			t.Fatalf("id %d for printable text", id)
		}
	}
	if got := decode(ids); got != text {
		t.Errorf("decode(encode(%q)) = %q", text, got)
	}
	if ids := encode([]byte("→")); len(ids) != 3 || ids[0] != otherToken || decode(ids) != "???" {
		t.Errorf("encode(→) = %v, want three other tokens", ids)
	}
}

func TestBatchIsShiftedByOne(t *testing.T) {
	ids := make([]int64, 100)
	for i := range ids {
		ids[i] = int64(i)
	}
	x, y := batch(rand.New(rand.NewPCG(1, 1)), ids, 3, 5, DefaultConfig().Device)
	xs, err := x.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	ys, err := y.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range xs {
		if ys[i] != xs[i]+1 {
			t.Fatalf("targets %v are not the inputs %v shifted by one", ys, xs)
		}
	}
}

// TestBadConfig: settings that cannot make a run fail Train at once, as
// an ErrValue naming the flag or field (before Check, a negative -batch or a -log of 0 panicked, and a bad -temperature or an empty -prompt failed only after training).
func TestBadConfig(t *testing.T) {
	checktest.Refusals(t, DefaultConfig, func(c Config) error { _, err := Train(c); return err }, map[string]func(*Config){
		"-lr":          func(c *Config) { c.LR = -1 },
		"-batch":       func(c *Config) { c.Batch = -2 },
		"-steps":       func(c *Config) { c.Steps = 0 },
		"-log":         func(c *Config) { c.LogEvery = 0 },
		"-eval":        func(c *Config) { c.EvalEvery = 0 },
		"-sample":      func(c *Config) { c.Sample = -1 },
		"-temperature": func(c *Config) { c.Sampling.Temperature = 0 },
		"-topk":        func(c *Config) { c.Sampling.TopK = -1 },
		"-prompt":      func(c *Config) { c.Prompt = "" },
		"-heads":       func(c *Config) { c.Model.Heads = 0 },
		"-context":     func(c *Config) { c.Model.Context = 0 },
		"-dim":         func(c *Config) { c.Model.Dim = 6 },
	})
}

// TestTooLittleText: a -data folder whose text holds no validation window
// is an ErrValue naming -data (it was a plain error, printed as "gpt: gpt:
// 1 .go files under ... give 20 validation tokens, ...").
func TestTooLittleText(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(strings.Repeat("package a\n", 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Data = dir
	_, err := Train(cfg)
	var e *lathe.Error
	if !errors.Is(err, lathe.ErrValue) || !errors.As(err, &e) || e.Arg != "-data" || e.Fix == "" {
		t.Errorf("200 characters of text for a context of 64: %v, want an ErrValue naming -data with a fix", err)
	}
	cfg.Data = filepath.Join(dir, "missing")
	if _, err := Train(cfg); !errors.Is(err, lathe.ErrValue) || !errors.As(err, &e) || e.Arg != "-data" {
		t.Errorf("a -data folder that is not there: %v, want an ErrValue naming -data (it was lstat's bare error)", err)
	}
}
