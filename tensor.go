package lathe

import (
	"slices"
	"sync"

	"github.com/lathe-ml/lathe/autodiff"
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Tensor is an n-dimensional array on one device. A Tensor never changes
// after it is made; ops return new tensors. A failed Tensor carries the
// error of the op that made it (or of the first failed op up its chain), and
// every op on it returns it failed again.
//
// The zero value and a nil *Tensor are failed tensors.
type Tensor struct {
	t   *dispatch.Tensor
	err error
	// made is set on a tensor inside a composite op's body: the
	// intermediates of that body, which results made from it join.
	made *intermediates
}

func wrap(t *dispatch.Tensor) *Tensor { return &Tensor{t: t} }

func failed(err error) *Tensor { return &Tensor{err: err} }

// nilTensorErr is what a method on a nil or zero Tensor reports.
func nilTensorErr(op string) *Error {
	return errorf(op, ErrValue, "", "called on a nil or zero tensor", "make tensors with a lathe constructor such as lathe.Zeros")
}

// Failed returns a failed tensor that carries err (a nil err is reported as
// a nil tensor's), so that code built on lathe, such as package nn's layers
// and losses, reports a fault it finds itself the way ops do: stickily.
func Failed(err error) *Tensor {
	if err == nil {
		return failed(nilTensorErr("failed"))
	}
	return failed(err)
}

// check returns the error that stops an op on x, its receiver, before it
// runs: x's own, or that x is nil, zero or released, naming x as the op's
// first argument (receiverArg).
func (x *Tensor) check(op string) error {
	if x != nil && x.err == nil && x.t != nil && !x.t.Released() {
		return nil // without looking the name up: ops call check on every call
	}
	return x.CheckArg(op, receiverArg(op))
}

// CheckArg returns the error that stops op from using x as its argument
// arg: x's own error, returned as it is (it is about the op that made x),
// or an error naming arg where x is nil, a zero Tensor or released. Ops
// make this check before they read x; a package built on lathe (nn is
// one) calls it for the same errors, since Err reports only x's own.
func (x *Tensor) CheckArg(op, arg string) error {
	switch {
	case x == nil:
		return errorf(op, ErrValue, arg, "is nil", "pass a tensor made by a lathe constructor")
	case x.err != nil:
		return x.err
	case x.t == nil:
		return errorf(op, ErrValue, arg, "is a zero Tensor", "make tensors with a lathe constructor such as lathe.Zeros")
	case x.t.Released():
		return errorf(op, ErrReleased, arg, "was released", "do not use a tensor after Release")
	}
	return x.t.FailedCheck() // a device's check that refused what x was made from
}

// receiverArg is the name dispatch gives the first tensor argument of the
// op called op, which a method's receiver is (for the errors that name
// it as dispatch names the others), or "x" where no registered op has
// that name (Shape, Backward, a composite made in this package).
func receiverArg(op string) string {
	if name, ok := firstArgs()[op]; ok {
		return name
	}
	return "x"
}

var firstArgs = sync.OnceValue(func() map[string]string {
	names := make(map[string]string)
	for _, s := range dispatch.Ops() {
		names[s.Name] = s.ArgName(0)
	}
	return names
})

// Err returns the error that made x fail, or nil. On a device that checks
// an op's values where they live (an index out of range, on wgpu or cuda),
// that includes a check that failed on what x was made from, once the
// device has reported it: reading x, or Synchronize, waits for that.
func (x *Tensor) Err() error {
	if x == nil || (x.t == nil && x.err == nil) {
		return nilTensorErr("err")
	}
	if x.err != nil {
		return x.err
	}
	// A device's value check that refused what x was made from, once the
	// device has reported it (a read-back or Synchronize).
	return x.t.FailedCheck()
}

// Shape returns a copy of x's sizes (nil for a failed tensor).
func (x *Tensor) Shape() []int {
	if x.check("shape") != nil {
		return nil
	}
	return append([]int(nil), x.t.Shape...)
}

// Dim returns the size of dimension d (negative counts from the end), or -1
// if there is no such dimension or x failed.
func (x *Tensor) Dim(d int) int {
	if x.check("dim") != nil {
		return -1
	}
	n, err := ops.NormDim(d, len(x.t.Shape), "dim")
	if err != nil || len(x.t.Shape) == 0 {
		return -1
	}
	return x.t.Shape[n]
}

// Rank is the number of dimensions (0 for a scalar), or -1 for a failed tensor.
func (x *Tensor) Rank() int {
	if x.check("rank") != nil {
		return -1
	}
	return len(x.t.Shape)
}

// Numel is the number of elements, or 0 for a failed tensor.
func (x *Tensor) Numel() int {
	if x.check("numel") != nil {
		return 0
	}
	return x.t.Numel()
}

// DType returns x's element type (InvalidDType for a failed tensor).
func (x *Tensor) DType() DType {
	if x.check("dtype") != nil {
		return dispatch.InvalidDType
	}
	return x.t.DType
}

// Device returns the device that holds x.
func (x *Tensor) Device() Device {
	if x.check("device") != nil {
		return Device{}
	}
	return x.t.Device
}

// IsContiguous reports whether x's elements lie in row-major order.
func (x *Tensor) IsContiguous() bool {
	return x.check("is_contiguous") == nil && x.t.IsContiguous()
}

// Release gives x's memory back to its device as soon as no view uses it.
// Using x afterwards is an ErrReleased error. Releasing is optional (memory
// is also reclaimed when x is garbage), and releasing twice is harmless.
func (x *Tensor) Release() {
	if x != nil && x.t != nil {
		x.t.Release()
	}
}

// apply runs an op with attributes a on tensors, with the sticky-error
// rule: the first failed argument's error is the result's.
func apply[A any](op *dispatch.Op[A], a A, args ...*Tensor) *Tensor {
	if autocastActive.Load() != 0 {
		out, ok := autocastCall(&op.Schema, args, func(cast []*Tensor) *Tensor { return call(op, a, cast) })
		if ok {
			return out
		}
	}
	return call(op, a, args)
}

// call is apply without autocast.
func call[A any](op *dispatch.Op[A], a A, args []*Tensor) *Tensor {
	// The result's handle and the argument list dispatch reads are one
	// allocation (the list escapes: dispatch passes it to function
	// values); the list is cleared after the call, so that the result does
	// not keep its arguments alive. Nothing keeps the list: autodiff copies
	// what it records (dispatch.Recorder).
	r := new(result)
	in := r.in[:0]
	if len(args) > len(r.in) {
		in = make([]*dispatch.Tensor, 0, len(args))
	}
	var made *intermediates
	for i, a := range args {
		switch {
		case a == nil:
			in = append(in, nil) // dispatch names the nil argument
		case a.err != nil:
			return failed(a.err)
		case a.t == nil:
			return failed(a.CheckArg(op.Name, op.ArgName(i)))
		default:
			in = append(in, a.t)
			if a.made != nil {
				made = a.made
			}
		}
	}
	out, err := dispatch.Call(op, a, in...)
	r.in = [len(r.in)]*dispatch.Tensor{}
	if err != nil {
		r.err = err
		return &r.Tensor
	}
	r.t = out
	if made != nil {
		r.made = made
		made.add(&r.Tensor)
	}
	return &r.Tensor
}

// result is a handle with room for the arguments of the op that makes it.
type result struct {
	Tensor
	in [3]*dispatch.Tensor
}

// none is the attributes of an op that takes none.
var none dispatch.None

// unary runs a unary op with its default parameters.
func unary(op *dispatch.Op[ops.Params], x *Tensor) *Tensor { return apply(op, ops.Params{}, x) }

// Cast returns x converted to dtype dt (a new handle on x's elements if it
// has that dtype: see alias).
// Float to integer truncates toward zero, and NaN or a value outside the
// integer's range gives its minimum (as PyTorch on x86 does), on every
// device; nonzero is true; true is 1.
func (x *Tensor) Cast(dt DType) *Tensor {
	if err := x.check("cast"); err != nil {
		return failed(err)
	}
	if x.t.DType == dt {
		return x.alias()
	}
	return apply(ops.Cast, ops.CastTo{DType: dt}, x)
}

// Contiguous returns x laid out in row-major order (a new handle on x's
// elements if they are: see alias).
func (x *Tensor) Contiguous() *Tensor {
	if err := x.check("contiguous"); err != nil {
		return failed(err)
	}
	if x.t.IsContiguous() {
		return x.alias()
	}
	return apply(ops.Contiguous, none, x)
}

// alias is a new handle on x's elements with a claim of its own on their
// storage, for a conversion that has nothing to do: PyTorch returns x
// itself, which in Python nothing can free from under its other names, but
// here the caller owns what an op returns and may Release it, which must
// leave x alone. On the tape it is x's identity (an expand to x's own
// shape), so gradients flow through it to x.
func (x *Tensor) alias() *Tensor {
	return apply(ops.Expand, ops.ViewShape{Shape: slices.Clone(x.t.Shape)}, x)
}

// Clone returns a copy of x with storage of its own.
func (x *Tensor) Clone() *Tensor { return apply(ops.Contiguous, none, x) }

// To returns x on device dev (a new handle on x's elements if it is there
// already: see alias). This is the one way data moves between devices. The
// copy is recorded where x requires a gradient, as torch's .to(device) is:
// the gradient flows back across it, onto x's device.
func (x *Tensor) To(dev Device) *Tensor {
	if err := x.check("to"); err != nil {
		return failed(err)
	}
	if x.t.Device == dev {
		return x.alias()
	}
	host, err := x.host("to")
	if err != nil {
		return failed(err)
	}
	t, err := dispatch.Upload(dev, host, x.t.DType, append([]int(nil), x.t.Shape...))
	if err != nil {
		return failed(located(err, "to"))
	}
	from := x.t.Device
	autodiff.Moved(x.t, t, func(g *dispatch.Tensor) (*dispatch.Tensor, error) {
		back := wrap(g).To(from)
		return back.t, back.err
	})
	return wrap(t)
}
