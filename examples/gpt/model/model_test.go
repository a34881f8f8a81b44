package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe"
)

func TestNewRefusesBadConfig(t *testing.T) {
	ok := Config{Vocab: 5, Context: 4, Layers: 1, Heads: 2, Dim: 4}
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
		kind  error
	}{
		{"vocab0", func(c *Config) { c.Vocab = 0 }, "Vocab", lathe.ErrValue},
		{"context0", func(c *Config) { c.Context = 0 }, "Context", lathe.ErrValue},
		{"layers-1", func(c *Config) { c.Layers = -1 }, "Layers", lathe.ErrValue},
		{"heads0", func(c *Config) { c.Heads = 0 }, "Heads", lathe.ErrValue},
		{"dim-not-multiple", func(c *Config) { c.Dim = 5 }, "Dim", lathe.ErrValue},
		{"rotary-odd-head", func(c *Config) { c.Dim, c.Heads, c.Rotary = 6, 2, true }, "Dim", lathe.ErrValue},
		{"int-dtype", func(c *Config) { c.DType = lathe.Int32 }, "DType", lathe.ErrDType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			g, err := New(c)
			var le *lathe.Error
			if g != nil || !errors.As(err, &le) || !errors.Is(err, tc.kind) || le.Arg != tc.field {
				t.Fatalf("New(%+v) = %v, %v; want a %v naming %s", c, g, err, tc.kind, tc.field)
			}
		})
	}
}

func TestForwardRefusesBadTokens(t *testing.T) {
	for _, rotary := range []bool{false, true} {
		g, err := New(Config{Vocab: 5, Context: 4, Layers: 1, Heads: 2, Dim: 4, Rotary: rotary})
		if err != nil {
			t.Fatal(err)
		}
		for name, x := range map[string]*lathe.Tensor{
			"nil":          nil,
			"too long":     lathe.Zeros(lathe.CPU, lathe.Int64, 1, 5),
			"empty":        lathe.Zeros(lathe.CPU, lathe.Int64, 1, 0),
			"1-D":          lathe.Zeros(lathe.CPU, lathe.Int64, 3),
			"out of vocab": lathe.Full(lathe.CPU, lathe.Int64, 5, 1, 3),
			"float":        lathe.Zeros(lathe.CPU, lathe.Float32, 1, 3),
		} {
			logits := g.Forward(x)
			err := Loss(logits, lathe.Zeros(lathe.CPU, lathe.Int64, 1, 3)).Err()
			if err == nil || !strings.HasPrefix(err.Error(), "lathe: ") {
				t.Errorf("rotary=%v %s: loss error %v, want a lathe error", rotary, name, err)
			}
		}
	}
}

func TestGenerate(t *testing.T) {
	lathe.Seed(3)
	g, err := New(Config{Vocab: 7, Context: 4, Layers: 1, Heads: 2, Dim: 8, Rotary: true})
	if err != nil {
		t.Fatal(err)
	}
	// TopK 1 is greedy decoding: each token is the argmax of the logits at
	// the last position of the (cropped) window.
	out, err := g.Generate([]int64{1, 2}, 6, Sampling{Temperature: 1, TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 8 || out[0] != 1 || out[1] != 2 {
		t.Fatalf("Generate = %v, want the prompt [1 2] and 6 tokens", out)
	}
	for i := 2; i < len(out); i++ {
		window := out[max(0, i-g.Context):i]
		logits, err := g.Forward(lathe.FromSlice(lathe.CPU, window, 1, len(window))).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		last := logits[(len(window)-1)*g.Vocab:]
		best := 0
		for j, v := range last {
			if v > last[best] {
				best = j
			}
		}
		if out[i] != int64(best) {
			t.Errorf("token %d is %d, want the argmax %d", i, out[i], best)
		}
	}
	for name, s := range map[string]Sampling{
		"temperature 0": {Temperature: 0},
		"NaN":           {Temperature: math.NaN()},
		"top-k -1":      {Temperature: 1, TopK: -1},
	} {
		if _, err := g.Generate([]int64{1}, 1, s); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("%s: error %v, want ErrValue", name, err)
		}
	}
	if _, err := g.Generate(nil, 1, Sampling{Temperature: 1}); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("empty prompt: error %v, want ErrValue", err)
	}
	if _, err := g.Generate([]int64{9}, 1, Sampling{Temperature: 1}); err == nil {
		t.Errorf("a token outside the vocabulary: no error")
	}
}

// TestGenerateConcurrently runs greedy generation from several goroutines
// on one model: the model is only read, so each gets the same tokens.
func TestGenerateConcurrently(t *testing.T) {
	lathe.Seed(4)
	g, err := New(Config{Vocab: 7, Context: 4, Layers: 1, Heads: 2, Dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	greedy := Sampling{Temperature: 1, TopK: 1}
	want, err := g.Generate([]int64{3}, 5, greedy)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			got, err := g.Generate([]int64{3}, 5, greedy)
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("goroutine %d: %v, want %v", i, got, want)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

// TestGenerateTopK draws with TopK 3 through lathe.Multinomial: every token
// is among its position's three largest logits, more than one of them
// occurs, and lathe.Seed repeats the draws.
func TestGenerateTopK(t *testing.T) {
	lathe.Seed(5)
	g, err := New(Config{Vocab: 11, Context: 6, Layers: 1, Heads: 2, Dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	s := Sampling{Temperature: 2, TopK: 3}
	lathe.Seed(6)
	out, err := g.Generate([]int64{1, 2}, 40, s)
	if err != nil {
		t.Fatal(err)
	}
	lathe.Seed(6)
	again, err := g.Generate([]int64{1, 2}, 40, s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, again) {
		t.Errorf("the same seed drew\n%v\nthen\n%v", out, again)
	}
	ranks := map[int]int{}
	for i := 2; i < len(out); i++ {
		window := out[max(0, i-g.Context):i]
		logits, err := g.Forward(lathe.FromSlice(lathe.CPU, window, 1, len(window))).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		last := logits[(len(window)-1)*g.Vocab:]
		rank := 0 // how many logits are larger than the drawn token's
		for _, v := range last {
			if v > last[out[i]] {
				rank++
			}
		}
		if rank >= 3 {
			t.Errorf("token %d (%d) has rank %d, outside the top 3", i, out[i], rank)
		}
		ranks[rank]++
	}
	if len(ranks) < 2 {
		t.Errorf("every draw had the same rank (%v): not sampling", ranks)
	}
	t.Logf("ranks of 40 draws among the top 3: %v", ranks)
}
