package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/autodiff"
	"github.com/lathe-ml/lathe/dispatch"
)

// Automatic differentiation. A leaf asks for a gradient with RequireGrad;
// every op on it (outside NoGrad) is recorded; Backward on a scalar result
// accumulates d result / d leaf into each leaf's Grad.

// RequireGrad marks x as a leaf whose gradient Backward accumulates, and
// returns x. Only float tensors have gradients. On a tensor that already
// requires one it changes nothing, so goroutines that share a parameter
// may each call it, also while others run ops on it.
func (x *Tensor) RequireGrad() *Tensor {
	if err := x.check("require_grad"); err != nil {
		return failed(err)
	}
	if err := autodiff.RequireGrad(x.t); err != nil {
		return failed(located(err, "require_grad"))
	}
	return x
}

// RequiresGrad reports whether gradients flow to or through x.
func (x *Tensor) RequiresGrad() bool {
	return x.check("requires_grad") == nil && x.t.RequiresGrad.Load()
}

// IsLeaf reports whether x was made by no recorded op.
func (x *Tensor) IsLeaf() bool { return x.check("is_leaf") == nil && autodiff.IsLeaf(x.t) }

// Grad returns the gradient accumulated into leaf x by Backward, on x's
// device, or nil if there is none yet. The gradient's memory is lathe's: the
// next ZeroGrad or SetGrad on x releases it back to the device's pool (using
// the handle afterwards is an ErrReleased error), so a training loop reuses
// it every step. Clone it to keep it longer.
func (x *Tensor) Grad() *Tensor {
	if x.check("grad") != nil {
		return nil
	}
	if g := autodiff.Grad(x.t); g != nil {
		return wrap(g)
	}
	return nil
}

// ZeroGrad forgets x's accumulated gradient (the next Backward starts anew)
// and releases it, unless it is part of a graph that CreateGraph recorded.
func (x *Tensor) ZeroGrad() {
	if x.check("zero_grad") == nil {
		autodiff.ZeroGrad(x.t)
	}
}

// SetGrad replaces leaf x's accumulated gradient with g, or forgets it when
// g is nil, as assigning torch's x.grad does. g must have x's shape, dtype
// and device (a gradient that has not is ErrShape, ErrDType or ErrDevice).
// Optimizers and gradient clipping (package nn) use it. x takes g over, as
// it does the gradients Backward makes: the next ZeroGrad or SetGrad
// releases it (unless g is part of a recorded graph).
func (x *Tensor) SetGrad(g *Tensor) error {
	if err := x.check("set_grad"); err != nil {
		return err
	}
	var gt *dispatch.Tensor
	if g != nil {
		switch {
		case g.err != nil:
			return g.err
		case g.t == nil:
			return errorf("set_grad", ErrValue, "g", "is a zero Tensor", "pass a gradient made by a lathe op, or nil to forget the gradient")
		}
		gt = g.t
	}
	if err := autodiff.SetGrad(x.t, gt); err != nil {
		return located(err, "set_grad")
	}
	return nil
}

// Detach returns x's data as a tensor that is part of no graph.
func (x *Tensor) Detach() *Tensor {
	if err := x.check("detach"); err != nil {
		return failed(err)
	}
	// A view of x's layout, made where x's storage is still there:
	// another goroutine may release x after the check.
	d, err := x.t.CheckedView(x.t.Shape, x.t.Strides, x.t.Offset)
	if err != nil {
		if e := x.check("detach"); e != nil {
			return failed(e)
		}
		return failed(located(err, "detach"))
	}
	return wrap(d)
}

