package nn

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
)

type baseModel struct {
	Base
	head *Linear
	norm *BatchNorm2d
	gain *lathe.Tensor
}

func (m *baseModel) Forward(x *lathe.Tensor) *lathe.Tensor { return m.head.Forward(x).Mul(m.gain) }

func newBaseModel() *baseModel {
	m := &baseModel{head: NewLinear(2, 2), norm: NewBatchNorm2d(2)}
	m.gain = m.Register("gain", lathe.Ones(lathe.CPU, lathe.Float32, 2))
	m.RegisterModule("head", m.head)
	m.RegisterModule("norm", m.norm)
	m.RegisterBuffer("steps", lathe.Scalar(lathe.CPU, int64(0)))
	return m
}

func TestBaseNamesSaveLoad(t *testing.T) {
	lathe.Seed(1)
	a := newBaseModel()
	var names []string
	for _, p := range state(a) {
		names = append(names, p.Name)
	}
	want := []string{"gain", "head.weight", "head.bias", "norm.weight", "norm.bias",
		"norm.running_mean", "norm.running_var", "norm.num_batches_tracked", "steps"}
	if !slices.Equal(names, want) {
		t.Errorf("state %v, want %v", names, want)
	}
	if !a.gain.RequiresGrad() {
		t.Error("a registered parameter does not require a gradient")
	}
	var buf bytes.Buffer
	if err := Save(&buf, a); err != nil {
		t.Fatal(err)
	}
	lathe.Seed(2)
	b := newBaseModel()
	if err := Load(&buf, b); err != nil {
		t.Fatal(err)
	}
	x := lathe.Ones(lathe.CPU, lathe.Float32, 1, 2)
	checkClose(t, "output after load", b.Forward(x), values(t, a.Forward(x)))
	b.Train(false)
	if b.Training() || !b.norm.Eval {
		t.Error("Train(false) did not reach the module and its children")
	}
	if err := b.To(lathe.CPU); err != nil {
		t.Fatal(err)
	}
}

func TestBaseErrors(t *testing.T) {
	for name, reg := range map[string]func(*Base){
		"duplicate": func(b *Base) {
			b.Register("w", lathe.Ones(lathe.CPU, lathe.Float32, 1))
			b.RegisterBuffer("w", lathe.Ones(lathe.CPU, lathe.Float32, 1))
		},
		"empty":      func(b *Base) { b.Register("", lathe.Ones(lathe.CPU, lathe.Float32, 1)) },
		"nil_tensor": func(b *Base) { b.RegisterBuffer("b", nil) },
		"nil_child":  func(b *Base) { b.RegisterModule("c", (*Linear)(nil)) },
	} {
		t.Run(name, func(t *testing.T) {
			m := &baseModel{}
			reg(&m.Base)
			if err := Err(m); !errors.Is(err, lathe.ErrValue) {
				t.Fatalf("Err is %v, want ErrValue", err)
			}
		})
	}
}

// TestRegisterRefusesIntegers: a parameter must be a float tensor, as
// torch's "Only Tensors of floating point dtype can require gradients";
// an integer one was registered and failed only at the optimizer.
func TestRegisterRefusesIntegers(t *testing.T) {
	var b Base
	p := b.Register("count", lathe.Zeros(lathe.CPU, lathe.Int32, 2))
	if err := p.Err(); !errors.Is(err, lathe.ErrDType) {
		t.Errorf("an int32 parameter: %v, want an ErrDType", err)
	}
	if buf := b.RegisterBuffer("steps", lathe.Zeros(lathe.CPU, lathe.Int64, 1)); buf.Err() != nil {
		t.Errorf("an int64 buffer: %v", buf.Err())
	}
}
