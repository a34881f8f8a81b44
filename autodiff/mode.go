package autodiff

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/goid"
	"github.com/lathe-ml/lathe/internal/half"
)

// Gradient mode is per goroutine, as PyTorch's is per thread: NoGrad in one
// goroutine must not stop another from recording. Go has no goroutine-local
// storage, so the goroutines inside NoGrad are kept in a set by id
// (internal/goid), and the set is consulted only while it is non-empty and
// an op wants a gradient: the common path pays one atomic load.
var (
	noGradActive atomic.Int64
	noGradMu     sync.Mutex
	noGradDepth  = map[uint64]int{}
)

// NoGrad runs f with recording off for the calling goroutine (goroutines
// that f starts record as usual).
func NoGrad(f func()) {
	id := goid.Current()
	noGradMu.Lock()
	noGradDepth[id]++
	noGradMu.Unlock()
	noGradActive.Add(1)
	defer func() {
		noGradActive.Add(-1)
		noGradMu.Lock()
		if noGradDepth[id]--; noGradDepth[id] == 0 {
			delete(noGradDepth, id)
		}
		noGradMu.Unlock()
	}()
	f()
}

// EnableGrad runs f with recording on for the calling goroutine, also
// inside NoGrad (torch.enable_grad): a checkpoint's recomputation records
// inside a backward pass that does not.
func EnableGrad(f func()) {
	id := goid.Current()
	noGradMu.Lock()
	depth := noGradDepth[id]
	delete(noGradDepth, id)
	noGradMu.Unlock()
	noGradActive.Add(-int64(depth))
	defer func() {
		noGradActive.Add(int64(depth))
		noGradMu.Lock()
		if depth > 0 {
			noGradDepth[id] = depth
		}
		noGradMu.Unlock()
	}()
	f()
}

// GradEnabled reports whether ops on the calling goroutine are recorded.
func GradEnabled() bool {
	if noGradActive.Load() == 0 {
		return true
	}
	id := goid.Current()
	noGradMu.Lock()
	defer noGradMu.Unlock()
	return noGradDepth[id] == 0
}

var anomaly atomic.Bool

// DetectAnomaly switches anomaly mode: while on, the first recorded op whose
// forward or backward gives NaN or Inf fails with an error naming the op
// and where its forward was called. It reads every result back, so it is
// slow; use it to find a bug, not in training.
func DetectAnomaly(on bool) { anomaly.Store(on) }

// checkFinite fails if t holds a NaN or an Inf.
func checkFinite(t *dispatch.Tensor, phase string, n *Node) error {
	if t.Numel() == 0 {
		return nil
	}
	c := t
	if !t.IsContiguous() {
		var err error
		if c, err = dispatch.Call(ops.Contiguous, dispatch.None{}, t); err != nil {
			return err
		}
	}
	data, err := dispatch.ReadHost(c)
	if err != nil {
		return err
	}
	bad := false
	switch d := data.(type) {
	case []float32:
		for _, v := range d {
			bad = bad || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0)
		}
	case []float64:
		for _, v := range d {
			bad = bad || math.IsNaN(v) || math.IsInf(v, 0)
		}
	case []half.Float16:
		for _, v := range d {
			bad = bad || v&0x7c00 == 0x7c00 // exponent all ones: Inf or NaN
		}
	case []half.BFloat16:
		for _, v := range d {
			bad = bad || v&0x7f80 == 0x7f80
		}
	}
	if !bad {
		return nil
	}
	return &dispatch.Error{Kind: dispatch.ErrGrad, Op: n.Op.Name, Site: n.site,
		Detail: "produced NaN or Inf in its " + phase + " (anomaly mode; the forward was called at " + n.site + ")",
		Fix:    "look at this op's inputs; switch anomaly mode off with lathe.DetectAnomaly(false)"}
}
