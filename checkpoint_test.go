package lathe

import (
	"errors"
	"runtime/debug"
	"slices"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// mlpBlock is a checkpointed function's body: tanh(x·w1 + b1)·w2, with
// dropout where drop is set.
func mlpBlock(drop bool) func(xs ...*Tensor) *Tensor {
	return func(xs ...*Tensor) *Tensor {
		h := xs[0].MatMul(xs[1]).Add(xs[2]).Tanh()
		if drop {
			h = h.Dropout(0.5, true)
		}
		return h.MatMul(xs[3])
	}
}

// checkpointCase runs sum((f(2·x0, w1, b1, w2))²) forward and backward,
// through Checkpoint or not, and returns every leaf's gradient and the
// random stream's next draw.
func checkpointCase(t *testing.T, checkpoint, drop bool) ([][]float64, float64) {
	t.Helper()
	Seed(11)
	x0 := RandN(CPU, Float64, 4, 8).RequireGrad()
	w1 := RandN(CPU, Float64, 8, 16).RequireGrad()
	b1 := RandN(CPU, Float64, 16).RequireGrad()
	w2 := RandN(CPU, Float64, 16, 8).RequireGrad()
	x := x0.MulScalar(2)
	f := mlpBlock(drop)
	var y *Tensor
	if checkpoint {
		y = Checkpoint(f, x, w1, b1, w2)
	} else {
		y = f(x, w1, b1, w2)
	}
	if err := y.Mul(y).Sum().Backward(); err != nil {
		t.Fatalf("backward (checkpoint %v): %v", checkpoint, err)
	}
	var grads [][]float64
	for _, p := range []*Tensor{x0, w1, b1, w2} {
		g, err := p.Grad().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		grads = append(grads, g)
	}
	next, err := Rand(CPU, Float64, 1).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return grads, next[0]
}

// A checkpointed block gives the plain block's gradients bit for bit (the
// same ops run in the same order), dropout's mask replayed in backward,
// and leaves the random stream where the plain run leaves it.
func TestCheckpointGradientsMatch(t *testing.T) {
	for _, drop := range []bool{false, true} {
		want, wantNext := checkpointCase(t, false, drop)
		got, gotNext := checkpointCase(t, true, drop)
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("dropout %v: gradient %d through Checkpoint = %v, want %v", drop, i, got[i][:3], want[i][:3])
			}
		}
		if gotNext != wantNext {
			t.Errorf("dropout %v: the stream's next draw after a checkpointed step is %v, want %v", drop, gotNext, wantNext)
		}
	}
}

// A function that returns an argument unchanged passes its gradient
// through; one whose inputs need no gradient records nothing.
func TestCheckpointEdgeCases(t *testing.T) {
	x := FromSlice(CPU, []float64{1, 2, 3}, 3).RequireGrad()
	h := x.MulScalar(3)
	y := Checkpoint(func(xs ...*Tensor) *Tensor { return xs[0] }, h)
	if err := y.Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	if g, _ := x.Grad().Float64s(); !slices.Equal(g, []float64{3, 3, 3}) {
		t.Errorf("gradient through an identity checkpoint = %v, want [3 3 3]", g)
	}
	if v, _ := h.Float64s(); !slices.Equal(v, []float64{3, 6, 9}) {
		t.Errorf("the argument after backward = %v, want it untouched", v)
	}
	c := FromSlice(CPU, []float64{1, 2}, 2)
	if z := Checkpoint(func(xs ...*Tensor) *Tensor { return xs[0].Exp() }, c); z.Err() != nil || z.RequiresGrad() {
		t.Errorf("a checkpoint of tensors that need no gradient = %v (requires grad %v), want a plain result", z.Err(), z.RequiresGrad())
	}
}

