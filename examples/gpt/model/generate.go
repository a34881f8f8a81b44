package model

import (
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Sampling says how Generate draws each token.
type Sampling struct {
	Temperature float64 // divides the logits; > 0 (1 keeps the model's distribution, less sharpens it)
	TopK        int     // draw among the TopK most likely tokens; 0 or more than Vocab means all
}

// Generate appends n tokens to prompt, one at a time: the model reads the
// last Context tokens, and the next token is drawn from the softmax of its
// last position's logits divided by Temperature, among the TopK largest
// (lathe's TopK), by lathe.Multinomial, from the stream that lathe.Seed
// resets. It runs without recording gradients, on the device of the
// model's parameters, and returns prompt's tokens followed by the new ones.
func (g *GPT) Generate(prompt []int64, n int, s Sampling) ([]int64, error) {
	switch {
	case len(prompt) == 0:
		return nil, lathe.NewError("gpt generate", lathe.ErrValue, "prompt", "is empty", "start from at least one token")
	case n < 0:
		return nil, lathe.NewError("gpt generate", lathe.ErrValue, "n", "is "+strconv.Itoa(n), "ask for zero or more tokens")
	case !(s.Temperature > 0):
		return nil, lathe.NewError("gpt generate", lathe.ErrValue, "Temperature", "is "+strconv.FormatFloat(s.Temperature, 'g', -1, 64),
			"use a temperature > 0")
	case s.TopK < 0:
		return nil, lathe.NewError("gpt generate", lathe.ErrValue, "TopK", "is "+strconv.Itoa(s.TopK), "use 0 for all tokens or a count ≥ 1")
	}
	k := s.TopK
	if k == 0 || k > g.Vocab {
		k = g.Vocab
	}
	dev := g.TokEmb.Weight.Device()
	out := append([]int64(nil), prompt...)
	var err error
	lathe.NoGrad(func() {
		for range n {
			window := out[max(0, len(out)-g.Context):]
			var next int64
			if next, err = g.next(lathe.FromSlice(dev, window, 1, len(window)), k, s.Temperature); err != nil {
				return
			}
			out = append(out, next)
		}
	})
	return out, err
}

// next draws the token that follows x [1, L]: one of the k largest logits
// of the last position, by Multinomial over their softmax at temperature.
func (g *GPT) next(x *lathe.Tensor, k int, temperature float64) (int64, error) {
	l := x.Shape()[1]
	logits := g.Forward(x).Narrow(1, l-1, 1).Reshape(g.Vocab)
	values, indices := logits.TopK(k, 0, true)
	pick := lathe.Multinomial(values.DivScalar(temperature).Softmax(0), 1, false)
	ids, err := indices.IndexSelect(0, pick).Int64s()
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}
