package nn

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestNilModules: a nil module (untyped, or a nil *Linear), a nil Seq, a
// nil reader or writer is an ErrValue error naming it, never a crash.
func TestNilModules(t *testing.T) {
	var nilLinear *Linear
	var nilSeq *Seq
	var nilBuffer *bytes.Buffer
	x := lathe.Ones(lathe.CPU, lathe.Float32, 2, 2)
	good := func() Module { return NewLinear(2, 2) }
	var saved bytes.Buffer
	if err := Save(&saved, good()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  func() error
		arg  string
	}{
		{"sequential(nil).forward", func() error { return Sequential(nil).Forward(x).Err() }, "modules[0]"},
		{"sequential(linear, nil *Linear).forward", func() error { return Sequential(good(), nilLinear).Forward(x).Err() }, "modules[1]"},
		{"nil *Seq.forward", func() error { return nilSeq.Forward(x).Err() }, "s"},
		{"err(nil)", func() error { return Err(nil) }, "m"},
		{"err(nil *Linear)", func() error { return Err(nilLinear) }, "m"},
		{"err(nil *Seq)", func() error { return Err(nilSeq) }, "m"},
		{"err(sequential(nil))", func() error { return Err(Sequential(good(), nil)) }, "1"},
		{"save(w, nil)", func() error { return Save(io.Discard, nil) }, "m"},
		{"save(w, sequential(nil))", func() error { return Save(io.Discard, Sequential(nil)) }, "0"},
		{"save(nil, m)", func() error { return Save(nil, good()) }, "w"},
		{"save(nil *bytes.Buffer, m)", func() error { return Save(nilBuffer, good()) }, "w"},
		{"load(nil, m)", func() error { return Load(nil, good()) }, "r"},
		{"load(nil *bytes.Buffer, m)", func() error { return Load(nilBuffer, good()) }, "r"},
		{"load(r, nil)", func() error { return Load(bytes.NewReader(saved.Bytes()), nil) }, "m"},
		{"load(r, nil *Linear)", func() error { return Load(bytes.NewReader(saved.Bytes()), nilLinear) }, "m"},
		{"sgd(sequential(nil).parameters)", func() error { _, err := NewSGD(Sequential(nil).Parameters(), 0.1); return err }, "0"},
		{"sequential(nil).to", func() error { return Sequential(good(), nil).To(lathe.CPU) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.err()
			var e *lathe.Error
			if !errors.As(err, &e) || !errors.Is(err, lathe.ErrValue) || (c.arg != "" && e.Arg != c.arg) {
				t.Fatalf("got %v, want an ErrValue error about argument %q", err, c.arg)
			}
		})
	}
	// What needs no error tolerates nil children too.
	s := Sequential(nil, good(), nilLinear)
	s.Train(false)
	nilSeq.Train(true)
	if ps := s.Parameters(); len(ps) != 4 || ps[0].Name != "0" || ps[0].T != nil || ps[1].Name != "1.weight" || ps[3].Name != "2" {
		t.Errorf("parameters of a Seq with nil children: %v", ps)
	}
	if nilSeq.Parameters() != nil || Buffers(nilSeq) != nil || Buffers(nilLinear) != nil {
		t.Error("a nil Seq or module has parameters or buffers")
	}
}