// OnGrad registers a hook on x that sees each gradient of x in a backward
// pass: a leaf's before it is accumulated, another tensor's (one a
// recorded op made) before it flows on to the tensors x was made from, as
// torch's register_hook. It may return a replacement (to clip it, say) of
// the gradient's shape, dtype and device, or nil to keep it. A failed
// replacement fails the backward pass with its error, and a zero Tensor
// with an ErrValue; a failed pass changes no leaf's gradient. The error,
// where nothing is registered: an ErrValue for a nil hook, x's own for a
// failed or released x, and an ErrGrad for an x that requires no
// gradient, which no backward pass reaches (torch refuses it too); call
// RequireGrad on a leaf first.
func (x *Tensor) OnGrad(hook func(g *Tensor) *Tensor) error {
	if err := x.check("on_grad"); err != nil {
		return err
	}
	if hook == nil {
		return errorf("on_grad", ErrValue, "hook", "is nil", "pass the function to call with each gradient")
	}
	registered := autodiff.OnGrad(x.t, func(g *dispatch.Tensor) (*dispatch.Tensor, error) {
		r := hook(wrap(g))
		switch {
		case r == nil:
			return nil, nil
		case r.err != nil:
			return nil, r.err
		case r.t == nil:
			return nil, errorf("backward", ErrValue, "hook result", "is a zero Tensor, not a gradient",
				"return a tensor of the gradient's shape, dtype and device, or nil to keep the gradient")
		}
		return r.t, nil
	})
	if !registered {
		return errorf("on_grad", ErrGrad, receiverArg("on_grad"), "requires no gradient, so no backward pass reaches it",
			"call RequireGrad on it first (a leaf), or register the hook on a tensor made from one")
	}
	return nil
}

// GradOption sets an option of Backward or Grad.
type GradOption func(*autodiff.Options)

// RetainGraph keeps the graph so that Backward can run through it again.
func RetainGraph() GradOption { return func(o *autodiff.Options) { o.RetainGraph = true } }

// CreateGraph records the backward pass, so the gradients it gives can be
// differentiated again (gradients of gradients). It retains the graph.
func CreateGraph() GradOption { return func(o *autodiff.Options) { o.CreateGraph = true } }

// AllowUnused makes Grad return nil for an input the result does not use.
func AllowUnused() GradOption { return func(o *autodiff.Options) { o.AllowUnused = true } }

// WithGradient gives the gradient of a result that is not a scalar. It
// must have the result's shape, dtype and device; a failed g fails the
// pass with g's error, and a nil or zero one with an ErrValue.
func WithGradient(g *Tensor) GradOption {
	return func(o *autodiff.Options) {
		switch {
		case g == nil || (g.t == nil && g.err == nil):
			o.Err = errorf("", ErrValue, "gradient", "is a nil or zero Tensor",
				"pass the result's gradient, or leave WithGradient out for a one-element result")
		case g.err != nil:
			o.Err = g.err
		default:
			o.Seed = g.t
		}
	}
}

// WhenReady calls ready(i, g) during a Backward pass as soon as leaves[i]'s
// gradient for the pass is final (no op left to run adds to it), after
// the leaf's OnGrad hooks and before the pass adds any gradient to a
// leaf's Grad: g is what the pass will add. It lets work on a gradient
// start while the rest of the pass runs, as DDP's all-reduce does (torch's
// post-accumulate-grad hooks). For a leaf that the pass gives no gradient,
// g is nil, as soon as the pass knows (at its start, for a leaf it does
// not reach). ready runs on the pass's goroutine, once for each leaf that
// requires a gradient, in no fixed order; g is the pass's, valid until
// ready returns, so keep g.Detach() to use it later. An error from ready
// fails the pass, which then changes no leaf's Grad. A leaf listed twice
// is reported once, at its first place. A nil, zero or failed leaf is an
// error of the pass; Grad ignores the option.
func WhenReady(leaves []*Tensor, ready func(i int, g *Tensor) error) GradOption {
	return func(o *autodiff.Options) {
		index := make(map[*dispatch.Tensor]int, len(leaves))
		for i, x := range leaves {
			if err := x.CheckArg("backward", "leaves["+strconv.Itoa(i)+"]"); err != nil {
				o.Err = err
				return
			}
			if _, twice := index[x.t]; !twice {
				index[x.t] = i
				o.Watch = append(o.Watch, x.t)
			}
		}
		o.Ready = func(leaf, g *dispatch.Tensor) error {
			i, ok := index[leaf]
			switch {
			case !ok || ready == nil:
				return nil
			case g == nil:
				return ready(i, nil)
			}
			return ready(i, wrap(g))
		}
	}
}

