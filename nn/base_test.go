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

// A non-persistent buffer is held and moved but not saved or loaded, in a
// Base and in a Seq, as torch's register_buffer(persistent=False); Err
// checks it.
func TestBaseNonPersistentBuffer(t *testing.T) {
	m := newFreqModel(lathe.Float32)
	s := Sequential(m)
	names := func(ps []Param) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	if got := names(state(s)); !slices.Equal(got, []string{"0.proj.weight", "0.proj.bias", "0.scale"}) {
		t.Errorf("state %v, without 0.inv_freq", got)
	}
	if got := names(NonPersistentBuffers(s)); !slices.Equal(got, []string{"0.inv_freq"}) {
		t.Errorf("non-persistent buffers %v, want [0.inv_freq]", got)
	}
	var buf bytes.Buffer
	if err := Save(&buf, s); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("inv_freq")) {
		t.Error("Save wrote the non-persistent buffer")
	}
	fresh := newFreqModel(lathe.Float32)
	if err := Load(bytes.NewReader(buf.Bytes()), Sequential(fresh)); err != nil {
		t.Fatalf("strict load without the non-persistent buffer: %v", err)
	}
	dev := lathe.WGPU(0)
	for _, info := range lathe.DeviceStatus() {
		if info.Device == dev && info.Available {
			if err := s.To(dev); err != nil {
				t.Fatal(err)
			}
			if m.invFreq.Device() != dev || m.scale.Device() != dev {
				t.Errorf("Seq.To left inv_freq on %v, scale on %v", m.invFreq.Device(), m.scale.Device())
			}
			if err := m.To(lathe.CPU); err != nil || m.invFreq.Device() != lathe.CPU {
				t.Errorf("Base.To left inv_freq on %v (%v)", m.invFreq.Device(), err)
			}
		}
	}
	bad := &freqModel{}
	bad.RegisterNonPersistentBuffer("mask", lathe.Failed(nnError("test", lathe.ErrShape, "mask", "failed", "")))
	if err := Err(Sequential(bad)); !errors.Is(err, lathe.ErrShape) {
		t.Errorf("Err of a failed non-persistent buffer: %v, want ErrShape", err)
	}
}
