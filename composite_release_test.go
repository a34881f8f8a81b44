package lathe

import (
	"runtime/debug"
	"testing"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestCompositesReleaseTheirIntermediates: the tensors that an op built
// from other ops makes on the way to its result (a reshape's contiguous
// copy, embedding's rows, cross-entropy's log-probabilities, attention's
// canonical views and its kernel's padded output, a mean's sum, max
// pooling's indices, the casts of a binary op's or a loss's operands to
// their promoted dtype) go back to the pool
// with the graph, or at once without one, not when the garbage collector
// finds them. With the
// collector off, a step followed by the release of what the caller holds
// leaves nothing behind. (They left examples/gpt's training step 5 MB a
// step for the collector, which the pool then took as new memory.)
func TestCompositesReleaseTheirIntermediates(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	Seed(5)
	// Every intermediate is at least 32 KiB, above the size under which
	// the cpu's MemoryStats leaves buffers out.
	x := RandN(CPU, Float32, 64, 128).RequireGrad()
	table := RandN(CPU, Float32, 100, 512).RequireGrad()
	ids := FromSlice(CPU, []int64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3}, 2, 8)
	targets := FromSlice(CPU, make([]int64, 64), 64)
	q := RandN(CPU, Float32, 2, 4, 32, 32).RequireGrad()
	mask := Ones(CPU, Bool, 32, 32)
	wide := RandN(CPU, Float32, 4, 8192).RequireGrad()
	img := RandN(CPU, Float32, 1, 4, 64, 64).RequireGrad()
	x64 := RandN(CPU, Float64, 64, 128) // x promotes to its dtype
	leaves := []*Tensor{x, table, q, wide, img}
	mt := x.MT()
	cases := []struct {
		name string
		op   func() *Tensor // the op's result, which the step releases
	}{
		{"reshape of a transposed view", func() *Tensor { return mt.Reshape(-1) }},
		{"embedding", func() *Tensor { return Embedding(ids, table) }},
		{"cross entropy", func() *Tensor { return x.CrossEntropy(targets) }},
		{"attention", func() *Tensor { return ScaledDotProductAttention(q, q, q, IsCausal()) }},
		{"attention with a mask", func() *Tensor { return ScaledDotProductAttention(q, q, q, AttentionMask(mask)) }},
		{"mean over a dim", func() *Tensor { return wide.Mean(0) }},
		{"max pooling", func() *Tensor { return img.MaxPool2d(2) }},
		{"mixed-dtype product", func() *Tensor { return x.Mul(x64) }},
		{"mixed-dtype add_scaled", func() *Tensor { return x.AddScaled(x64, 0.5) }},
		{"mixed-dtype mse", func() *Tensor { return x.MSELoss(x64) }},
	}
	for _, c := range cases {
		for _, grad := range []bool{false, true} {
			before := cpuAllocated(t)
			var y, loss *Tensor
			if grad {
				y = c.op()
				loss = y.Sum()
				if err := loss.Backward(); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			} else {
				NoGrad(func() { y = c.op(); loss = y.Sum() })
			}
			if err := loss.Err(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			y.Release()
			loss.Release()
			for _, l := range leaves {
				l.ZeroGrad()
			}
			if held := cpuAllocated(t) - before; held != 0 {
				t.Errorf("%s (gradients %v): %d bytes still held after the step", c.name, grad, held)
			}
		}
	}
}

// TestCompositeConstantsOnDevice: the constants a composite's body makes
// (nll_loss's zeros, layer norm's ones and zeros for a missing weight and
// bias) go back with its intermediates. wgpu:0's pool counts
// every block; the cpu's leaves out the small ones.
func TestCompositeConstantsOnDevice(t *testing.T) {
	dev := WGPU(0)
	x, labels := RandN(dev, Float32, 4, 8), FromSlice(dev, []int64{1, 2, 3, 0})
	if err := labels.Err(); err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 does not open: %v", err)
	}
	x.CrossEntropy(labels).Release() // the first value check makes its buffer, which stays
	before := allocatedOn(t, dev)
	for range 3 {
		x.CrossEntropy(labels).Release()
		logp := x.LogSoftmax(1)
		logp.NLLLoss(labels).Release()
		logp.Release()
		x.LayerNorm([]int{8}, nil, nil, 1e-5).Release() // its ones and zeros for the missing weight and bias
	}
	if after := allocatedOn(t, dev); after > before {
		t.Errorf("wgpu:0 holds %d bytes after the losses went, %d before", after, before)
	}
}
