package autodiff

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lathe-ml/lathe/dispatch"
)

// Node is one recorded op: what ran, on what, with which attributes. It keeps
// its inputs and output alive (the rules read them) until a backward pass
// that does not retain the graph frees it.
type Node struct {
	Op     *dispatch.Schema
	Inputs []*dispatch.Tensor
	Out    *dispatch.Tensor
	Attrs  any
	seq    uint64 // creation order: inputs always come before outputs
	site   string // the user's call site, kept in anomaly mode
	// owned are tensors handed to the node (ReleaseWith), released when a
	// pass frees it; ownedMu guards them against callers in several
	// goroutines and the freeing pass.
	ownedMu sync.Mutex
	owned   []*dispatch.Tensor
	// state says which backward passes are running through the node: how
	// many that retain the graph (0 or more), or nodeClaimed for one that
	// will free it, or nodeFreed after it did. A pass changes it (claim,
	// end) before it reads Inputs and after it is done with them, so passes
	// in several goroutines share a graph without a race: see collect.
	state atomic.Int32
	// inline holds Inputs for a node of up to three inputs (most ops'), so
	// that recording one costs no allocation for them.
	inline [3]*dispatch.Tensor
}

const (
	nodeFreed   = -1
	nodeClaimed = -2
)

// meta is what autodiff keeps on a tensor (dispatch.Tensor.Autograd). node
// and id never change once the tensor is shared; the gradient state of a
// leaf, which backward passes, optimizers and hooks in several goroutines
// may touch at once, is behind mu, as PyTorch's AccumulateGrad is behind
// a mutex per leaf.
type meta struct {
	node *Node  // the op that made the tensor; nil for a leaf
	id   uint64 // a leaf's place in the order in which passes lock leaves

	mu    sync.Mutex
	grad  *dispatch.Tensor // a leaf's accumulated gradient
	owned bool             // grad is autodiff's to release when replaced
	hooks []Hook

	// freed is set when a pass that freed the graph released the tensor
	// (ReleaseWith), so that a later pass that reaches it reports the
	// freed graph, not a release the caller never made.
	freed atomic.Bool
}

// A Hook sees a tensor's gradient (a leaf's before it is accumulated,
// another's before the op that made it passes it on) and may replace it
// by returning another tensor (nil keeps it).
type Hook func(g *dispatch.Tensor) (*dispatch.Tensor, error)

var seq atomic.Uint64

func init() {
	dispatch.SetRecorder(record)
	dispatch.SetGraphOwner(ReleaseWith)
}

// record is the dispatch hook: Call invokes it after an op whose inputs
// include one that requires a gradient.
func record(op *dispatch.Schema, in []*dispatch.Tensor, out *dispatch.Tensor, attrs any) error {
	if !out.DType.IsFloat() || !GradEnabled() {
		return nil // integer and bool results carry no gradient
	}
	r := newRecorded(op, in, out, attrs)
	n := &r.node
	if anomaly.Load() {
		n.site = dispatch.CallSite()
		if err := checkFinite(out, "forward", n); err != nil {
			return err
		}
	}
	out.RequiresGrad.Store(true)
	out.Autograd = &r.meta
	return nil
}

// recorded is an op's node and its output's meta, which every recorded op
// makes together and which live as long as the output does: one
// allocation, with the node's inputs too where there are up to three.
type recorded struct {
	node Node
	meta meta
}

// newRecorded makes the node of op on a copy of in (the caller's, as
// dispatch.Recorder says) and the meta that points to it.
func newRecorded(op *dispatch.Schema, in []*dispatch.Tensor, out *dispatch.Tensor, attrs any) *recorded {
	r := &recorded{}
	n := &r.node
	n.Op, n.Out, n.Attrs, n.seq = op, out, attrs, seq.Add(1)
	if len(in) <= len(n.inline) {
		n.Inputs = append(n.inline[:0:len(in)], in...)
	} else {
		n.Inputs = slices.Clone(in)
	}
	r.meta.node = n
	return r
}

// ReleaseWith hands t to the node that made out, to be released when a
// backward pass frees that node (one without RetainGraph or CreateGraph),
// after every rule of the pass has run. It reports false where out was not
// recorded, or its graph is already freed, or t is nil: t is then the
// caller's to release. Calls from several goroutines, and a pass freeing the node at
// the same time, are safe. It is for a tensor that
// only out's op consumed and nobody else holds, such as the product inside
// a composite Linear before its bias: PyTorch frees such a tensor with its
// graph by reference counting, and without this it waits for Go's garbage
// collector, so that every step of a training loop takes new memory.
func ReleaseWith(out, t *dispatch.Tensor) bool {
	if t == nil {
		return false
	}
	m := metaOf(out)
	if m == nil || m.node == nil {
		return false
	}
	n := m.node
	n.ownedMu.Lock()
	defer n.ownedMu.Unlock()
	if n.state.Load() == nodeFreed {
		return false
	}
	n.owned = append(n.owned, t)
	return true
}

// missing reports a tensor that is not one: nil, or a zero
// dispatch.Tensor with no storage.
func missing(t *dispatch.Tensor) bool { return t == nil || t.Storage == nil }

