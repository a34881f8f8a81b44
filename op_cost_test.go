package lathe

import (
	"runtime"
	"slices"
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
	boundAllocations(t, "add", 2, func() *Tensor { return x.Add(y) })
	boundAllocations(t, "add, recorded", 3, func() *Tensor { return w.Add(y) })
}

// TestReduceAllocations bounds what a small reduction asks of Go's
// allocator on the cpu: planning one (the kept and reduced dims, whether
// they form a run) took 34 allocations for a whole-tensor sum and 48 for a
// sum over dim 0, against an add's 2, and a sum of 12 elements took longer
// than torch's. The planning now works in arrays on the stack.
func TestReduceAllocations(t *testing.T) {
	x := Zeros(CPU, Float32, 4, 3)
	boundAllocations(t, "sum", 12, func() *Tensor { return x.Sum() })
	boundAllocations(t, "sum over dim 0", 13, func() *Tensor { return x.SumKeepDim(0) })
	boundAllocations(t, "max over dim 1", 13, func() *Tensor { return x.MaxKeepDim(1) })
}

// boundAllocations fails t where op, its result released, makes more than
// most allocations a call.
func boundAllocations(t *testing.T, name string, most float64, op func() *Tensor) {
	t.Helper()
	n := testing.AllocsPerRun(200, func() {
		z := op()
		if z.err != nil {
			t.Fatal(z.err)
		}
		z.Release()
	})
	if n > most {
		t.Errorf("%s: %v allocations a call, want at most %v", name, n, most)
	}
}

// TestReduceHighRank: reductions of a permuted tensor of rank 10, past the
// arrays that plan lower ranks on the stack, against the same values made
// contiguous.
func TestReduceHighRank(t *testing.T) {
	shape := []int{2, 1, 3, 2, 1, 2, 2, 1, 3, 2}
	x := Arange(CPU, Float64, 0, 288, 1).Reshape(shape...).Permute(9, 3, 0, 1, 8, 2, 4, 7, 6, 5)
	c := x.Contiguous()
	for _, dims := range [][]int{nil, {0}, {1, 4}, {0, 2, 5, 9}} {
		got, err := x.SumKeepDim(dims...).Float64s()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := c.SumKeepDim(dims...).Float64s()
		if !slices.Equal(got, want) {
			t.Errorf("sum over %v: %v, want %v", dims, got, want)
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
