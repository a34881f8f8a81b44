package dispatch

import (
	"runtime"
	"strconv"
	"sync/atomic"
)

// Recorder is the hook through which autodiff records a tape entry. Call
// invokes it after an op succeeds and only when some input requires a
// gradient, so ops that no gradient flows through pay for one bool test per
// argument.
type Recorder func(op *Op, in []*Tensor, out *Tensor, attrs any) error

var recorder atomic.Pointer[Recorder]

// SetRecorder installs the tape hook (autodiff does, in its init).
func SetRecorder(r Recorder) { recorder.Store(&r) }

// Call runs op on its arguments: validates each (nil, released, device),
// lets the schema check dtypes, shapes and attributes, launches the kernel of
// the arguments' device, and records a tape entry when gradients are wanted.
// The op runs on the device of its first argument; an argument elsewhere is
// an ErrDevice error, never a silent copy.
func Call(op *Op, attrs any, in ...*Tensor) (*Tensor, error) {
	if err := CheckArgs(op, in); err != nil {
		return nil, located(err, op.Name)
	}
	var (
		out *Tensor
		err error
	)
	switch {
	case op.View != nil:
		out, err = op.View(in, attrs)
	case op.Compose != nil:
		out, err = op.Compose(in, attrs)
		if err != nil {
			return nil, relabel(err, op.Name)
		}
		return out, nil // the ops it was built from were recorded themselves
	default:
		out, err = launch(op, in, attrs)
	}
	if err != nil {
		return nil, located(err, op.Name)
	}
	if r := recorder.Load(); r != nil && anyRequiresGrad(in) {
		if err := (*r)(op, in, out, attrs); err != nil {
			return nil, located(err, op.Name)
		}
	}
	return out, nil
}

// CheckArgs is the validation that every op gets before it runs.
func CheckArgs(op *Op, in []*Tensor) error {
	if len(in) == 0 {
		return &Error{Kind: ErrValue, Detail: "needs at least one tensor"}
	}
	if !op.Variadic && len(in) != len(op.Args) {
		return &Error{Kind: ErrValue, Detail: "takes " + itoa(len(op.Args)) + " tensors, got " + itoa(len(in))}
	}
	dev := in[0].deviceOrZero()
	for i, t := range in {
		switch {
		case t == nil:
			return &Error{Kind: ErrValue, Arg: op.argName(i), Detail: "is nil", Fix: "pass a tensor made by a lathe constructor"}
		case t.Released():
			return &Error{Kind: ErrReleased, Arg: op.argName(i), Detail: "was released",
				Fix: "do not use a tensor after Release; keep it, or take a view before releasing"}
		case t.Device != dev:
			name := op.argName(i)
			return &Error{Kind: ErrDevice, Arg: name, Expected: dev.String(), Found: t.Device.String(),
				Detail: "is on " + t.Device.String() + " but the op runs on " + dev.String(),
				Fix:    "move it with " + name + ".To(" + dev.GoString() + ")"}
		}
	}
	return nil
}

func (t *Tensor) deviceOrZero() Device {
	if t == nil {
		return Device{}
	}
	return t.Device
}

// launch allocates the output that Infer describes and runs the kernel.
func launch(op *Op, in []*Tensor, attrs any) (*Tensor, error) {
	dt, shape, err := op.Infer(in, attrs)
	if err != nil {
		return nil, err
	}
	dev := in[0].Device
	k := op.kernels[dev.Kind]
	if k == nil {
		return nil, &Error{Kind: ErrUnsupported, Detail: "has no kernel on " + dev.String(),
			Fix: "move the arguments to a device that has it, e.g. .To(lathe.CPU)"}
	}
	out, err := Empty(dev, dt, shape)
	if err != nil {
		return nil, err
	}
	err = k(out, in, attrs)
	runtime.KeepAlive(in) // no input's cleanup may free its buffer while the kernel reads it
	if err != nil {
		out.Release()
		return nil, err
	}
	return out, nil
}

func anyRequiresGrad(in []*Tensor) bool {
	for _, t := range in {
		if t.RequiresGrad {
			return true
		}
	}
	return false
}

// relabel names the composite op in an error that one of its parts raised,
// so the user reads the op they called, with the part in the detail.
func relabel(err error, op string) error {
	e := AsError(err, op, ErrValue)
	if e.Op != op {
		c := *e
		c.Detail = "in " + e.Op + ": " + e.Detail
		c.Op = op
		e = &c
	}
	if e.Site == "" {
		e.Site = CallSite()
	}
	return e
}

func itoa(n int) string { return strconv.Itoa(n) }
