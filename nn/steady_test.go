package nn

import (
	"runtime"
	"testing"

	"github.com/lathe-ml/lathe"
)

// mlpStep is the training step that lathe-bench times: 784-256-10 at batch
// 128, cross-entropy, backward, SGD.
func mlpStep(t testing.TB) func() {
	lathe.Seed(1)
	model := Sequential(NewLinear(784, 256), ReLU{}, NewLinear(256, 10))
	opt, err := NewSGD(model.Parameters(), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	x, y := lathe.RandN(lathe.CPU, lathe.Float32, 128, 784), cyclicLabels(128, 10)
	return func() {
		loss := CrossEntropy(model.Forward(x), y)
		opt.ZeroGrad()
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		loss.Release()
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
}

// goAllocsPerStep runs step three times to warm the pool, then steps
// times, and returns the Go heap's bytes and allocations per step of
// those.
func goAllocsPerStep(step func(), steps int) (bytes, allocs uint64) {
	for range 3 {
		step()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range steps {
		step()
	}
	runtime.ReadMemStats(&after)
	n := uint64(steps)
	return (after.TotalAlloc - before.TotalAlloc) / n, (after.Mallocs - before.Mallocs) / n
}

// cyclicLabels is n Int64 class labels 0, 1, ..., classes-1, 0, 1, ...
func cyclicLabels(n, classes int) *lathe.Tensor {
	labels := make([]int64, n)
	for i := range labels {
		labels[i] = int64(i % classes)
	}
	return lathe.FromSlice(lathe.CPU, labels, n)
}

// BenchmarkMLPStep reports the step's time and, with -benchmem, what it
// asks of the Go allocator.
func BenchmarkMLPStep(b *testing.B) {
	step := mlpStep(b)
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

// TestMLPStepReusesBuffers checks that a training step in its steady state
// takes its tensors from the cpu pool. The step makes about 3.2 MB of
// tensors (3.2 MB per step before the pool); Sequential releases the
// activations and Linear its weight's transposed view with the graph, so
// that what is still new memory is Go's own: the handles and the ops'
// small bookkeeping, about 63 KB in 945 allocations (0.42 MB before the
// transposed views went with the graph, when each step's new weight took
// new memory while a view held the old one).
func TestMLPStepReusesBuffers(t *testing.T) {
	perStep, allocs := goAllocsPerStep(mlpStep(t), 50)
	t.Logf("%d bytes in %d allocations per step", perStep, allocs)
	if perStep > 256<<10 {
		t.Errorf("a steady-state step allocates %d bytes; want under 256 KiB (its tensors should come from the pool)", perStep)
	}
}

// TestOptimizerStepsFromPool checks that every optimizer, with each of its
// state-keeping options, takes a steady step's tensors from the cpu pool:
// the temporaries of an update and the state it replaces go back to the
// pool, so after warm-up no step asks for new memory.
func TestOptimizerStepsFromPool(t *testing.T) {
	makers := map[string]func(ps []Param) (Optimizer, error){
		"sgd momentum nesterov wd": func(ps []Param) (Optimizer, error) {
			return NewSGD(ps, 0.01, Momentum(0.9), Nesterov(), WeightDecay(1e-4))
		},
		"adam wd":          func(ps []Param) (Optimizer, error) { return NewAdam(ps, 1e-3, WeightDecay(1e-4)) },
		"adamw":            func(ps []Param) (Optimizer, error) { return NewAdamW(ps, 1e-3) },
		"rmsprop centered": func(ps []Param) (Optimizer, error) { return NewRMSprop(ps, 1e-3, Centered(), Momentum(0.9)) },
		"adagrad wd":       func(ps []Param) (Optimizer, error) { return NewAdagrad(ps, 1e-2, WeightDecay(1e-4)) },
	}
	for name, make := range makers {
		t.Run(name, func(t *testing.T) {
			// An empty cache, so that what earlier tests left cannot fill
			// the pool's cap and turn a release into a drop.
			if err := lathe.EmptyCache(lathe.CPU); err != nil {
				t.Fatal(err)
			}
			lathe.Seed(2)
			model := NewLinear(64, 32)
			for _, p := range model.Parameters() {
				if err := p.T.SetGrad(lathe.RandN(lathe.CPU, lathe.Float32, p.T.Shape()...)); err != nil {
					t.Fatal(err)
				}
			}
			opt, err := make(model.Parameters())
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := lathe.MemoryStats(lathe.CPU)
			for range 5 {
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
			}
			after, _ := lathe.MemoryStats(lathe.CPU)
			if misses := (after.Allocs - after.CacheHits) - (before.Allocs - before.CacheHits); misses != 0 {
				t.Errorf("5 steady steps asked for new memory %d times; want every buffer from the pool", misses)
			}
		})
	}
}

// resBlockStep is lathe-bench's ResNet-block training step (a stem
// convolution, one basic block with batch norm and a skip connection,
// global average pooling, a linear head; batch 32 of 3×32×32, width 16),
// with its forward and loss under Autocast to amp where amp is a 16-bit
// dtype. The block's activations go with the graph, as lathe-bench's
// model hands them over.
func resBlockStep(t testing.TB, amp lathe.DType) func() {
	lathe.Seed(1)
	conv := func(in int) Module { return NewConv2d(in, 16, 3, Padding(1)) }
	stem := Sequential(conv(3), NewBatchNorm2d(16), ReLU{})
	body := Sequential(conv(16), NewBatchNorm2d(16), ReLU{}, conv(16), NewBatchNorm2d(16))
	head := Sequential(NewAdaptiveAvgPool2d(1), Flatten{}, NewLinear(16, 10))
	opt, err := NewSGD(Sequential(stem, body, head).Parameters(), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	x, y := lathe.RandN(lathe.CPU, lathe.Float32, 32, 3, 32, 32), cyclicLabels(32, 10)
	forward := func() *lathe.Tensor {
		h := stem.Forward(x)
		b := body.Forward(h)
		sum := h.Add(b)
		r := sum.ReLU()
		out := head.Forward(r)
		loss := CrossEntropy(out, y)
		lathe.ReleaseWithGraph(loss, h, b, sum, r, out)
		return loss
	}
	return func() {
		var loss *lathe.Tensor
		if amp == lathe.Float32 {
			loss = forward()
		} else if err := lathe.Autocast(amp, func() { loss = forward() }); err != nil {
			t.Fatal(err)
		}
		opt.ZeroGrad()
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		loss.Release()
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkResBlockStep reports the ResNet-block step's time and, with
// -benchmem, what it asks of the Go allocator, in float32 and under
// bfloat16 autocast.
func BenchmarkResBlockStep(b *testing.B) {
	for _, amp := range []lathe.DType{lathe.Float32, lathe.BFloat16} {
		b.Run(amp.String(), func(b *testing.B) {
			step := resBlockStep(b, amp)
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
		})
	}
}

// TestResBlockStepAllocations bounds the Go memory a steady ResNet-block
// step allocates: its tensors come from the pool, and what is left is
// handles and the ops' bookkeeping, about 135 KB in float32 and 240 KB
// under bfloat16 autocast (300 and 740 KB before the kernels' scratch
// came from the pool and the 16-bit blocks stopped building tensors).
func TestResBlockStepAllocations(t *testing.T) {
	for _, amp := range []lathe.DType{lathe.Float32, lathe.BFloat16} {
		perStep, allocs := goAllocsPerStep(resBlockStep(t, amp), 10)
		t.Logf("%s: %d bytes in %d allocations per step", amp, perStep, allocs)
		if perStep > 512<<10 {
			t.Errorf("%s: a steady step allocates %d bytes; want under 512 KiB", amp, perStep)
		}
	}
}

// TestBackwardZerosFromPool checks that the zeros a gradient rule makes
// (an embedding's index_select and a cross-entropy's target rows scatter
// into zeros of their input's shape) come from the cpu pool in a steady
// step: made as Go slices, as they were, the [5000, 256] table's zeros
// alone were 5 MB of new heap a step (7.3 MB in all), its pages faulted in
// one by one. About 0.5 MB a step is still new; I did not trace it.
func TestBackwardZerosFromPool(t *testing.T) {
	lathe.Seed(3)
	table := lathe.RandN(lathe.CPU, lathe.Float32, 5000, 256).RequireGrad()
	idx := cyclicLabels(512, 5000)
	logits := lathe.RandN(lathe.CPU, lathe.Float32, 512, 1000).RequireGrad()
	target := cyclicLabels(512, 1000)
	step := func() {
		loss := CrossEntropy(logits, target).Add(lathe.Embedding(idx, table).Sum())
		d, err := lathe.Grad(loss, []*lathe.Tensor{table, logits})
		if err != nil {
			t.Fatal(err)
		}
		loss.Release()
		for _, g := range d {
			g.Release()
		}
	}
	perStep, allocs := goAllocsPerStep(step, 20)
	t.Logf("%d bytes in %d allocations per step", perStep, allocs)
	if perStep > 1<<20 {
		t.Errorf("a steady-state backward allocates %d bytes; want under 1 MiB (its zeros should come from the pool)", perStep)
	}
}
