package nn_test

import (
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// TestLayersReleaseIntermediates: a training step through this package's
// layers and losses built of many ops (transformer layers and stacks,
// attention, RMSNorm, rotary embeddings, the losses that are not one
// lathe op, dropout)
// gives back what they made on the way once backward frees the graph,
// instead of leaving it to the garbage collector: the step holds less than
// one activation after it.
func TestLayersReleaseIntermediates(t *testing.T) {
	const b, l, d = 8, 32, 64
	const activation = b * l * d * 4 // bytes: 64 KiB; a step made dozens
	lathe.Seed(21)
	x := lathe.RandN(lathe.CPU, lathe.Float32, b, l, d)
	memory := lathe.RandN(lathe.CPU, lathe.Float32, b, l, d)
	probs := lathe.Rand(lathe.CPU, lathe.Float32, b, l, d)
	classes := make([]int64, b*l)
	for i := range classes {
		classes[i] = int64(i % d)
	}
	labels := lathe.FromSlice(lathe.CPU, classes, b*l)
	encoder := nn.NewTransformerEncoderLayer(d, 4, nn.DimFeedforward(128)) // dropout 0.1, training
	decoder := nn.NewTransformerDecoderLayer(d, 4, nn.DimFeedforward(128), nn.NormFirst())
	stack := nn.NewTransformerEncoder(func() *nn.TransformerEncoderLayer {
		return nn.NewTransformerEncoderLayer(d, 4, nn.DimFeedforward(128))
	}, 2, nn.NewLayerNorm([]int{d}))
	attention := nn.NewMultiheadAttention(d, 4, nn.SeqFirst())
	rms := nn.NewRMSNorm([]int{d})
	for _, c := range []struct {
		name   string
		params []nn.Param
		step   func() *lathe.Tensor
	}{
		{"encoder layer", encoder.Parameters(), func() *lathe.Tensor { return encoder.Forward(x) }},
		{"decoder layer", decoder.Parameters(), func() *lathe.Tensor { return decoder.Decode(x, memory, nn.AttentionMasks{}, nn.AttentionMasks{}) }},
		{"encoder stack", stack.Parameters(), func() *lathe.Tensor { return stack.Forward(x) }},
		{"attention", attention.Parameters(), func() *lathe.Tensor { return attention.Forward(x) }},
		{"rms norm", rms.Parameters(), func() *lathe.Tensor { return rms.Forward(x) }},
		{"rotary", nil, func() *lathe.Tensor { return nn.ApplyRotary(x, 3, 10000) }},
		{"dropout", nil, func() *lathe.Tensor { return x.Dropout(0.5, true) }},
		{"bce with logits", nil, func() *lathe.Tensor { return nn.BCEWithLogits(x, probs) }},
		{"label smoothing", nil, func() *lathe.Tensor {
			return nn.CrossEntropy(x.Reshape(b*l, d), labels, nn.LabelSmoothing(0.1))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			xg := x.RequireGrad() // gradients reach the input as well as the parameters
			before := cpuAllocated(t)
			out := c.step()
			loss := out.Sum()
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			out.Release()
			loss.Release()
			xg.ZeroGrad()
			for _, p := range c.params {
				p.T.ZeroGrad()
			}
			if held := cpuAllocated(t) - before; held >= activation {
				t.Errorf("%d bytes still held after the step, want under one activation's %d", held, activation)
			}
		})
	}
	for _, in := range []*lathe.Tensor{x, memory, probs, labels} {
		if _, err := in.Float32s(); err != nil && in != labels {
			t.Fatalf("an input after the steps: %v", err)
		}
	}
}

// cpuAllocated is what the cpu's live tensors hold (MemoryStats'
// Allocated).
func cpuAllocated(t *testing.T) int64 {
	t.Helper()
	s, err := lathe.MemoryStats(lathe.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return s.Allocated
}
