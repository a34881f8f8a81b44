package lathe

import (
	"github.com/lathe-ml/lathe/dispatch"
)

// WithData calls f with x's elements in row-major order and returns f's
// error. On the cpu, for a contiguous x, data is x's own memory, with no
// copy made (as PyTorch's numpy() shares a cpu tensor's memory); for a
// strided view, or on another device, it is a copy, as Float32s makes.
// Where data is x's memory, x is held while f runs: a Release from
// another goroutine hands the memory back only when f returns.
//
// f must not write to data, since lathe's tensors never change and other
// tensors may share x's memory, nor keep data after it returns, when the
// memory may go back to the pool for the next op to write. T must be the
// Go type of x's dtype (ErrDType otherwise); float16 and bfloat16, which
// have none, are read with HalfBits or Float32s.
func WithData[T Element](x *Tensor, f func(data []T) error) error {
	const op = "with_data"
	if err := x.CheckArg(op, "x"); err != nil {
		return err
	}
	if f == nil {
		return errorf(op, ErrValue, "f", "is nil", "pass the function that reads the elements")
	}
	if want := dtypeOf[T](); x.t.DType != want {
		return errorf(op, ErrDType, "x", "is "+x.t.DType.String()+", and f takes "+want.String()+" elements",
			"read it as its own dtype's Go type, or cast it first with .Cast("+want.GoString()+")")
	}
	data, done, err := x.lend(op, "x")
	if err != nil {
		return err
	}
	defer done()
	return f(data.([]T))
}

// lend is x's elements on the host, in row-major order: x's own memory
// where its buffer lends it (dispatch.BorrowHost), held until the caller
// calls done, or else a copy (host). The caller only reads them.
func (x *Tensor) lend(op, arg string) (data any, done func(), err error) {
	if !x.t.Hold() {
		return nil, nil, errorf(op, ErrReleased, arg, "was released", "do not use a tensor after Release")
	}
	if d, ok := dispatch.BorrowHost(x.t); ok {
		return d, x.t.LetGo, nil
	}
	x.t.LetGo()
	d, err := x.host(op)
	return d, func() {}, err
}

// FromFunc makes a tensor of shape on dev, of T's dtype, whose elements
// fill writes into data in row-major order; data starts as zeros. On the
// cpu, data is the new tensor's own memory, with no copy made; on another
// device it is host memory that is then copied there. fill's error is the
// result's (Err returns it as fill gave it), and no tensor is made. fill
// must not keep data after it returns. The sizes are at least 0 (no -1:
// there is no length to infer one from); with none, the tensor is 0-d.
func FromFunc[T Element](dev Device, fill func(data []T) error, shape ...int) *Tensor {
	const op = "from_func"
	if fill == nil {
		return failed(errorf(op, ErrValue, "fill", "is nil", "pass the function that writes the elements"))
	}
	s, err := checkShape(op, shape, -1)
	if err != nil {
		return failed(err)
	}
	dt := dtypeOf[T]()
	t, data, err := emptyLent(op, dev, dt, s)
	switch {
	case err != nil:
		return failed(err)
	case t != nil:
		d := data.([]T)
		clear(d) // the pool's memory holds an earlier tensor's values
		filled := false
		defer func() {
			if !filled { // fill failed or panicked: the block goes back now
				t.Release()
			}
		}()
		if err := fill(d); err != nil {
			return Failed(err)
		}
		filled = true
		return wrap(t)
	}
	if _, err := dispatch.Open(dev); err != nil {
		return failed(located(err, op)) // before fill runs for nothing
	}
	n := dispatch.Numel(s)
	if err := checkHost(op, "shape", n, dt.Size()); err != nil {
		return failed(err)
	}
	d := make([]T, n)
	if err := fill(d); err != nil {
		return Failed(err)
	}
	return upload(op, dev, d, dt, s)
}

// emptyLent is a new tensor of dt and shape on dev with its memory lent
// (dispatch.BorrowHost) on a device that keeps tensors in this process's
// memory (the cpu); the contents are unspecified. It returns a nil tensor
// and no error where dev's buffers lend none, and the error of a tensor
// that dev cannot make (out of the memory its limit allows, say).
func emptyLent(op string, dev Device, dt DType, shape []int) (*dispatch.Tensor, any, error) {
	if dev.Kind != dispatch.Host {
		return nil, nil, nil
	}
	t, err := dispatch.Empty(dev, dt, shape)
	if err != nil {
		return nil, nil, located(err, op)
	}
	d, ok := dispatch.BorrowHost(t)
	if !ok {
		t.Release()
		return nil, nil, nil
	}
	return t, d, nil
}