// What a caller can get wrong is an error, and a failed backward pass
// changes no gradient.
func TestCheckpointErrors(t *testing.T) {
	w := FromSlice(CPU, []float64{1, 2}, 2).RequireGrad()
	hidden := FromSlice(CPU, []float64{3, 4}, 2).RequireGrad()
	y := Checkpoint(func(xs ...*Tensor) *Tensor { return xs[0].Mul(hidden) }, w)
	if err := y.Sum().Backward(); !errors.Is(err, ErrGrad) {
		t.Errorf("a parameter read from the closure but not passed: %v, want ErrGrad", err)
	}
	if w.Grad() != nil || hidden.Grad() != nil {
		t.Errorf("the failed pass left gradients behind")
	}

	y = Checkpoint(func(xs ...*Tensor) *Tensor { return xs[0].Mul(xs[0]) }, w)
	if _, err := Grad(y.Sum(), []*Tensor{w}, CreateGraph()); !errors.Is(err, ErrGrad) {
		t.Errorf("CreateGraph through a checkpoint: %v, want ErrGrad", err)
	}

	if z := Checkpoint(nil, w); !errors.Is(z.Err(), ErrValue) {
		t.Errorf("nil f: %v, want ErrValue", z.Err())
	}
	if z := Checkpoint(func(...*Tensor) *Tensor { return nil }, w); !errors.Is(z.Err(), ErrValue) {
		t.Errorf("f returning nil: %v, want ErrValue", z.Err())
	}
	if z := Checkpoint(func(xs ...*Tensor) *Tensor { return xs[0] }, (*Tensor)(nil)); z.Err() == nil {
		t.Errorf("a nil argument was accepted")
	}

	v := FromSlice(CPU, []float64{1, 2}, 2).RequireGrad()
	h := v.MulScalar(2)
	y = Checkpoint(func(xs ...*Tensor) *Tensor { return xs[0].Exp() }, h)
	h.Release()
	if err := y.Sum().Backward(); !errors.Is(err, ErrReleased) {
		t.Errorf("an input released before backward: %v, want ErrReleased", err)
	}

	calls := 0
	u := FromSlice(CPU, []float64{1, 2}, 2).RequireGrad()
	y = Checkpoint(func(xs ...*Tensor) *Tensor {
		calls++
		if calls > 1 {
			return xs[0].Sum()
		}
		return xs[0].Exp()
	}, u)
	if err := y.Sum().Backward(); !errors.Is(err, ErrGrad) {
		t.Errorf("a recomputation of another shape: %v, want ErrGrad", err)
	}
}

// A checkpoint keeps none of its function's intermediate results between
// forward and backward: on wgpu:0, whose pool counts what live tensors
// hold once the garbage collector has run, a chain of eight tanh holds
// eight blocks plainly and one (its result) through Checkpoint.
func TestCheckpointKeepsNoActivations(t *testing.T) {
	dev := WGPU(0)
	for _, info := range DeviceStatus() {
		if info.Device == dev && !info.Available {
			testenv.SkipDevice(t, dev.String(), "%s is unavailable: %s", dev, info.Detail)
		}
	}
	const n = 1 << 16
	live := func() int64 { return liveBytes(t, dev) }
	chain := func(xs ...*Tensor) *Tensor {
		h := xs[0]
		for range 8 {
			h = h.Tanh()
		}
		return h
	}
	x := RandN(dev, Float32, n).RequireGrad()
	for _, checkpoint := range []bool{false, true} {
		base := live()
		var y *Tensor
		if checkpoint {
			y = Checkpoint(chain, x)
		} else {
			y = chain(x)
		}
		held := (live() - base) / (4 * n)
		if err := y.Sum().Backward(); err != nil {
			t.Fatal(err)
		}
		x.ZeroGrad()
		want := int64(8)
		if checkpoint {
			want = 1
		}
		if held != want {
			t.Errorf("checkpoint %v: the forward pass holds %d blocks of the input's size, want %d", checkpoint, held, want)
		}
	}
}