// missingError is the error of op's argument arg that is missing.
func missingError(op, arg string) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrValue, Op: op, Arg: arg, Detail: "is nil or has no storage",
		Fix: "pass a tensor made by a lathe constructor"}
}

func metaOf(t *dispatch.Tensor) *meta {
	if t == nil {
		return nil
	}
	m, _ := t.Autograd.(*meta)
	return m
}

// leafMu serialises marking tensors as leaves, so that goroutines sharing a
// tensor may all call RequireGrad on it: only the first writes to it.
var leafMu sync.Mutex

// RequireGrad marks t as a leaf whose gradient Backward accumulates. A
// tensor that already requires a gradient is left as it is (and not written
// to); marking is serialised and the flag that ops read is atomic, so
// goroutines may mark a tensor they share while others run ops on it.
func RequireGrad(t *dispatch.Tensor) error {
	if missing(t) {
		return missingError("require_grad", "t")
	}
	if !t.DType.IsFloat() {
		return &dispatch.Error{Kind: dispatch.ErrGrad, Op: "require_grad", Detail: "cannot take a gradient of a " + t.DType.String() + " tensor",
			Fix: "only float tensors have gradients: cast it with .Cast(lathe.Float32)"}
	}
	leafMu.Lock()
	defer leafMu.Unlock()
	if t.RequiresGrad.Load() && metaOf(t) != nil {
		return nil // a leaf already, or a recorded op's output: its gradient flows
	}
	leafMetaLocked(t)
	t.RequiresGrad.Store(true)
	return nil
}

// leafMeta returns t's meta, making a leaf's if it has none.
func leafMeta(t *dispatch.Tensor) *meta {
	if m := metaOf(t); m != nil {
		return m
	}
	leafMu.Lock()
	defer leafMu.Unlock()
	return leafMetaLocked(t)
}

func leafMetaLocked(t *dispatch.Tensor) *meta {
	m := metaOf(t)
	if m == nil {
		m = &meta{id: seq.Add(1)}
		t.Autograd = m
	}
	return m
}

// IsLeaf reports whether t was made by no recorded op (false for nil).
func IsLeaf(t *dispatch.Tensor) bool {
	if t == nil {
		return false
	}
	m := metaOf(t)
	return m == nil || m.node == nil
}

// Grad returns a leaf's accumulated gradient, or nil (for a nil t too).
func Grad(t *dispatch.Tensor) *dispatch.Tensor {
	m := metaOf(t)
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.grad
}

// ZeroGrad forgets a leaf's accumulated gradient, releasing it unless it
// is part of a recorded graph. It does nothing to a nil t.
func ZeroGrad(t *dispatch.Tensor) {
	if m := metaOf(t); m != nil {
		m.mu.Lock()
		m.setGrad(nil, false)
		m.mu.Unlock()
	}
}

// setGrad replaces the accumulated gradient, releasing the old one if it is
// autodiff's: that is how a training loop's gradient buffers go back to the
// pool. A handle from Grad is therefore valid until the next ZeroGrad,
// SetGrad or accumulation; Clone it to keep it longer. The caller holds m.mu.
func (m *meta) setGrad(g *dispatch.Tensor, owned bool) {
	if m.owned && m.grad != nil && m.grad != g {
		m.grad.Release()
	}
	m.grad, m.owned = g, owned
}

// OnGrad adds a hook that sees (and may replace, by returning another
// tensor) t's gradient: a leaf's before it is accumulated, a recorded
// op's result's before the op's rule passes it on. It reports false, and
// adds nothing, for a tensor that no backward pass reaches (one that
// requires no gradient, or nil) and for a nil hook.
func OnGrad(t *dispatch.Tensor, hook Hook) bool {
	m := metaOf(t)
	if m == nil || hook == nil {
		return false
	}
	m.mu.Lock()
	m.hooks = append(m.hooks, hook)
	m.mu.Unlock()
	return true
}

// hooksOf returns the hooks registered on m so far.
func (m *meta) hooksOf() []Hook {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hooks
}

// detach returns a view of t's data that is not part of any graph. t is
// an input of a node being differentiated, which the node holds live.
func detach(t *dispatch.Tensor) *dispatch.Tensor {
	return t.View(t.Shape, t.Strides, t.Offset)
}

// SetGrad replaces a leaf's accumulated gradient with g (nil forgets it), as
// assigning torch's x.grad does; optimizers and gradient clipping use it. g
// must be live and have t's device, dtype and shape.
func SetGrad(t, g *dispatch.Tensor) error {
	if missing(t) {
		return missingError("set_grad", "t")
	}
	if !IsLeaf(t) || !t.RequiresGrad.Load() {
		return &dispatch.Error{Kind: dispatch.ErrGrad, Op: "set_grad", Detail: "needs a leaf that requires a gradient",
			Fix: "call RequireGrad on the tensor first; only leaves keep a gradient"}
	}
	if g != nil {
		if err := matches("set_grad", "g", "the tensor", g, t); err != nil {
			return err
		}
	}
	m := leafMeta(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	// g is handed over (optimizers and clipping pass tensors they made),
	// unless it is part of a graph, which may still need it.
	m.setGrad(g, g != nil && !g.RequiresGrad.Load())
	return nil
}
