package nn

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// holder is a module of another package's kind: it embeds Base and
// registers its children.
type holder struct{ Base }

func (h *holder) Forward(x *lathe.Tensor) *lathe.Tensor { return x }

// TestModulesThatHoldThemselves: a Seq in its own Modules (directly or
// through another Seq or a module that embeds Base), or a parent registered
// under its child, is an ErrValue from Err, the optimizers, To and Forward,
// and Train leaves it alone; each recursed until the stack ran out, which
// ended the process. A child shared by two parents is no cycle.
func TestModulesThatHoldThemselves(t *testing.T) {
	self := Sequential(NewLinear(2, 2))
	self.Modules = append(self.Modules, self)

	inner := Sequential(NewLinear(2, 2))
	outer := Sequential(inner)
	inner.Modules = append(inner.Modules, outer)

	h := &holder{}
	loop := Sequential(NewLinear(2, 2))
	h.RegisterModule("loop", loop)
	loop.Modules = append(loop.Modules, h)

	registered := &holder{}
	registered.RegisterModule("self", registered)

	parent, child := &holder{}, &holder{}
	child.RegisterModule("l", NewLinear(2, 2))
	parent.RegisterModule("child", child)
	child.RegisterModule("parent", parent)

	x := lathe.Ones(lathe.CPU, lathe.Float32, 1, 2)
	for _, c := range []struct {
		name string
		m    Module
	}{{"seq in itself", self}, {"seq in a seq in it", outer}, {"seq in a module in it", h},
		{"registered under itself", registered}, {"parent registered under its child", child}} {
		t.Run(c.name, func(t *testing.T) {
			c.m.Train(false) // must return
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), "inside itself") {
					t.Errorf("%s: %v, want an ErrValue saying the module holds itself", what, err)
				}
			}
			check("Err", Err(c.m))
			_, err := NewSGD(c.m.Parameters(), 0.1)
			check("NewSGD", err)
			check("To", c.m.To(lathe.CPU))
			if _, ok := c.m.(*Seq); ok {
				check("Forward", c.m.Forward(x).Err())
			}
			for _, p := range Buffers(c.m) {
				if p.T.Err() != nil {
					check("Buffers", p.T.Err())
				}
			}
		})
	}
	// The parent's registration under its child failed; the child itself
	// is whole, and the parent with it.
	if err := Err(parent); err == nil || !strings.Contains(err.Error(), "inside itself") {
		t.Errorf("parent whose child holds it: %v", err)
	}

	shared := NewLinear(2, 2)
	tied := Sequential(shared, Sequential(shared))
	if err := Err(tied); err != nil {
		t.Errorf("a shared child: %v", err)
	}
	if y := tied.Forward(x); y.Err() != nil {
		t.Errorf("a shared child's forward: %v", y.Err())
	}
}

// TestLayerCountsPastBuilding: layer counts and sizes that cannot be built
// are ErrValue errors from the constructor: NumLayers(1<<62) panicked in
// make, 1<<40 ran out of memory (fatal), and a hidden size of 1<<62
// wrapped the size check to a weight of [0, 4].
func TestLayerCountsPastBuilding(t *testing.T) {
	encoder := func() *TransformerEncoderLayer { return NewTransformerEncoderLayer(4, 2) }
	for name, m := range map[string]Module{
		"lstm 2^62 layers":    NewLSTM(4, 3, NumLayers(1<<62)),
		"gru 2^40 layers":     NewGRU(4, 3, NumLayers(1<<40)),
		"rnn 65537 layers":    NewRNN(4, 3, NumLayers(maxLayers+1)),
		"lstm hidden 2^62":    NewLSTM(4, 1<<62),
		"lstm cell 2^62":      NewLSTMCell(4, 1<<62),
		"encoder 2^62 layers": NewTransformerEncoder(encoder, 1<<62, nil),
		"transformer 2^62":    NewTransformer(4, 2, NumEncoderLayers(1<<62)),
	} {
		if err := Err(m); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("%s: %v, want an ErrValue", name, err)
		}
	}
	// A stack stops at its first failed layer, with that layer's error
	// and its kind.
	calls := 0
	failing := func() *TransformerEncoderLayer {
		calls++
		return NewTransformerEncoderLayer(4, 3) // 4 is not a multiple of 3
	}
	err := Err(NewTransformerEncoder(failing, 1000, nil))
	if !errors.Is(err, lathe.ErrShape) || !strings.Contains(err.Error(), "layer 0 failed: lathe: transformer_encoder_layer: argument \"nhead\"") || calls != 1 {
		t.Errorf("a stack of failing layers: %v after %d calls, want layer 0's error after one", err, calls)
	}
}

// caller is a module of another package's kind whose Forward runs a child.
type caller struct {
	Base
	child *Seq
}

func (c *caller) Forward(x *lathe.Tensor) *lathe.Tensor { return c.child.Forward(x) }

// TestCyclesThroughForwarders: a Seq inside itself through a Checkpoint,
// or through a module whose Forward runs the Seq, is an ErrValue from Err
// and Forward, and Train returns; each ended the process (stack overflow).
func TestCyclesThroughForwarders(t *testing.T) {
	x := lathe.Ones(lathe.CPU, lathe.Float32, 1, 2)
	viaCheckpoint := Sequential(NewLinear(2, 2))
	viaCheckpoint.Modules = append(viaCheckpoint.Modules, Checkpoint(viaCheckpoint))

	inner := Sequential(NewLinear(2, 2))
	c := &caller{child: inner}
	c.RegisterModule("child", inner)
	inner.Modules = append(inner.Modules, c)

	for name, m := range map[string]Module{"checkpoint": viaCheckpoint, "forwarder": inner} {
		m.Train(false)
		for what, err := range map[string]error{"Err": Err(m), "Forward": m.Forward(x).Err()} {
			if !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), "inside itself") {
				t.Errorf("%s: %s: %v, want an ErrValue saying the module holds itself", name, what, err)
			}
		}
	}
}