// liveBytes is what dev's live tensors hold once the garbage collector has
// found the dropped ones (MemoryStats' Allocated after alloc.Collect).
func liveBytes(t *testing.T, dev Device) int64 {
	t.Helper()
	alloc.Collect()
	s, err := MemoryStats(dev)
	if err != nil {
		t.Fatal(err)
	}
	return s.Allocated
}

// TestCheckpointUnderAutocast: the recomputation in backward runs under
// the Autocast dtype of the first run, as torch's checkpoint restores the
// autocast state, so a checkpointed block under Autocast differentiates
// (it failed with "the recomputation gave float32") and gives the plain
// block's gradients; a block checkpointed outside Autocast recomputes
// outside it even when Backward is called inside one.
func TestCheckpointUnderAutocast(t *testing.T) {
	grads := func(t *testing.T, checkpoint, forwardCast, backwardCast bool) [][]float32 {
		t.Helper()
		Seed(12)
		x := RandN(CPU, Float32, 4, 8)
		w1 := RandN(CPU, Float32, 8, 16).RequireGrad()
		b1 := RandN(CPU, Float32, 16).RequireGrad()
		w2 := RandN(CPU, Float32, 16, 8).RequireGrad()
		f := mlpBlock(false)
		var y *Tensor
		forward := func() {
			if checkpoint {
				y = Checkpoint(f, x, w1, b1, w2)
			} else {
				y = f(x, w1, b1, w2)
			}
		}
		if forwardCast {
			if err := Autocast(Float16, forward); err != nil {
				t.Fatal(err)
			}
		} else {
			forward()
		}
		loss := y.Cast(Float32).Square().Sum()
		var err error
		backward := func() { err = loss.Backward() }
		if backwardCast {
			if e := Autocast(BFloat16, backward); e != nil {
				t.Fatal(e)
			}
		} else {
			backward()
		}
		if err != nil {
			t.Fatalf("backward (checkpoint %v): %v", checkpoint, err)
		}
		var out [][]float32
		for _, p := range []*Tensor{w1, b1, w2} {
			g, err := p.Grad().Float32s()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, g)
		}
		return out
	}
	for _, c := range []struct {
		name                   string
		forwardCast, backwCast bool
	}{{"forward under autocast", true, false}, {"backward under autocast", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			want := grads(t, false, c.forwardCast, false)
			got := grads(t, true, c.forwardCast, c.backwCast)
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("gradient %d through Checkpoint = %v, want %v", i, got[i][:3], want[i][:3])
				}
			}
		})
	}
}

// TestCheckpointReplayConcurrent: checkpointed dropout blocks recomputed
// in many goroutines at once, while others draw from the random stream,
// each replay their own masks. f sums eight dropouts of x = 1, so its
// output is also its gradient. The recomputation put the process's stream
// back where its first run drew, so concurrent draws shifted and took its
// numbers, and gradients came from masks the forward pass never drew.
func TestCheckpointReplayConcurrent(t *testing.T) {
	const workers, n = 8, 1 << 12
	f := func(xs ...*Tensor) *Tensor {
		h := xs[0].Dropout(0.5, true)
		for range 7 {
			h = h.Add(xs[0].Dropout(0.5, true))
		}
		return h
	}
	Seed(21)
	xs := make([]*Tensor, workers)
	want := make([][]float32, workers)
	losses := make([]*Tensor, workers)
	for i := range xs {
		xs[i] = Ones(CPU, Float32, n).RequireGrad()
		y := Checkpoint(f, xs[i])
		var err error
		if want[i], err = y.Float32s(); err != nil {
			t.Fatal(err)
		}
		losses[i] = y.Sum()
	}
	stopDraws := drawElsewhere(2) // other goroutines' draws during the recomputations
	var passes sync.WaitGroup
	errs := make([]error, workers)
	for i := range losses {
		passes.Go(func() { errs[i] = losses[i].Backward() })
	}
	passes.Wait()
	stopDraws()
	for i := range xs {
		if errs[i] != nil {
			t.Fatalf("worker %d: %v", i, errs[i])
		}
		got, err := xs[i].Grad().Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[i]) {
			t.Errorf("worker %d: the gradient is not that of the masks the forward pass drew", i)
		}
	}
}

