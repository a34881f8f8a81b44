package lathe

import (
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
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
	want := dtypeOf[T]()
	if err := checkLend(op, x, f == nil); err != nil {
		return err
	}
	if x.t.DType != want {
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

// WithHalfBits is WithData for a float16 or bfloat16 tensor, whose
// elements have no Go type: f gets their 16 bits, as HalfBits gives them,
// in x's own memory on the cpu. Another dtype is an ErrDType.
func WithHalfBits(x *Tensor, f func(bits []uint16) error) error {
	const op = "with_half_bits"
	if err := checkLend(op, x, f == nil); err != nil {
		return err
	}
	if !dispatch.Halves.Has(x.t.DType) {
		return errorf(op, ErrDType, "x", "is "+x.t.DType.String()+", not a 16-bit float", "read it with WithData")
	}
	data, done, err := x.lend(op, "x")
	if err != nil {
		return err
	}
	defer done()
	return f(halfBitsOf(data))
}

// checkLend is WithData's and WithHalfBits's checks of x and f.
func checkLend(op string, x *Tensor, nilF bool) error {
	if err := x.CheckArg(op, "x"); err != nil {
		return err
	}
	if nilF {
		return errorf(op, ErrValue, "f", "is nil", "pass the function that reads the elements")
	}
	return nil
}

// halfBitsOf views the host data of a 16-bit float dtype as its bits.
func halfBitsOf(data any) []uint16 {
	switch d := data.(type) {
	case []half.Float16:
		return unsafe.Slice((*uint16)(unsafe.SliceData(d)), len(d))
	case []half.BFloat16:
		return unsafe.Slice((*uint16)(unsafe.SliceData(d)), len(d))
	}
	return nil
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
	return filledNew("from_func", dev, dtypeOf[T](), shape, fill,
		func(data any) []T { return data.([]T) },
		func(n int) any { return make([]T, n) })
}

// FromHalfBitsFunc is FromFunc for a float16 or bfloat16 tensor (dt),
// whose elements have no Go type: fill writes their 16 bits, as
// FromHalfBits takes them, into the new tensor's own memory on the cpu.
// Unlike FromHalfBits, no shape makes a 0-d tensor.
func FromHalfBitsFunc(dev Device, dt DType, fill func(bits []uint16) error, shape ...int) *Tensor {
	const op = "from_half_bits_func"
	if !dispatch.Halves.Has(dt) {
		return failed(errorf(op, ErrDType, "dt", "is "+dt.String()+", not a 16-bit float dtype", "use lathe.Float16 or lathe.BFloat16"))
	}
	return filledNew(op, dev, dt, shape, fill, halfBitsOf, func(n int) any {
		if dt == Float16 {
			return make([]half.Float16, n)
		}
		return make([]half.BFloat16, n)
	})
}

// filledNew is FromFunc's and FromHalfBitsFunc's body: a tensor of dt and
// shape on dev whose elements fill writes through view (the elements as
// fill takes them) of the new buffer's host data, zeroed first, where dev
// lends it (emptyLent), or else of host memory from newHost, uploaded.
func filledNew[V any](op string, dev Device, dt DType, shape []int, fill func([]V) error, view func(data any) []V, newHost func(n int) any) *Tensor {
	if fill == nil {
		return failed(errorf(op, ErrValue, "fill", "is nil", "pass the function that writes the elements"))
	}
	s, err := checkShape(op, shape, -1)
	if err != nil {
		return failed(err)
	}
	t, data, err := emptyLent(op, dev, dt, s)
	switch {
	case err != nil:
		return failed(err)
	case t != nil:
		d := view(data)
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
	h := newHost(n)
	if err := fill(view(h)); err != nil {
		return Failed(err)
	}
	return upload(op, dev, h, dt, s)
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