func gradOptions(opts []GradOption) autodiff.Options {
	var o autodiff.Options
	for _, f := range opts {
		if f != nil { // a nil option sets nothing, as elsewhere
			f(&o)
		}
	}
	return o
}

// ReleaseWithGraph releases ts when a backward pass frees the graph that
// made out (a Backward without RetainGraph or CreateGraph), after the pass
// has used them, or at once where out was not recorded. It is for a
// model's intermediates, which nothing holds once its forward has returned
// out: PyTorch frees them with the graph by reference counting, while here
// they would wait for Go's garbage collector, and every training step would
// take new memory, cold in the caches (examples/gpt's step: 21.3-22.4 -> 20.1-20.3 ms).
// A tensor of ts must not be used after that pass (ErrReleased); out and
// nil tensors are skipped, and a tensor may appear twice.
func ReleaseWithGraph(out *Tensor, ts ...*Tensor) {
	var o *dispatch.Tensor
	if out != nil {
		o = out.t
	}
	for _, t := range ts {
		if t != nil && t.t != nil {
			dispatch.ReleaseWithGraph(o, t.t)
		}
	}
}

// Backward computes the gradient of x (a one-element tensor, unless
// WithGradient is given) with respect to every leaf that requires one and
// adds it to that leaf's Grad. Without RetainGraph the graph is freed, and
// a second Backward through it is an ErrGrad error.
//
// A pass that fails (a hook's error, say) changes no leaf's Grad and frees
// no graph, so it can run again. Passes may run in several goroutines at
// once: those that share a leaf add to its Grad one after the other, none
// lost, as in PyTorch. Passes through one graph at once must all retain it
// (RetainGraph); one that would free a graph that another is running
// through, or run through one that another is freeing, is an ErrGrad error.
func (x *Tensor) Backward(opts ...GradOption) error {
	if err := x.check("backward"); err != nil {
		return err
	}
	if err := autodiff.Backward(x.t, gradOptions(opts)); err != nil {
		return located(err, "backward")
	}
	return nil
}

// Grad returns the gradients of y with respect to each of xs, without
// touching any leaf's accumulated Grad (torch.autograd.grad). With
// CreateGraph the results are themselves differentiable. Empty xs is an
// ErrValue that leaves the graph as it was, as torch refuses it.
func Grad(y *Tensor, xs []*Tensor, opts ...GradOption) ([]*Tensor, error) {
	if err := y.CheckArg("grad", "y"); err != nil {
		return nil, err
	}
	if len(xs) == 0 {
		// torch's "grad requires non-empty inputs": the pass would compute
		// nothing asked for, and free the graph.
		return nil, errorf("grad", ErrValue, "xs", "is empty", "pass the tensors to differentiate y with respect to")
	}
	in := make([]*dispatch.Tensor, len(xs))
	for i, x := range xs {
		if err := x.CheckArg("grad", "xs["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
		in[i] = x.t
	}
	gs, err := autodiff.GradOf(y.t, in, gradOptions(opts))
	if err != nil {
		return nil, located(err, "grad")
	}
	out := make([]*Tensor, len(gs))
	first := map[*dispatch.Tensor]int{}
	for i, g := range gs {
		if g == nil {
			continue
		}
		if j, ok := first[g]; ok {
			// x repeated in xs: a handle of its own to the same gradient,
			// so that releasing one leaves the other (a view, recorded
			// where the gradient is).
			out[i] = out[j].View(g.Shape...)
			continue
		}
		first[g] = i
		out[i] = wrap(g)
	}
	return out, nil
}

// NoGrad runs f with recording off for the calling goroutine, as
// torch.no_grad does for the calling thread.
func NoGrad(f func()) {
	if f != nil {
		autodiff.NoGrad(f)
	}
}

// DetectAnomaly switches anomaly mode: the first recorded op whose forward
// or backward gives NaN or Inf fails, naming the op and its call site.
func DetectAnomaly(on bool) { autodiff.DetectAnomaly(on) }
