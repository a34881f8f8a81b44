package dist

import (
	"unsafe"

	"github.com/lathe-ml/lathe"
)

// A tensor travels as its elements' bytes in row-major order: float16 and
// bfloat16 as their 16 bits, bool as one byte 0 or 1. Reductions of the
// 16-bit floats run in float32 (collectives.go casts before and after), so
// their sums are rounded once, at the end.

// elemOf is the engine type that carries dt.
func elemOf(dt lathe.DType) elemType {
	switch dt {
	case lathe.Float32:
		return tFloat32
	case lathe.Float64:
		return tFloat64
	case lathe.Int32:
		return tInt32
	case lathe.Int64:
		return tInt64
	case lathe.Int8:
		return tInt8
	case lathe.Uint8, lathe.Bool:
		return tUint8
	case lathe.Float16, lathe.BFloat16:
		return tUint16
	}
	return tByte
}

func asBytes[T any](v []T) []byte {
	if len(v) == 0 {
		return []byte{}
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(z)))
}

// fromBytes views b as []T; b came from make([]T) through asBytes or
// newHost, so it is aligned for T.
func fromBytes[T any](b []byte) []T {
	var z T
	if len(b) == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(z)))
}

// toHost reads x's elements (waiting for its device, making a copy of a
// strided view) into a host buffer.
func toHost(x *lathe.Tensor) (hostBuf, error) {
	dt := x.DType()
	var b []byte
	var err error
	switch dt {
	case lathe.Float32:
		var v []float32
		v, err = x.Float32s()
		b = asBytes(v)
	case lathe.Float64:
		var v []float64
		v, err = x.Float64s()
		b = asBytes(v)
	case lathe.Int32:
		var v []int32
		v, err = x.Int32s()
		b = asBytes(v)
	case lathe.Int64:
		var v []int64
		v, err = x.Int64s()
		b = asBytes(v)
	case lathe.Int8:
		var v []int8
		v, err = x.Int8s()
		b = asBytes(v)
	case lathe.Uint8:
		b, err = x.Uint8s()
	case lathe.Bool:
		var v []bool
		v, err = x.Bools()
		b = make([]byte, len(v))
		for i, t := range v {
			if t {
				b[i] = 1
			}
		}
	case lathe.Float16, lathe.BFloat16:
		var v []uint16
		v, err = x.HalfBits()
		b = asBytes(v)
	default:
		err = lathe.NewError("", lathe.ErrDType, "x", "has dtype "+dt.String()+", which no engine carries", "cast it to a dtype lathe has")
	}
	return hostBuf{b: b, t: elemOf(dt)}, err
}

// newHost is an n-element buffer for dt, allocated as its Go type so that
// fromBytes may view it.
func newHost(dt lathe.DType, n int) hostBuf {
	var b []byte
	switch t := elemOf(dt); t.size() {
	case 8:
		b = asBytes(make([]int64, n))
	case 4:
		b = asBytes(make([]int32, n))
	case 2:
		b = asBytes(make([]uint16, n))
	default:
		b = make([]byte, n)
	}
	if b == nil {
		b = []byte{}
	}
	return hostBuf{b: b, t: elemOf(dt)}
}

// tensorOf makes a tensor of dt and shape on dev from h.
func tensorOf(dev lathe.Device, dt lathe.DType, shape []int, h hostBuf) *lathe.Tensor {
	if len(shape) == 0 { // the constructors read no shape as 1-D
		t := tensorOf(dev, dt, []int{1}, h)
		defer t.Release()
		return t.Reshape()
	}
	switch dt {
	case lathe.Float32:
		return lathe.FromSlice(dev, fromBytes[float32](h.b), shape...)
	case lathe.Float64:
		return lathe.FromSlice(dev, fromBytes[float64](h.b), shape...)
	case lathe.Int32:
		return lathe.FromSlice(dev, fromBytes[int32](h.b), shape...)
	case lathe.Int64:
		return lathe.FromSlice(dev, fromBytes[int64](h.b), shape...)
	case lathe.Int8:
		return lathe.FromSlice(dev, fromBytes[int8](h.b), shape...)
	case lathe.Uint8:
		return lathe.FromSlice(dev, h.b, shape...)
	case lathe.Bool:
		v := make([]bool, len(h.b))
		for i, c := range h.b {
			v[i] = c != 0
		}
		return lathe.FromSlice(dev, v, shape...)
	case lathe.Float16, lathe.BFloat16:
		return lathe.FromHalfBits(dev, dt, fromBytes[uint16](h.b), shape...)
	}
	return lathe.Failed(lathe.NewError("", lathe.ErrDType, "", "dtype "+dt.String()+" has no host form", ""))
}

