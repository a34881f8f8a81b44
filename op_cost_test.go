package lathe

import (
	"runtime"
	"testing"
	"time"
)

// TestOpAllocations: an op's fixed cost is its allocations, so they are
// counted. A 1-element add whose result is released makes two: the
// result's handle, and its tensor with the storage (the buffer comes from
// the pool). Recorded for gradients it makes one more, the tape node with
// its inputs and the output's autodiff state in one block.
func TestOpAllocations(t *testing.T) {
	x, y := FromSlice(CPU, []float32{1}), FromSlice(CPU, []float32{2})
	w := FromSlice(CPU, []float32{1}).RequireGrad()
	for _, c := range []struct {
		name string
		a    *Tensor
		max  float64
	}{{"add", x, 2}, {"add, recorded", w, 3}} {
		n := testing.AllocsPerRun(200, func() {
			z := c.a.Add(y)
			if z.err != nil {
				t.Fatal(z.err)
			}
			z.Release()
		})
		if n > c.max {
			t.Errorf("%s: %v allocations an op, want at most %v", c.name, n, c.max)
		}
	}
}

// TestFreedGraphLetsGoOfItsInputs: once a backward pass has freed the
// graph, a tensor that only the graph held is garbage, though the output
// that the graph hung from is still in use.
func TestFreedGraphLetsGoOfItsInputs(t *testing.T) {
	w := FromSlice(CPU, []float64{0.5, 2}).RequireGrad()
	mid := w.Mul(w)
	out := mid.Exp().Sum()
	gone := make(chan struct{})
	runtime.AddCleanup(mid.t, func(c chan struct{}) { close(c) }, gone)
	mid = nil
	if err := out.Backward(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		runtime.GC()
		select {
		case <-gone:
			runtime.KeepAlive(out)
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("an intermediate tensor is still reachable 5 s after the pass freed its graph")
		}
	}
}
