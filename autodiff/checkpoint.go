package autodiff

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
)

// checkpointOp names the nodes that Checkpoint records. It is not a
// dispatch op (nothing calls it: its forward is the caller's function),
// only the key of its rule and the name in its errors.
var checkpointOp = &dispatch.Schema{Name: "checkpoint", Args: []string{"xs"}, Variadic: true}

func init() { rules[checkpointOp] = checkpointRule }

// Recompute runs a checkpointed function again on its inputs, recording,
// and returns its result.
type Recompute func(in []*dispatch.Tensor) (*dispatch.Tensor, error)

// Checkpoint records out as computed from in by a function that ran
// without recording, so that none of its intermediate results is kept
// (activation checkpointing): the backward pass calls recompute on in and
// differentiates what it gives. out must be a handle that no op recorded
// (a fresh view of the function's result). Nothing is recorded when
// recording is off, no input requires a gradient, or out, an input or
// recompute is nil.
func Checkpoint(in []*dispatch.Tensor, out *dispatch.Tensor, recompute Recompute) {
	need := false
	for _, t := range in {
		if t == nil {
			return
		}
		need = need || t.RequiresGrad.Load()
	}
	if !need || out == nil || recompute == nil || !out.DType.IsFloat() || !GradEnabled() {
		return
	}
	r := newRecorded(checkpointOp, in, out, recompute)
	if anomaly.Load() {
		r.node.site = dispatch.CallSite()
	}
	out.RequiresGrad.Store(true)
	out.Autograd = &r.meta
}

// checkpointRule recomputes the function on the node's inputs (each leaf
// itself, so that a parameter's gradient is found as such; every other
// input detached, so that the recomputed graph ends there) and runs a
// backward pass through it from the node's output gradient. A leaf that
// the recomputation reaches and that is not an input would lose its
// gradient, so it is an error, as is a result of another shape or dtype.
func checkpointRule(b *builder, n *Node, g *T) []*T {
	if GradEnabled() {
		b.err = gradError("checkpoint", "cannot be differentiated twice: the backward pass records (CreateGraph), and a checkpoint's does not",
			"compute second derivatives without Checkpoint")
		return nil
	}
	in := make([]*T, len(n.Inputs))
	var targets, detached []*T
	defer func() {
		for _, d := range detached {
			d.Release()
		}
	}()
	for i, t := range n.Inputs {
		in[i] = t
		if t.Released() {
			b.err = &dispatch.Error{Kind: dispatch.ErrReleased, Op: "checkpoint", Arg: checkpointOp.ArgName(i),
				Detail: "was released before the backward pass that recomputes from it", Fix: "release a checkpoint's inputs after Backward"}
			return nil
		}
		if !t.RequiresGrad.Load() {
			continue
		}
		if !IsLeaf(t) {
			d := detach(t)
			detached = append(detached, d)
			if b.err = RequireGrad(d); b.err != nil {
				return nil
			}
			in[i] = d
		}
		targets = append(targets, in[i])
	}
	var y *T
	var err error
	EnableGrad(func() { y, err = n.Attrs.(Recompute)(in) })
	if err != nil {
		b.err = err
		return nil
	}
	if !slices.Contains(in, y) { // f may return an argument unchanged
		defer y.Release()
	}
	if !y.RequiresGrad.Load() || y.DType != n.Out.DType || !slices.Equal(y.Shape, n.Out.Shape) {
		b.err = gradError("checkpoint", "the recomputation gave "+y.DType.String()+dispatch.FormatShape(y.Shape)+
			" without the graph the first run had, or of another dtype or shape than its "+n.Out.DType.String()+dispatch.FormatShape(n.Out.Shape),
			"make the checkpointed function depend only on its arguments and lathe's random stream")
		return nil
	}
	p, err := run("checkpoint", y, targets, Options{Seed: g})
	if err != nil {
		b.err = err
		return nil
	}
	isTarget := map[*T]bool{}
	for _, t := range targets {
		isTarget[t] = true
	}
	for t, gt := range p.grads.of {
		if gt != nil && IsLeaf(t) && !isTarget[t] {
			p.end(false)
			p.grads.finish(nil)
			b.err = gradError("checkpoint", "the recomputation reached a tensor of shape "+dispatch.FormatShape(t.Shape)+
				" that requires a gradient but is not among the checkpoint's arguments, so its gradient would be lost",
				"pass every tensor that the function reads and that needs a gradient (its layers' parameters too) to Checkpoint")
			return nil
		}
	}
	out := make([]*T, len(in))
	for i, t := range in {
		if isTarget[t] {
			out[i] = p.grads.of[t]
		}
	}
	p.end(true)
	p.grads.finish(isTarget) // the inputs' gradients are this rule's results now
	for _, o := range out {
		if o != nil && o != g { // g itself comes back for an argument returned unchanged
			b.made = append(b.made, o)
		}
	}
	return out
}
