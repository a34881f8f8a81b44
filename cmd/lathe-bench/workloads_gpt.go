package main

import (
	"fmt"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/examples/gpt/model"
	"github.com/lathe-ml/lathe/nn"
)

// gptVocab is examples/gpt's vocabulary size (its fixed character set).
const gptVocab = 98

// gptStep is a training step of examples/gpt's model with learned
// positions and 4 heads at batch windows of context tokens: forward,
// next-token cross-entropy, backward and AdamW. The dims travel as
// [batch, context, layers, dim, heads, vocab], as build/bench_torch.py's
// build_gpt_step reads them.
func gptStep(batch, context, layers, dim int) workload {
	return workload{Name: fmt.Sprintf("gpt step b%d ctx%d l%d d%d", batch, context, layers, dim), Family: "gpt",
		spec: spec{Kind: "gpt_step", DType: "f32", Dims: []int{batch, context, layers, dim, 4, gptVocab}}, Unit: perStep}
}

// gptGenerate is one token of examples/gpt's Generate from a full window
// of context tokens (top 20 at temperature 0.8), the steady state of
// generating text longer than the context: one forward over the window per
// token, since past the context the window slides and no cached key or
// value stays right (model.GPT.Generate says why).
func gptGenerate(context, layers, dim int) workload {
	return workload{Name: fmt.Sprintf("gpt generate ctx%d l%d d%d", context, layers, dim), Family: "gpt-generate",
		spec: spec{Kind: "gpt_generate", DType: "f32", Dims: []int{1, context, layers, dim, 4, gptVocab}}, Unit: tokens, Work: 1}
}

// gptGenerateCached is examples/gpt's Generate of context-1 tokens from a
// prompt of one (top 20 at temperature 0.8), within the context, where it
// keeps a KV cache: a step is the whole sequence, a one-token prefill and
// context-2 forwards of one position, and the rate is per token.
// build/bench_torch.py's side keeps a cache of its own, each layer's past
// keys and values concatenated with the new ones, as the row's name says.
func gptGenerateCached(context, layers, dim int) workload {
	return workload{Name: fmt.Sprintf("gpt generate with KV cache ctx%d l%d d%d (%d tokens; torch: cat past k,v)", context, layers, dim, context-1),
		Family: "gpt-generate", spec: spec{Kind: "gpt_generate_cached", DType: "f32", Dims: []int{1, context, layers, dim, 4, gptVocab}},
		Unit: tokens, Work: float64(context - 1)}
}

func newBenchGPT(dev lathe.Device, dt lathe.DType, dims []int) (*model.GPT, error) {
	context, layers, dim, heads, vocab := dims[1], dims[2], dims[3], dims[4], dims[5]
	lathe.Seed(1)
	g, err := model.New(model.Config{Vocab: vocab, Context: context, Layers: layers, Heads: heads, Dim: dim, DType: dt})
	if err != nil {
		return nil, err
	}
	return g, g.To(dev)
}

// buildGPTStep is gptStep's step, with AdamW as examples/gpt sets it.
func buildGPTStep(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	batch, context, vocab := dims[0], dims[1], dims[5]
	g, err := newBenchGPT(dev, dt, dims)
	if err != nil {
		return nil, err
	}
	opt, err := nn.NewAdamW(g.Parameters(), 3e-3, nn.Betas(0.9, 0.95), nn.WeightDecay(0.1))
	if err != nil {
		return nil, err
	}
	// The tokens bench_torch.py uses: 7·i mod vocab over batch windows of context+1.
	xs, ys := make([]int64, 0, batch*context), make([]int64, 0, batch*context)
	for b := range batch {
		for i := range context {
			j := b*(context+1) + i
			xs, ys = append(xs, int64(7*j%vocab)), append(ys, int64(7*(j+1)%vocab))
		}
	}
	x, y := lathe.FromSlice(dev, xs, batch, context), lathe.FromSlice(dev, ys, batch, context)
	release, err := inputs(x, y)
	if err != nil {
		return nil, err
	}
	step := func() error {
		loss := model.Loss(g.Forward(x), y)
		opt.ZeroGrad()
		err := loss.Backward()
		loss.Release()
		if err != nil {
			return err
		}
		return opt.Step()
	}
	return &prepared{step: step, release: release}, nil
}

// buildGPTGenerate is gptGenerate's step: Generate one token from the
// window, which then slides by that token.
func buildGPTGenerate(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	context, vocab := dims[1], dims[5]
	g, err := newBenchGPT(dev, dt, dims)
	if err != nil {
		return nil, err
	}
	window := make([]int64, context)
	for i := range window {
		window[i] = int64(7 * i % vocab)
	}
	sampling := model.Sampling{Temperature: 0.8, TopK: 20}
	step := func() error {
		out, err := g.Generate(window, 1, sampling)
		if err != nil {
			return err
		}
		window = out[1:]
		return nil
	}
	return &prepared{step: step, release: func() {}}, nil
}

// buildGPTGenerateCached is gptGenerateCached's step: a sequence of
// context-1 new tokens from the one-token prompt bench_torch.py starts from.
func buildGPTGenerateCached(dev lathe.Device, dt lathe.DType, dims []int) (*prepared, error) {
	context := dims[1]
	g, err := newBenchGPT(dev, dt, dims)
	if err != nil {
		return nil, err
	}
	sampling := model.Sampling{Temperature: 0.8, TopK: 20}
	step := func() error {
		_, err := g.Generate([]int64{0}, context-1, sampling)
		return err
	}
	return &prepared{step: step, release: func() {}}, nil
}
