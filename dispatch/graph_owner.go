package dispatch

import "sync/atomic"

// GraphOwner is the hook through which autodiff takes a tensor to release
// with a graph: it hands t to the tape node that made out and reports
// true, or reports false where out was not recorded or its graph is
// already freed.
type GraphOwner func(out, t *Tensor) bool

var graphOwner atomic.Pointer[GraphOwner]

// SetGraphOwner installs the hook (autodiff does, in its init); nil removes
// it.
func SetGraphOwner(o GraphOwner) {
	if o == nil {
		graphOwner.Store(nil)
		return
	}
	graphOwner.Store(&o)
}

// ReleaseWithGraph releases ts when a backward pass frees the graph that
// made out, after the pass has used them, or at once where out was not
// recorded. It is for intermediates that nothing holds once out is made: a
// composite op's (the contiguous copy that a reshape views) and a model's.
// PyTorch frees them by reference counting; here they would wait for Go's
// garbage collector, and a training step would take new memory for them
// every step. Views of a released tensor keep its storage. out and nil
// tensors are skipped, and a tensor may appear twice.
func ReleaseWithGraph(out *Tensor, ts ...*Tensor) {
	o := graphOwner.Load()
	for _, t := range ts {
		if t == nil || t == out {
			continue
		}
		if out == nil || o == nil || !(*o)(out, t) {
			t.Release()
		}
	}
}
