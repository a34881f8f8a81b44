package dispatch

import (
	"runtime"
	"strconv"
	"sync/atomic"
)

// Recorder is the hook through which autodiff records a tape entry. Call
// invokes it after an op succeeds and only when some input requires a
// gradient, so ops that no gradient flows through pay for one bool test per
// argument. attrs is the op's A as the caller passed it. in is the caller's
// slice, which the caller may reuse once Call returns: a recorder that
// keeps the inputs copies it.
type Recorder func(op *Schema, in []*Tensor, out *Tensor, attrs any) error

var recorder atomic.Pointer[Recorder]

// SetRecorder installs the tape hook (autodiff does, in its init); nil
// removes it.
func SetRecorder(r Recorder) {
	if r == nil {
		recorder.Store(nil)
		return
	}
	recorder.Store(&r)
}

// Call runs op on its arguments: validates each (nil, released, device),
// holds each one's storage for the op's length (so that a Release on
// another goroutine cannot hand a buffer on while the op reads it), lets
// the schema check dtypes, shapes and attributes, launches the kernel of
// the arguments' device, and records a tape entry when gradients are wanted.
// The op runs on the device of its first argument; an argument elsewhere is
// an ErrDevice error, never a silent copy.
func Call[A any](op *Op[A], a A, in ...*Tensor) (*Tensor, error) {
	if err := CheckArgs(&op.Schema, in); err != nil {
		return nil, located(err, op.Name)
	}
	for i, t := range in {
		if !t.Hold() {
			letGo(in[:i])
			return nil, located(releasedError(op.ArgName(i)), op.Name)
		}
	}
	for _, t := range in {
		// A device's check that failed on values this argument was made
		// from: it is garbage, and so would the result be.
		if e := t.Storage.failedCheck(); e != nil {
			letGo(in)
			return nil, e
		}
	}
	out, err := run(op, a, in)
	letGo(in)
	return out, err
}

// letGo ends Call's holds on in.
func letGo(in []*Tensor) {
	for _, t := range in {
		t.LetGo()
	}
}

// run is Call on arguments that it has checked and holds.
func run[A any](op *Op[A], a A, in []*Tensor) (*Tensor, error) {
	var (
		out     *Tensor
		err     error
		checked []*Pending
	)
	switch op.runs {
	case byView:
		out, err = op.View(in, a)
	case byComposing:
		if op.Checks != nil {
			if checked, err = runChecks(op.Name, op.Checks(in, a), in); err != nil {
				return nil, located(err, op.Name)
			}
		}
		out, err = op.Compose(in, a)
		if err != nil {
			withdraw(checked)
			return nil, relabel(err, op.Name)
		}
		carryChecks(out, nil, checked) // its ops carried their inputs'
		return out, nil                // the ops it was built from were recorded themselves
	default:
		out, checked, err = launch(op, in, a)
	}
	if err != nil {
		return nil, located(err, op.Name)
	}
	carryChecks(out, in, checked)
	if out.Storage.openChecks() > maxOpenChecks {
		if err := settledChecks(out); err != nil {
			out.Release()
			return nil, err
		}
	}
	if r := recorder.Load(); r != nil && anyRequiresGrad(in) {
		if err := (*r)(&op.Schema, in, out, a); err != nil {
			return nil, located(err, op.Name)
		}
	}
	return out, nil
}

// CheckArgs is the validation that every op gets before it runs.
func CheckArgs(op *Schema, in []*Tensor) error {
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
			return &Error{Kind: ErrValue, Arg: op.ArgName(i), Detail: "is nil", Fix: "pass a tensor made by a lathe constructor"}
		case t.Released():
			return releasedError(op.ArgName(i))
		case t.Device != dev:
			name := op.ArgName(i)
			return &Error{Kind: ErrDevice, Arg: name, Expected: dev.String(), Found: t.Device.String(),
				Detail: "is on " + t.Device.String() + " but the op runs on " + dev.String(),
				Fix:    "move it with " + name + ".To(" + dev.GoString() + ")"}
		}
	}
	return nil
}

// releasedError is the error of an argument that was released.
func releasedError(arg string) *Error {
	return &Error{Kind: ErrReleased, Arg: arg, Detail: "was released",
		Fix: "do not use a tensor after Release; keep it, or take a view before releasing"}
}

func (t *Tensor) deviceOrZero() Device {
	if t == nil {
		return Device{}
	}
	return t.Device
}

// launch allocates the output that Infer describes and runs the kernel of
// the device and dtype, or says that there is none.
func launch[A any](op *Op[A], in []*Tensor, a A) (*Tensor, []*Pending, error) {
	dt, shape, err := op.Infer(in, a)
	if err != nil {
		return nil, nil, err
	}
	// Every size an Infer gives is counted before a check or an allocation
	// uses it, so that no product of sizes wraps unseen.
	n, ok := CheckedNumel(shape)
	if !ok {
		return nil, nil, ShapeError("", shape)
	}
	dev := in[0].Device
	k := op.kernels[dev.Kind]
	if k == nil || !op.Schema.kernels[dev.Kind].Has(in[0].DType) {
		return nil, nil, unsupported(dev, op.Name, in[0].DType, k == nil)
	}
	// The output first: an op whose result no device can hold fails at
	// once, before a value check walks its (maybe expanded, vast) indices.
	out, err := empty(dev, dt, shape, n)
	if err != nil {
		return nil, nil, err
	}
	var checked []*Pending
	if op.Checks != nil {
		if checked, err = runChecks(op.Name, op.Checks(in, a), in); err != nil {
			out.Release()
			return nil, nil, err
		}
	}
	err = k(out, in, a)
	runtime.KeepAlive(in) // no input's cleanup may free its buffer while the kernel reads it
	if err != nil {
		withdraw(checked)
		out.Release()
		return nil, nil, err
	}
	return out, checked, nil
}

// unsupported is the error of a kernel that a device lacks: for the op on
// the device at all, or for the dtype. Both name op, dtype and device.
func unsupported(dev Device, op string, dt DType, noKernel bool) *Error {
	if noKernel {
		return &Error{Kind: ErrUnsupported, Op: op, Found: dt.String(), Detail: "has no " + dt.String() + " kernel on " + dev.String() + ", nor one for any dtype",
			Fix: "move the arguments to a device that has it, e.g. .To(lathe.CPU)"}
	}
	return Unsupported(dev, op, dt)
}

func anyRequiresGrad(in []*Tensor) bool {
	for _, t := range in {
		if t.RequiresGrad.Load() {
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
