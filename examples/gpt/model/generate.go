package model

import (
	"strconv"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// Sampling says how Generate draws each token.
type Sampling struct {
	Temperature float64 // divides the logits; > 0 (1 keeps the model's distribution, less sharpens it)
	TopK        int     // draw among the TopK most likely tokens; 0 or more than Vocab means all
}

// Check says what is wrong with s, naming the field, or nil.
func (s Sampling) Check() error {
	switch {
	case !(s.Temperature > 0):
		return lathe.NewError("gpt generate", lathe.ErrValue, "Temperature", "is "+strconv.FormatFloat(s.Temperature, 'g', -1, 64),
			"use a temperature > 0")
	case s.TopK < 0:
		return lathe.NewError("gpt generate", lathe.ErrValue, "TopK", "is "+strconv.Itoa(s.TopK), "use 0 for all tokens or a count ≥ 1")
	}
	return nil
}

// Generate appends n tokens to prompt, one at a time: the model reads the
// last Context tokens, and the next token is drawn from the softmax of its
// last position's logits divided by Temperature, among the TopK largest
// (lathe's TopK), by lathe.Multinomial, from the stream that lathe.Seed
// resets. It runs without recording gradients, on the device of the
// model's parameters, and returns prompt's tokens followed by the new ones.
//
// While the sequence fits the context, the model reads each token once: a
// prefill over the prompt keeps every block's keys and values (a KV cache),
// and each new token is a forward of its one position, at its absolute
// index, attending to the cached keys and values and its own. Past
// Context tokens the window slides: every token's position in the window
// moves by one with each new token, and a block's keys depend on its
// position (through the position table, or the rotary angle) and on the
// earlier tokens of the window, so no cached key stays right; each token
// there is a forward over the last Context tokens, as it would be without
// a cache. The tokens are those a full forward per token draws from the
// same seed (the tests check it), since the logits agree to rounding.
func (g *GPT) Generate(prompt []int64, n int, s Sampling) ([]int64, error) {
	return g.generate(prompt, n, s, true)
}

// generate is Generate, with a KV cache or (cache false, the tests'
// reference) a full forward over the window for every token.
func (g *GPT) generate(prompt []int64, n int, s Sampling, cache bool) ([]int64, error) {
	switch {
	case len(prompt) == 0:
		return nil, lathe.NewError("gpt generate", lathe.ErrValue, "prompt", "is empty", "start from at least one token")
	case n < 0:
		return nil, lathe.NewError("gpt generate", lathe.ErrValue, "n", "is "+strconv.Itoa(n), "ask for zero or more tokens")
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	k := s.TopK
	if k == 0 || k > g.Vocab {
		k = g.Vocab
	}
	d := g.newDecoder(cache)
	defer d.reset()
	out := append([]int64(nil), prompt...)
	var err error
	lathe.NoGrad(func() {
		for range n {
			logits := d.logits(out)
			var next int64
			next, err = draw(logits, k, s.Temperature)
			logits.Release()
			if err != nil {
				return
			}
			out = append(out, next)
		}
	})
	return out, err
}

// draw is one of the k largest of logits [Vocab], by Multinomial over
// their softmax at temperature.
func draw(logits *lathe.Tensor, k int, temperature float64) (int64, error) {
	var s scratch
	defer s.release()
	values, indices := logits.TopK(k, 0, true)
	s.add(values)
	s.add(indices)
	pick := s.add(lathe.Multinomial(s.add(s.add(values.DivScalar(temperature)).Softmax(0)), 1, false))
	ids, err := s.add(indices.IndexSelect(0, pick)).Int64s()
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// decoder is the state of one sequence being generated: a KV cache per
// block for the positions that it has read. Generate appends one token to
// the sequence between two calls of logits, which is what lets the cache
// be reused.
type decoder struct {
	g      *GPT
	cache  bool         // keep keys and values; false: a full forward per token
	caches []nn.KVCache // one per block, holding positions 0…n-1 of the sequence
	n      int          // the positions cached; 0: none
}

func (g *GPT) newDecoder(cache bool) *decoder {
	return &decoder{g: g, cache: cache, caches: make([]nn.KVCache, len(g.Blocks))}
}

// logits are the logits [Vocab] of the token that follows seq, the
// sequence so far, whose first d.n tokens are those the caches were filled
// with. The caller releases them.
func (d *decoder) logits(seq []int64) *lathe.Tensor {
	g, m := d.g, len(seq)
	dev := g.TokEmb.Weight.Device()
	var s scratch
	defer s.release()
	var h *lathe.Tensor
	l := 1
	if d.cache && d.n > 0 && d.n == m-1 && m <= g.Context {
		// One new token, at position m-1 of a sequence that fits.
		h = g.hidden(s.add(lathe.FromSlice(dev, seq[m-1:], 1, 1)), d.n, d.caches, &s)
		d.n = m
	} else {
		// The prefill, or (past the context) the window's full forward.
		// Its keys and values are kept only where a next position fits.
		d.reset()
		window := seq[max(0, m-g.Context):]
		l = len(window)
		var caches []nn.KVCache
		if d.cache && m < g.Context {
			caches = d.caches
			d.n = m
		}
		h = g.hidden(s.add(lathe.FromSlice(dev, window, 1, l)), 0, caches, &s)
	}
	return s.add(g.head(s.add(h.Narrow(1, l-1, 1)), &s)).Reshape(g.Vocab)
}

// reset empties the caches.
func (d *decoder) reset() {
	for i := range d.caches {
		d.caches[i].Reset()
	}
	d.n = 0
}

// scratch collects the temporaries of a generation step (every tensor it
// makes but the cache's and the result) so that release gives their memory
// back to the device's pool at once, instead of when the collector finds
// them. A nil scratch keeps them: Forward's tensors may be in a graph that
// Backward reads.
type scratch struct{ ts []*lathe.Tensor }

// add notes t for release and returns it.
func (s *scratch) add(t *lathe.Tensor) *lathe.Tensor {
	if s != nil {
		s.ts = append(s.ts, t)
	}
	return t
}

func (s *scratch) release() {
	for _, t := range s.ts {
		t.Release()
	}
	s.ts = s.ts[:0]
}