// lendHost runs f with x's elements as host bytes, and reports whether f
// ran (where it did not, err says why x could not be read). With a nil
// spare (an engine that is done with its buffers when its call returns),
// f gets x's own memory on the cpu (lathe.WithData); otherwise a copy in
// memory from spare, given back if f succeeds. float16 and bfloat16, which
// lathe lends as no Go type, are copied into new memory (toHost).
func lendHost(x *lathe.Tensor, spare *hostPool, f func(hostBuf) error) (ran bool, err error) {
	run := func(h hostBuf) error {
		ran = true
		return f(h)
	}
	switch x.DType() {
	case lathe.Float32:
		err = lendAs[float32](x, spare, run)
	case lathe.Float64:
		err = lendAs[float64](x, spare, run)
	case lathe.Int32:
		err = lendAs[int32](x, spare, run)
	case lathe.Int64:
		err = lendAs[int64](x, spare, run)
	case lathe.Int8:
		err = lendAs[int8](x, spare, run)
	case lathe.Uint8:
		err = lendAs[uint8](x, spare, run)
	case lathe.Bool: // one byte, 0 or 1
		err = lendAs[bool](x, spare, run)
	default:
		h, err := toHost(x)
		if err != nil {
			return false, err
		}
		return true, f(h)
	}
	return ran, err
}

func lendAs[T lathe.Element](x *lathe.Tensor, spare *hostPool, f func(hostBuf) error) error {
	t := elemOf(x.DType())
	return lathe.WithData(x, func(d []T) error {
		h := hostBuf{b: asBytes(d), t: t}
		if spare == nil {
			return f(h)
		}
		c := hostBuf{b: spare.take(len(h.b)), t: t}
		copy(c.b, h.b)
		if err := f(c); err != nil {
			return err // the engine may still hold c
		}
		spare.give(c.b)
		return nil
	})
}

// makeHost makes a tensor of dt and shape on dev from the elements that
// fill writes as host bytes, zeroed first: with a nil spare (see lendHost)
// into the new tensor's own memory on the cpu (lathe.FromFunc); otherwise
// into memory from spare, then copied, and given back. The 16-bit floats
// go through new memory (tensorOf). fill's error is the tensor's.
func makeHost(dev lathe.Device, dt lathe.DType, shape []int, spare *hostPool, fill func(hostBuf) error) *lathe.Tensor {
	switch dt {
	case lathe.Float32:
		return makeAs[float32](dev, dt, shape, spare, fill)
	case lathe.Float64:
		return makeAs[float64](dev, dt, shape, spare, fill)
	case lathe.Int32:
		return makeAs[int32](dev, dt, shape, spare, fill)
	case lathe.Int64:
		return makeAs[int64](dev, dt, shape, spare, fill)
	case lathe.Int8:
		return makeAs[int8](dev, dt, shape, spare, fill)
	case lathe.Uint8:
		return makeAs[uint8](dev, dt, shape, spare, fill)
	case lathe.Bool:
		return makeAs[bool](dev, dt, shape, spare, func(h hostBuf) error {
			err := fill(h)
			for i, c := range h.b { // a bool's byte is 0 or 1, whatever a peer sent
				h.b[i] = min(c, 1)
			}
			return err
		})
	}
	h := newHost(dt, numel(shape))
	if err := fill(h); err != nil {
		return lathe.Failed(err)
	}
	return tensorOf(dev, dt, shape, h)
}

func makeAs[T lathe.Element](dev lathe.Device, dt lathe.DType, shape []int, spare *hostPool, fill func(hostBuf) error) *lathe.Tensor {
	t := elemOf(dt)
	if spare == nil {
		return lathe.FromFunc(dev, func(d []T) error { return fill(hostBuf{b: asBytes(d), t: t}) }, shape...)
	}
	h := hostBuf{b: spare.take(numel(shape) * t.size()), t: t}
	clear(h.b)
	if err := fill(h); err != nil {
		return lathe.Failed(err) // the engine may still hold h
	}
	out := lathe.FromFunc(dev, func(d []T) error { copy(asBytes(d), h.b); return nil }, shape...)
	spare.give(h.b)
	return out
}

// numel is the elements of shape, which the caller has checked.
func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}
