package lathe

import (
	"slices"

	"github.com/lathe-ml/lathe/autodiff"
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/goid"
)

// Checkpoint returns f(xs...) without keeping f's intermediate results for
// the backward pass (activation checkpointing, torch.utils.checkpoint):
// f runs without recording, and Backward runs it again, recording, on the
// same inputs, with lathe's random stream where it was the first time
// (so a Dropout inside draws the same mask) and under the Autocast dtype
// of the first run (or none, if it ran outside Autocast), as PyTorch's
// checkpoint restores the autocast state, then differentiates that. The
// memory of f's activations falls to that of its inputs and its result,
// for the cost of a second forward pass in backward.
//
// Every tensor that f reads and that needs a gradient must be one of xs,
// the parameters of the layers that f calls included (nn.Checkpoint passes
// a module's); f should compute only from its arguments and the random
// stream. Backward fails with ErrGrad, changing no gradient, where the
// recomputation reaches a tensor that requires a gradient and is not in
// xs, or gives a result of another shape or dtype. A second derivative
// through a checkpoint (CreateGraph) is an ErrGrad, as it is through
// PyTorch's reentrant checkpoint. The first run notes where in the stream
// each of its draws began, and the recomputation draws each again from
// there, on a copy of the stream of its own, so other goroutines' draws
// (and other checkpoints' recomputations), during the first run or after,
// neither shift its numbers nor take them.
func Checkpoint(f func(xs ...*Tensor) *Tensor, xs ...*Tensor) *Tensor {
	if f == nil {
		return failed(errorf("checkpoint", ErrValue, "f", "is nil", "pass the function to checkpoint"))
	}
	in := make([]*dispatch.Tensor, len(xs))
	for i, x := range xs {
		if err := x.check("checkpoint"); err != nil {
			return failed(err)
		}
		in[i] = x.t
	}
	stream := rngState()
	// The first run's autocast dtype (InvalidDType: off), which the
	// recomputation must run under to make the same ops in the same
	// dtypes: backward runs outside Autocast, where a float16 forward
	// would come back float32.
	cast := AutocastDType()
	var y *Tensor
	draws := recordDraws(func() { NoGrad(func() { y = f(xs...) }) })
	if err := checkResult(y); err != nil {
		return failed(err)
	}
	// A fresh handle to record on: f may have returned one of xs, whose
	// own handle must keep its place in the graph.
	out, err := y.t.CheckedView(y.t.Shape, y.t.Strides, y.t.Offset)
	if err != nil {
		// One of xs, released by another goroutine since f returned it.
		return failed(located(err, "checkpoint"))
	}
	// f's own handle goes, unless it is one of xs: the view keeps the
	// storage, which a handle left to the garbage collector would hold
	// after the caller released the result.
	if !slices.ContainsFunc(xs, func(x *Tensor) bool { return x.t == y.t }) {
		y.Release()
	}
	autodiff.Checkpoint(in, out, func(in []*dispatch.Tensor) (*dispatch.Tensor, error) {
		args := make([]*Tensor, len(in))
		for i, t := range in {
			args[i] = wrap(t)
		}
		id := goid.Current()
		pushAutocast(id, cast)
		defer popAutocast(id)
		var r *Tensor
		replayDraws(stream, draws, func() { r = f(args...) })
		if err := checkResult(r); err != nil {
			return nil, err
		}
		return r.t, nil
	})
	return wrap(out)
}

// checkResult is the error of a checkpointed function's result, if any.
func checkResult(y *Tensor) error {
	switch {
	case y == nil || (y.t == nil && y.err == nil):
		return errorf("checkpoint", ErrValue, "f", "returned a nil or zero Tensor", "return the result of lathe ops")
	case y.err != nil:
		return y.err
	}
	return y.check("checkpoint")
}
