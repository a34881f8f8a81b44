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
	classes := make([]int64, 128)
	for i := range classes {
		classes[i] = int64(i % 10)
	}
	x, y := lathe.RandN(lathe.CPU, lathe.Float32, 128, 784), lathe.FromSlice(lathe.CPU, classes, 128)
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
// takes its gradient and parameter buffers from the cpu pool. The step makes
// about 3.2 MB of tensors (3.2 MB per step before the pool); what is still
// new memory is the forward activations, which nobody releases (about
// 0.4 MB: the garbage collector takes them), the handles (about 0.15 MB),
// and parameters whose transposed views wait for a collection to let go
// (0.7 MB per step in all, measured).
func TestMLPStepReusesBuffers(t *testing.T) {
	step := mlpStep(t)
	for range 3 {
		step() // warm the pool
	}
	var before, after runtime.MemStats
	const steps = 50
	runtime.ReadMemStats(&before)
	for range steps {
		step()
	}
	runtime.ReadMemStats(&after)
	perStep := (after.TotalAlloc - before.TotalAlloc) / steps
	t.Logf("%d bytes allocated per step", perStep)
	if perStep > 1<<20 {
		t.Errorf("a steady-state step allocates %d bytes; want under 1 MiB (gradient and parameter buffers should come from the pool)", perStep)
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
