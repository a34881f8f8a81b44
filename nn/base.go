package nn

import (
	"slices"

	"github.com/lathe-ml/lathe"
)

// Base is the bookkeeping of a custom module. Embed it, register the
// module's parameters, buffers and child modules by name in its
// constructor, and write Forward: Parameters, Buffers, To and Train come
// from Base, with PyTorch's state-dict naming ("scale", "proj.weight") in
// registration order, so Save, Load and the optimizers work unchanged.
//
//	type Scaled struct {
//		nn.Base
//		Proj  *nn.Linear
//		Scale *lathe.Tensor
//	}
//
//	func NewScaled(in, out int) *Scaled {
//		s := &Scaled{Proj: nn.NewLinear(in, out)}
//		s.RegisterModule("proj", s.Proj)
//		s.Scale = s.Register("scale", lathe.Ones(lathe.CPU, lathe.Float32, out))
//		return s
//	}
//
// Base holds the same handles as the module's fields, so an optimizer step
// or To, which rebind a handle in place, changes both.
type Base struct {
	entries []baseEntry
	names   map[string]bool
	eval    bool
}

type baseEntry struct {
	name string
	t    *lathe.Tensor // a parameter or a buffer
	kind entryKind
	m    Module // a child; t is nil
}

// entryKind says which list a registered tensor is in.
type entryKind int

const (
	parameter entryKind = iota
	buffer
	nonPersistent // a buffer outside the state dict
)

// Register adds t as the parameter name, marked to require a gradient, and
// returns the handle to keep in the module's field. A nil t, one that is
// not a float tensor, or a name that is empty or registered before, gives a
// failed parameter that Err, Save and the optimizers report.
func (b *Base) Register(name string, t *lathe.Tensor) *lathe.Tensor {
	if t != nil && t.Err() == nil {
		if !t.DType().IsFloat() {
			// torch: "Only Tensors of floating point dtype can require
			// gradients"; an integer buffer is RegisterBuffer's.
			t = lathe.Failed(nnError("register", lathe.ErrDType, name, "is "+t.DType().String()+", and a parameter must be a float tensor",
				"register an integer tensor with RegisterBuffer"))
		} else {
			t = t.RequireGrad()
		}
	}
	return b.add(baseEntry{name: name, t: t, kind: parameter})
}

// RegisterBuffer adds t as the buffer name: state that Save, Load and To
// include but optimizers do not see (BatchNorm2d's running statistics are
// buffers). It returns t, or a failed tensor as Register does.
func (b *Base) RegisterBuffer(name string, t *lathe.Tensor) *lathe.Tensor {
	return b.add(baseEntry{name: name, t: t, kind: buffer})
}

// RegisterNonPersistentBuffer adds t as the buffer name that is not part
// of the module's state (torch's register_buffer(name, t,
// persistent=False)): To moves it and Err checks it, but Buffers, Save
// and Load leave it out, so that a state dict of a torch module that
// registers it so loads strictly. It suits values that the module
// computes from its configuration (a causal mask, a table of
// frequencies). It returns t, or a failed tensor as Register does.
func (b *Base) RegisterNonPersistentBuffer(name string, t *lathe.Tensor) *lathe.Tensor {
	return b.add(baseEntry{name: name, t: t, kind: nonPersistent})
}

// RegisterModule adds m as the child name: its parameters and buffers are
// listed under "<name>.", To moves them and Train sets its mode. A nil m,
// or a name as Register refuses, is listed as a failed parameter name.
func (b *Base) RegisterModule(name string, m Module) {
	err := b.checkName(name)
	if err == nil && isNil(m) {
		err = nilModule("register", name)
	}
	if err == nil {
		if found, cyclic := reaches(m, b); found || cyclic {
			err = cycleError("register")
			err.Arg = name
		}
	}
	if err != nil {
		b.entries = append(b.entries, baseEntry{name: name, t: lathe.Failed(err)})
		return
	}
	b.entries = append(b.entries, baseEntry{name: name, m: m})
}

func (b *Base) add(e baseEntry) *lathe.Tensor {
	err := b.checkName(e.name)
	if err == nil && e.t == nil {
		err = nnError("register", lathe.ErrValue, e.name, "is nil", "register a tensor")
	}
	if err != nil {
		e.t, e.kind = lathe.Failed(err), parameter // so that Err, Save and the optimizers see it
	}
	b.entries = append(b.entries, e)
	return e.t
}

func (b *Base) checkName(name string) *lathe.Error {
	if name == "" || b.names[name] {
		return nnError("register", lathe.ErrValue, "name", "is \""+name+"\", which is empty or registered before",
			"give each parameter, buffer and child its own name")
	}
	if b.names == nil {
		b.names = map[string]bool{}
	}
	b.names[name] = true
	return nil
}

// Parameters lists the registered parameters and the children's, in
// registration order; a child's under "<name>.".
func (b *Base) Parameters() []Param { return b.list(parameter) }

// Buffers lists the registered buffers and the children's, as Parameters
// does: those of the state dict, without the non-persistent ones.
func (b *Base) Buffers() []Param { return b.list(buffer) }

// NonPersistentBuffers lists the buffers registered with
// RegisterNonPersistentBuffer and the children's, as Parameters does.
func (b *Base) NonPersistentBuffers() []Param { return b.list(nonPersistent) }

func (b *Base) list(kind entryKind) []Param {
	if err := holdsItself("parameters", b); err != nil {
		if kind == nonPersistent {
			return nil // Parameters reports it
		}
		return cycleParams(err)
	}
	var out []Param
	for _, e := range b.entries {
		if e.m == nil {
			if e.kind == kind {
				out = append(out, Param{Name: e.name, T: e.t})
			}
			continue
		}
		var sub []Param
		switch kind {
		case parameter:
			sub = e.m.Parameters()
		case buffer:
			sub = Buffers(e.m)
		case nonPersistent:
			sub = NonPersistentBuffers(e.m)
		}
		for _, p := range sub {
			out = append(out, Param{Name: e.name + "." + p.Name, T: p.T})
		}
	}
	return out
}

// To moves every parameter and buffer, the non-persistent ones and the
// children's too, to dev; a failure leaves them all where they were.
func (b *Base) To(dev lathe.Device) error {
	return moveParams(slices.Concat(b.Parameters(), b.Buffers(), b.NonPersistentBuffers()), dev)
}

// Train sets the module's mode and every child's; a module that holds
// itself is left as it is (Err reports it).
func (b *Base) Train(on bool) {
	if holdsItself("train", b) != nil {
		return
	}
	b.eval = !on
	for _, e := range b.entries {
		if e.m != nil {
			e.m.Train(on)
		}
	}
}

// Training reports whether the module is in training mode (the default),
// for a Forward that acts differently in the two.
func (b *Base) Training() bool { return !b.eval }