// TestCheckpointForwardConcurrent: checkpointed dropout blocks whose
// forward passes run in many goroutines at once, while others draw from
// the random stream, recompute the masks their forward passes drew. f sums
// dropouts of x = 1 (one of them through a checkpoint nested in f), so its
// output is also its gradient. The checkpoint kept only where the stream
// was when its forward began, and the recomputation drew on from there:
// a draw of another goroutine's in between (after the checkpoint began,
// before its dropout drew) went into the recomputation's masks.
func TestCheckpointForwardConcurrent(t *testing.T) {
	const workers, n = 6, 1 << 10
	inner := func(xs ...*Tensor) *Tensor { return xs[0].Dropout(0.5, true).Add(xs[0].Dropout(0.5, true)) }
	f := func(xs ...*Tensor) *Tensor {
		h := xs[0].Dropout(0.5, true)
		for range 3 {
			h = h.Add(xs[0].Dropout(0.5, true))
		}
		return h.Add(Checkpoint(inner, xs[0]))
	}
	Seed(23)
	stopDraws := drawElsewhere(2) // other goroutines' draws during the forward passes and recomputations
	var passes sync.WaitGroup
	xs := make([]*Tensor, workers)
	want := make([][]float32, workers)
	errs := make([]error, workers)
	for i := range xs {
		passes.Go(func() {
			for range 3 {
				xs[i] = Ones(CPU, Float32, n).RequireGrad()
				y := Checkpoint(f, xs[i])
				if want[i], errs[i] = y.Float32s(); errs[i] != nil {
					return
				}
				if errs[i] = y.Sum().Backward(); errs[i] != nil {
					return
				}
				got, err := xs[i].Grad().Float32s()
				if err != nil {
					errs[i] = err
					return
				}
				if !slices.Equal(got, want[i]) {
					errs[i] = errors.New("the gradient is not that of the masks the forward pass drew")
					return
				}
			}
		})
	}
	passes.Wait()
	stopDraws()
	for i, err := range errs {
		if err != nil {
			t.Errorf("worker %d: %v", i, err)
		}
	}
}

// drawElsewhere starts n goroutines that draw dropout masks from the
// random stream until the function it returns is called, which waits for
// them.
func drawElsewhere(n int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					Ones(CPU, Float32, 64).Dropout(0.5, true).Release()
				}
			}
		})
	}
	return func() { close(done); wg.Wait() }
}

// TestCheckpointStepLeavesNothing: a steady training step through a
// checkpoint, with the collector off, holds nothing after the caller has
// released the result: f's own handle on its result went to the
// collector and kept the storage that the checkpoint's view shares, so
// every step took a new block (also under NoGrad, as an eval pass).
func TestCheckpointStepLeavesNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	Seed(13)
	x := RandN(CPU, Float32, 64, 128) // 32 KiB results, which the cpu's figures count
	w := RandN(CPU, Float32, 128, 128).RequireGrad()
	f := func(xs ...*Tensor) *Tensor { return xs[0].MatMul(xs[1]) }
	for _, grad := range []bool{true, false} {
		step := func() {
			var y, loss *Tensor
			run := func() { y = Checkpoint(f, x, w); loss = y.Sum() }
			if grad {
				run()
				if err := loss.Backward(); err != nil {
					t.Fatal(err)
				}
			} else {
				NoGrad(run)
			}
			y.Release()
			loss.Release()
			w.ZeroGrad()
		}
		step()
		step()
		before := cpuAllocated(t)
		step()
		step()
		if held := cpuAllocated(t) - before; held != 0 {
			t.Errorf("gradients %v: two steps held %d bytes after them", grad, held)
		}
	}
}
