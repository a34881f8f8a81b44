package autodiff

import (
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
	freed  bool
}

// meta is what autodiff keeps on a tensor (dispatch.Tensor.Autograd).
type meta struct {
	node  *Node            // the op that made the tensor; nil for a leaf
	grad  *dispatch.Tensor // a leaf's accumulated gradient
	owned bool             // grad is autodiff's to release when replaced
	hooks []func(g *dispatch.Tensor) (*dispatch.Tensor, error)
}

var seq atomic.Uint64

func init() { dispatch.SetRecorder(record) }

// record is the dispatch hook: Call invokes it after an op whose inputs
// include one that requires a gradient.
func record(op *dispatch.Schema, in []*dispatch.Tensor, out *dispatch.Tensor, attrs any) error {
	if !out.DType.IsFloat() || !GradEnabled() {
		return nil // integer and bool results carry no gradient
	}
	n := &Node{Op: op, Inputs: in, Out: out, Attrs: attrs, seq: seq.Add(1)}
	if anomaly.Load() {
		n.site = dispatch.CallSite()
		if err := checkFinite(out, "forward", n); err != nil {
			return err
		}
	}
	out.RequiresGrad = true
	out.Autograd = &meta{node: n}
	return nil
}

func metaOf(t *dispatch.Tensor) *meta {
	m, _ := t.Autograd.(*meta)
	return m
}

// RequireGrad marks t as a leaf whose gradient Backward accumulates.
func RequireGrad(t *dispatch.Tensor) error {
	if !t.DType.IsFloat() {
		return &dispatch.Error{Kind: dispatch.ErrGrad, Op: "require_grad", Detail: "cannot take a gradient of a " + t.DType.String() + " tensor",
			Fix: "only float tensors have gradients: cast it with .Cast(lathe.Float32)"}
	}
	if m := metaOf(t); m != nil && m.node != nil {
		return nil // already the output of a recorded op: its gradient flows
	}
	t.RequiresGrad = true
	if metaOf(t) == nil {
		t.Autograd = &meta{}
	}
	return nil
}

// IsLeaf reports whether t was made by no recorded op.
func IsLeaf(t *dispatch.Tensor) bool {
	m := metaOf(t)
	return m == nil || m.node == nil
}

// Grad returns a leaf's accumulated gradient, or nil.
func Grad(t *dispatch.Tensor) *dispatch.Tensor {
	if m := metaOf(t); m != nil {
		return m.grad
	}
	return nil
}

// ZeroGrad forgets a leaf's accumulated gradient, releasing it unless it
// is part of a recorded graph.
func ZeroGrad(t *dispatch.Tensor) {
	if m := metaOf(t); m != nil {
		m.setGrad(nil, false)
	}
}

// setGrad replaces the accumulated gradient, releasing the old one if it is
// autodiff's: that is how a training loop's gradient buffers go back to the
// pool. A handle from Grad is therefore valid until the next ZeroGrad,
// SetGrad or accumulation; Clone it to keep it longer.
func (m *meta) setGrad(g *dispatch.Tensor, owned bool) {
	if m.owned && m.grad != nil && m.grad != g {
		m.grad.Release()
	}
	m.grad, m.owned = g, owned
}

// OnGrad adds a hook that sees (and may replace, by returning another
// tensor) a leaf's gradient before it is accumulated.
func OnGrad(t *dispatch.Tensor, hook func(g *dispatch.Tensor) (*dispatch.Tensor, error)) {
	if m := metaOf(t); m != nil {
		m.hooks = append(m.hooks, hook)
	}
}

// Detach returns a view of t's data that is not part of any graph.
func Detach(t *dispatch.Tensor) *dispatch.Tensor {
	return t.View(t.Shape, t.Strides, t.Offset)
}

// SetGrad replaces a leaf's accumulated gradient with g (nil forgets it), as
// assigning torch's x.grad does; optimizers and gradient clipping use it. g
// must be live and have t's device, dtype and shape.
func SetGrad(t, g *dispatch.Tensor) error {
	if !IsLeaf(t) || !t.RequiresGrad {
		return &dispatch.Error{Kind: dispatch.ErrGrad, Op: "set_grad", Detail: "needs a leaf that requires a gradient",
			Fix: "call RequireGrad on the tensor first; only leaves keep a gradient"}
	}
	if g != nil {
		if err := matches("set_grad", "g", "the tensor", g, t); err != nil {
			return err
		}
	}
	m := metaOf(t)
	if m == nil {
		m = &meta{}
		t.Autograd = m
	}
	// g is handed over (optimizers and clipping pass tensors they made),
	// unless it is part of a graph, which may still need it.
	m.setGrad(g, g != nil && !g.RequiresGrad)
	return nil
}
