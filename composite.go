package lathe

import (
	"slices"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// composite registers an op computed by f, written with lathe's own
// methods, from tensor arguments named args and attributes of type A.
//
// What f makes on the way to its result is released as soon as nothing
// can use it: at once where the result is not recorded, or with the graph
// that made it (ReleaseWithGraph). Otherwise each intermediate would wait
// for Go's garbage collector, and every call would take new memory: the
// 2-norm of a [1024, 1024] float32 tensor spent two thirds of its time
// faulting in the pages of a fresh [1024, 1024] square.
func composite[A any](name string, args []string, f func(in []*Tensor, a A) *Tensor) *dispatch.Op[A] {
	return dispatch.Register(&dispatch.Op[A]{Schema: dispatch.Schema{Name: name, Args: args},
		Compose: func(in []*dispatch.Tensor, a A) (*dispatch.Tensor, error) {
			made := new(intermediates)
			args := make([]*Tensor, len(in))
			for i, t := range in {
				args[i] = &Tensor{t: t, made: made}
			}
			out := f(args, a)
			made.release(in, out)
			if out.err != nil {
				return nil, out.err
			}
			return out.t, nil
		}})
}

// intermediates are the tensors that the ops of one composite's body made
// from its arguments, or from what it made before: call adds every result
// whose arguments include one of them, so that the result carries them on.
// Tensors the body makes from nothing (a constructor's) are not among
// them and are left to the garbage collector.
type intermediates struct {
	mu sync.Mutex
	ts []*Tensor
}

// add records t, a result made in the body.
func (m *intermediates) add(t *Tensor) {
	m.mu.Lock()
	m.ts = append(m.ts, t)
	m.mu.Unlock()
}

// release lets go of every intermediate except the body's result and its
// arguments (an op may hand back its argument's handle unchanged), with
// the result's graph where it has one.
func (m *intermediates) release(in []*dispatch.Tensor, out *Tensor) {
	m.mu.Lock()
	ts := m.ts
	m.ts = nil
	m.mu.Unlock()
	for _, t := range ts {
		if t.t == nil || t.t == out.t || slices.Contains(in, t.t) {
			continue
		}
		dispatch.ReleaseWithGraph(out.t, t.t)
	}
}
