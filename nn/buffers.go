package nn

import (
	"slices"
	"strconv"
)

// Buffered is a Module with state that is not a parameter, such as
// BatchNorm2d's running statistics. Save and Load include its buffers and
// To moves them; optimizers, which take Parameters, do not see them.
type Buffered interface {
	Module
	// Buffers lists the module's buffers with their state-dict names
	// ("running_mean", "1.running_var"), in a fixed order. As with
	// Parameters, the handles are the module's own.
	Buffers() []Param
}

// Buffers lists m's buffers, or nil when it has none.
func Buffers(m Module) []Param {
	if b, ok := m.(Buffered); ok && !isNil(b) {
		return b.Buffers()
	}
	return nil
}

// NonPersistent is a Module with buffers outside its state dict (torch's
// register_buffer(persistent=False)): To moves them and Err checks them,
// but Buffers, Save and Load leave them out, and optimizers do not see
// them. Base.RegisterNonPersistentBuffer makes them.
type NonPersistent interface {
	Module
	// NonPersistentBuffers lists the module's non-persistent buffers,
	// named as Buffers names buffers.
	NonPersistentBuffers() []Param
}

// NonPersistentBuffers lists m's non-persistent buffers, or nil when it
// has none.
func NonPersistentBuffers(m Module) []Param {
	if b, ok := m.(NonPersistent); ok && !isNil(b) {
		return b.NonPersistentBuffers()
	}
	return nil
}

// state is m's parameters, then its buffers: what Save writes and Load
// reads.
func state(m Module) []Param { return append(slices.Clone(m.Parameters()), Buffers(m)...) }

// held is state and the non-persistent buffers: what To moves and Err
// checks.
func held(m Module) []Param { return append(state(m), NonPersistentBuffers(m)...) }

// Buffers lists each child's buffers under "<index>.<name>".
func (s *Seq) Buffers() []Param {
	if s == nil {
		return nil
	}
	if err := holdsItself("buffers", s); err != nil {
		return cycleParams(err)
	}
	var out []Param
	for i, m := range s.Modules {
		for _, p := range Buffers(m) {
			out = append(out, Param{Name: strconv.Itoa(i) + "." + p.Name, T: p.T})
		}
	}
	return out
}

// NonPersistentBuffers lists each child's non-persistent buffers under
// "<index>.<name>".
func (s *Seq) NonPersistentBuffers() []Param {
	if s == nil || holdsItself("buffers", s) != nil {
		return nil // Parameters reports a Seq that holds itself
	}
	var out []Param
	for i, m := range s.Modules {
		for _, p := range NonPersistentBuffers(m) {
			out = append(out, Param{Name: strconv.Itoa(i) + "." + p.Name, T: p.T})
		}
	}
	return out
}
