package autodiff

// gradSet holds the gradients of one backward pass. A pass that is not
// recorded (no CreateGraph) owns every tensor its rules make: nothing but
// the pass can refer to them, so it releases each one as soon as no entry
// holds it, and a training loop's gradient buffers go back to the device's
// pool every step instead of to the garbage collector. A recorded pass
// releases nothing: its tensors are inputs of the new graph.
type gradSet struct {
	of   map[*T]*T   // a tensor's gradient so far
	refs map[*T]int  // how many entries (and rules running) hold each gradient
	made map[*T]bool // gradients this pass made, which it may release
	free bool        // the pass is not recorded, so it releases what it made
	// record is set when the pass's rules are recorded (CreateGraph, on a
	// goroutine that records): the rules with a kernel for their backward
	// (attention, layer norm, batch norm) then compute it with differentiable ops. The
	// pass reads it once, where GradEnabled inside a plain pass (under
	// NoGrad) would read the goroutine's id for every rule.
	record bool
}

func newGradSet(free bool) *gradSet {
	return &gradSet{of: map[*T]*T{}, refs: map[*T]int{}, made: map[*T]bool{}, free: free}
}

// hold counts one more holder of g.
func (s *gradSet) hold(g *T) { s.refs[g]++ }

// drop counts one holder of g less and releases g when it was the last and
// the pass made g.
func (s *gradSet) drop(g *T) {
	if s.refs[g]--; s.refs[g] > 0 {
		return
	}
	delete(s.refs, g)
	if s.free && s.made[g] {
		delete(s.made, g)
		g.Release()
	}
}

// set makes g the gradient of t, dropping the one it replaces.
func (s *gradSet) set(t, g *T) {
	s.hold(g)
	if old := s.of[t]; old != nil {
		s.drop(old)
	}
	s.of[t] = g
}

// take removes t's entry and returns its gradient, still held for the
// caller, which drops it when done.
func (s *gradSet) take(t *T) *T {
	g := s.of[t]
	delete(s.of, t)
	return g
}

// releaseMade releases, in a pass that may, the tensors a rule made that it
// did not return: the intermediates of its formula.
func (s *gradSet) releaseMade(made []*T, kept []*T) {
	if !s.free {
		return
	}
next:
	for _, t := range made {
		for _, k := range kept {
			if t == k {
				s.made[t] = true
				continue next
			}
		}
		t.Release()
	}
}

// sweep releases the gradients a rule returned that no entry took (those
// of inputs that need none), which would otherwise wait for the garbage
// collector: x·w's gradient for a constant w was a whole [n, n] tensor a
// step.
func (s *gradSet) sweep(gin []*T) {
	for _, g := range gin {
		if g != nil && s.refs[g] == 0 && s.made[g] {
			delete(s.made, g)
			g.Release()
		}
	}
}

// finish drops every entry but those of keep, whose gradients now belong to
// the caller.
func (s *gradSet) finish(keep map[*T]bool) {
	for t, g := range s.of {
		if !keep[t] {
			delete(s.of, t)
			s.drop(g)
		}
	}
}
