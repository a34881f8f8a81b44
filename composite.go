package lathe

import (
	"slices"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// composite registers an op computed by f, written with lathe's own
// methods, from tensor arguments named args and attributes of type A.
// What f makes on the way to its result is released as Compose releases
// it: the 2-norm of a [1024, 1024] float32 tensor, left to the garbage
// collector, spent two thirds of its time faulting in the pages of a
// fresh [1024, 1024] square.
func composite[A any](name string, args []string, f func(in []*Tensor, a A) *Tensor) *dispatch.Op[A] {
	return compositeVariant(name, "", args, f)
}

// compositeVariant is composite for one form of a call that has several
// (dispatch.Schema's Variant): its errors name the call.
func compositeVariant[A any](name, variant string, args []string, f func(in []*Tensor, a A) *Tensor) *dispatch.Op[A] {
	return dispatch.Register(&dispatch.Op[A]{Schema: dispatch.Schema{Name: name, Variant: variant, Args: args}, Compose: composedBy(f)})
}

// composedBy is a dispatch Compose function that runs f, written with
// lathe's own methods, releasing what it makes on the way (runReleasing).
func composedBy[A any](f func(in []*Tensor, a A) *Tensor) func([]*dispatch.Tensor, A) (*dispatch.Tensor, error) {
	return func(in []*dispatch.Tensor, a A) (*dispatch.Tensor, error) {
		args := make([]*Tensor, len(in))
		for i, t := range in {
			args[i] = wrap(t)
		}
		out := runReleasing(func(args []*Tensor) *Tensor { return f(args, a) }, args)
		if out.err != nil {
			return nil, out.err
		}
		// A body with nothing to do (a roll by a multiple of the size,
		// nan_to_num of integers) may return an argument: the caller gets
		// a handle of its own (alias), which it may release without
		// releasing the argument.
		for _, t := range args {
			if t.t == out.t {
				if out = t.alias(); out.err != nil {
					return nil, out.err
				}
				break
			}
		}
		return out.t, nil
	}
}

// Compose runs f, a function of many ops such as a model's layer or a
// loss, on args, and releases what f's ops make from them on the way to
// its result as a composite op does: at once where the result is not
// recorded, else with the graph that made it (ReleaseWithGraph), once the
// backward pass that frees the graph has used them. PyTorch frees such
// intermediates by reference counting; here they would wait for Go's
// garbage collector, and every step of a training loop would take new
// memory.
//
// f gets args' tensors in handles of its own. What its ops make from them,
// or from what they made before, is released; a result made from an
// argument and a tensor f holds (a module's weight) is among them, while
// what f makes from other tensors alone (constructors, its weights) is
// left to the collector. So f must keep nothing it makes from args but
// its result: a cache of keys and values, a running statistic or a second
// result would be released under its holder. Compose returns f's result
// in a handle of the caller's own, also where f returns an argument as
// it is.
func Compose(f func(args []*Tensor) *Tensor, args ...*Tensor) *Tensor {
	if f == nil {
		return failed(errorf("compose", ErrValue, "f", "is nil", "pass the function to compose"))
	}
	var outer *intermediates // the caller's, where Compose runs in a composite's body
	for _, a := range args {
		if a != nil && a.made != nil {
			outer = a.made
		}
	}
	out := runReleasing(f, args)
	if out.err != nil {
		return failed(out.err)
	}
	for _, a := range args {
		if a != nil && a.t == out.t {
			return a.alias()
		}
	}
	r := &Tensor{t: out.t}
	if outer != nil {
		r.made = outer
		outer.add(r)
	}
	return r
}

// runReleasing runs f on handles of args' tensors that collect what f's
// ops make from them, and releases those, except f's result, once f has
// returned. An argument given twice is one handle, so that f can tell
// (attention projects a query that is also the key with one product). A
// nil result is a nil tensor's error.
func runReleasing(f func(args []*Tensor) *Tensor, args []*Tensor) *Tensor {
	made := new(intermediates)
	own := make([]*Tensor, len(args))
	in := make([]*dispatch.Tensor, 0, len(args))
	for i, a := range args {
		if j := slices.Index(args[:i], a); j >= 0 {
			own[i] = own[j]
			continue
		}
		if a == nil || a.err != nil || a.t == nil {
			own[i] = a // f's ops report it
			continue
		}
		own[i] = &Tensor{t: a.t, made: made}
		in = append(in, a.t)
	}
	out := f(own)
	if out == nil || (out.t == nil && out.err == nil) {
		out = failed(errorf("compose", ErrValue, "f", "returned a nil or zero Tensor", "return the result of lathe ops"))
	}
	made.release(in, out)
	return out
}

// intermediates are the tensors that the ops of one composite's body made
// from its arguments, or from what it made before: call adds every result
// whose arguments include one of them, so that the result carries them on.
// Tensors the body makes from nothing (a constructor's) are not among
// them and are left to the garbage collector.
type intermediates struct {
	mu     sync.Mutex
	ts     []*Tensor
	closed bool // released: a handle that escaped the body adds nothing more
}

// add records t, a result made in the body.
func (m *intermediates) add(t *Tensor) {
	m.mu.Lock()
	if !m.closed {
		m.ts = append(m.ts, t)
	}
	m.mu.Unlock()
}

// release lets go of every intermediate except the body's result and its
// arguments (an op may hand back its argument's handle unchanged), with
// the result's graph where it has one.
func (m *intermediates) release(in []*dispatch.Tensor, out *Tensor) {
	m.mu.Lock()
	ts := m.ts
	m.ts, m.closed = nil, true
	m.mu.Unlock()
	for _, t := range ts {
		if t.t == nil || t.t == out.t || slices.Contains(in, t.t) {
			continue
		}
		dispatch.ReleaseWithGraph(out.t, t.t)
	}
}
