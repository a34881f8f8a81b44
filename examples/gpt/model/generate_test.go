package model

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// cacheConfigs are the float64 models the KV-cache tests run: learned and
// rotary positions, two layers, and no layer at all (where only the
// position table carries the offset).
func cacheConfigs() map[string]Config {
	c := Config{Vocab: 11, Context: 6, Layers: 2, Heads: 2, Dim: 8, DType: lathe.Float64}
	rotary, none := c, c
	rotary.Rotary = true
	none.Layers = 0
	return map[string]Config{"learned": c, "rotary": rotary, "layers0": none}
}

// fullLogits are the logits of the token after seq by a full forward over
// its last Context tokens, as Generate computed them before it had a cache.
func fullLogits(t *testing.T, g *GPT, seq []int64) []float64 {
	t.Helper()
	window := seq[max(0, len(seq)-g.Context):]
	all, err := g.Forward(lathe.FromSlice(lathe.CPU, window, 1, len(window))).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return all[(len(window)-1)*g.Vocab:]
}

func maxDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestDecoderLogits grows a sequence one token at a time from a prompt of
// two, to three times the context, and compares the logits the cached
// decoder gives at every step with a full forward over the window: within
// the context the decoder reads one position per token, past it the whole
// window.
func TestDecoderLogits(t *testing.T) {
	for name, c := range cacheConfigs() {
		t.Run(name, func(t *testing.T) {
			lathe.Seed(7)
			g, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			d := g.newDecoder(true)
			defer d.reset()
			seq := []int64{3, 5}
			lathe.NoGrad(func() {
				for len(seq) < 3*c.Context {
					logits := d.logits(seq)
					got, err := logits.Float64s()
					logits.Release()
					if err != nil {
						t.Fatal(err)
					}
					if diff := maxDiff(got, fullLogits(t, g, seq)); diff > 1e-10 || len(got) != c.Vocab {
						t.Errorf("length %d: %d logits, %g from the full forward's", len(seq), len(got), diff)
					}
					// The cache holds the whole sequence while it fits the
					// context (the prompt, shorter, started it), and nothing
					// past it.
					want := len(seq)
					if want > c.Context {
						want = 0
					}
					if d.n != want {
						t.Errorf("length %d: %d positions cached, want %d", len(seq), d.n, want)
					}
					for i, cache := range d.caches {
						if cache.Len() != want {
							t.Errorf("length %d: block %d caches %d positions, want %d", len(seq), i, cache.Len(), want)
						}
					}
					seq = append(seq, int64(7*len(seq)%c.Vocab))
				}
			})
		})
	}
}

// TestHiddenAfterCache runs the positions of a sequence in three chunks of
// several tokens through the caches (the case where a chunk's queries need
// the triangle shifted by the cached length) and compares with Forward over
// the whole sequence.
func TestHiddenAfterCache(t *testing.T) {
	for name, c := range cacheConfigs() {
		t.Run(name, func(t *testing.T) {
			lathe.Seed(8)
			g, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			seq := []int64{1, 4, 9, 2, 7, 10}
			want, err := g.Forward(lathe.FromSlice(lathe.CPU, seq, 1, len(seq))).Float64s()
			if err != nil {
				t.Fatal(err)
			}
			caches := make([]nn.KVCache, len(g.Blocks))
			var got []float64
			lathe.NoGrad(func() {
				for _, chunk := range [][2]int{{0, 3}, {3, 5}, {5, 6}} {
					x := lathe.FromSlice(lathe.CPU, seq[chunk[0]:chunk[1]], 1, chunk[1]-chunk[0])
					part, err := g.head(g.hidden(x, chunk[0], caches, nil), nil).Float64s()
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, part...)
				}
			})
			if diff := maxDiff(got, want); diff > 1e-10 || len(got) != len(want) {
				t.Errorf("%d logits, %g from Forward's", len(got), diff)
			}
		})
	}
}

// TestGenerateCacheDrawsTheSame draws with the cache and without it from
// the same seed, for n within the context and past it, at a temperature
// that keeps the draws random, over all tokens and among the top 5: the
// random stream is consumed alike (one Multinomial per token), and the
// logits agree to rounding, so the tokens are the same.
func TestGenerateCacheDrawsTheSame(t *testing.T) {
	for name, c := range cacheConfigs() {
		for _, n := range []int{c.Context - 3, 4 * c.Context} {
			for _, s := range []Sampling{{Temperature: 1.5}, {Temperature: 0.9, TopK: 5}} {
				t.Run(fmt.Sprintf("%s/n%d/topk%d", name, n, s.TopK), func(t *testing.T) {
					lathe.Seed(9)
					g, err := New(c)
					if err != nil {
						t.Fatal(err)
					}
					lathe.Seed(10)
					cached, err := g.Generate([]int64{2, 6}, n, s)
					if err != nil {
						t.Fatal(err)
					}
					lathe.Seed(10)
					full, err := g.generate([]int64{2, 6}, n, s, false)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(cached, full) || len(cached) != n+2 {
						t.Errorf("with the cache\n%v\nwithout\n%v", cached, full)
					}
					if distinct := len(slices.Compact(slices.Sorted(slices.Values(cached)))); distinct < 3 {
						t.Errorf("%v has %d distinct tokens: not sampling", cached, distinct)
					}
				})
			}
		}
	}
}

// TestGenerateLongPrompt starts from a prompt longer than the context, so
// the first forward is already a sliding window (and never cached).
func TestGenerateLongPrompt(t *testing.T) {
	lathe.Seed(11)
	g, err := New(cacheConfigs()["rotary"])
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	s := Sampling{Temperature: 1, TopK: 4}
	lathe.Seed(12)
	cached, err := g.Generate(prompt, 5, s)
	if err != nil {
		t.Fatal(err)
	}
	lathe.Seed(12)
	full, err := g.generate(prompt, 5, s, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cached, full) {
		t.Errorf("with the cache %v, without %v", cached, full)
	}
}

// TestGenerateBadTokenInStep feeds the cached step a token outside the
// vocabulary: Generate returns the error, not a panic.
func TestGenerateBadTokenInStep(t *testing.T) {
	lathe.Seed(13)
	g, err := New(cacheConfigs()["learned"])
	if err != nil {
		t.Fatal(err)
	}
	d := g.newDecoder(true)
	defer d.reset()
	lathe.NoGrad(func() {
		d.logits([]int64{1, 2}).Release()
		if _, err := d.logits([]int64{1, 2, 99}).Float64s(); err == nil {
			t.Error("token 99 of a vocabulary of 11: no error")
		}
	})
}

// BenchmarkGenerate generates the 63 tokens after a one-token prompt with
// lathe-bench's GPT (context 64, 4 layers, 64 wide, 4 heads, float32),
// with the KV cache and with a full forward per token; tokens/s is the
// rate.
func BenchmarkGenerate(b *testing.B) {
	lathe.Seed(1)
	g, err := New(Config{Vocab: 98, Context: 64, Layers: 4, Heads: 4, Dim: 64})
	if err != nil {
		b.Fatal(err)
	}
	s := Sampling{Temperature: 0.8, TopK: 20}
	for _, cache := range []bool{true, false} {
		b.Run(fmt.Sprintf("cache=%v", cache), func(b *testing.B) {
			for b.Loop() {
				if _, err := g.generate([]int64{0}, 63, s, cache); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(63*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
