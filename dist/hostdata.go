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

// fromBytes views b as []T; b came from a []T through asBytes, or from
// aligned, so it is aligned for T.
func fromBytes[T any](b []byte) []T {
	var z T
	if len(b) == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(z)))
}

// lendHost runs f with x's elements as host bytes, and reports whether f
// ran (where it did not, err says why x could not be read). With a nil
// spare (an engine that is done with its buffers when its call returns),
// f gets x's own memory on the cpu (lathe.WithData, or WithHalfBits for
// the 16-bit floats); otherwise a copy in
// memory from spare, given back if f succeeds.
func lendHost(x *lathe.Tensor, spare *hostPool, f func(hostBuf) error) (ran bool, err error) {
	run := func(h hostBuf) error {
		ran = true
		return f(h)
	}
	switch x.DType() {
	case lathe.Float32:
		err = lendAs(x, spare, run, lathe.WithData[float32])
	case lathe.Float64:
		err = lendAs(x, spare, run, lathe.WithData[float64])
	case lathe.Int32:
		err = lendAs(x, spare, run, lathe.WithData[int32])
	case lathe.Int64:
		err = lendAs(x, spare, run, lathe.WithData[int64])
	case lathe.Int8:
		err = lendAs(x, spare, run, lathe.WithData[int8])
	case lathe.Uint8:
		err = lendAs(x, spare, run, lathe.WithData[uint8])
	case lathe.Bool: // one byte, 0 or 1
		err = lendAs(x, spare, run, lathe.WithData[bool])
	case lathe.Float16, lathe.BFloat16:
		err = lendAs(x, spare, run, lathe.WithHalfBits)
	default:
		err = lathe.NewError("", lathe.ErrDType, "x", "has dtype "+x.DType().String()+", which no engine carries", "cast it to a dtype lathe has")
	}
	return ran, err
}

// lendAs is lendHost for the elements that with lends as []T.
func lendAs[T any](x *lathe.Tensor, spare *hostPool, f func(hostBuf) error, with func(*lathe.Tensor, func([]T) error) error) error {
	t := elemOf(x.DType())
	return with(x, func(d []T) error {
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
// into the new tensor's own memory on the cpu (lathe.FromFunc, or
// FromHalfBitsFunc for the 16-bit floats); otherwise into memory from
// spare, then copied, and given back. fill's error is the tensor's.
func makeHost(dev lathe.Device, dt lathe.DType, shape []int, spare *hostPool, fill func(hostBuf) error) *lathe.Tensor {
	switch dt {
	case lathe.Float32:
		return makeAs(dev, dt, shape, spare, fill, lathe.FromFunc[float32])
	case lathe.Float64:
		return makeAs(dev, dt, shape, spare, fill, lathe.FromFunc[float64])
	case lathe.Int32:
		return makeAs(dev, dt, shape, spare, fill, lathe.FromFunc[int32])
	case lathe.Int64:
		return makeAs(dev, dt, shape, spare, fill, lathe.FromFunc[int64])
	case lathe.Int8:
		return makeAs(dev, dt, shape, spare, fill, lathe.FromFunc[int8])
	case lathe.Uint8:
		return makeAs(dev, dt, shape, spare, fill, lathe.FromFunc[uint8])
	case lathe.Bool:
		return makeAs(dev, dt, shape, spare, func(h hostBuf) error {
			err := fill(h)
			for i, c := range h.b { // a bool's byte is 0 or 1, whatever a peer sent
				h.b[i] = min(c, 1)
			}
			return err
		}, lathe.FromFunc[bool])
	}
	return makeAs(dev, dt, shape, spare, fill, func(dev lathe.Device, fill func([]uint16) error, shape ...int) *lathe.Tensor {
		return lathe.FromHalfBitsFunc(dev, dt, fill, shape...) // float16 and bfloat16
	})
}

// makeAs is makeHost for a tensor that from makes from the []T it fills.
func makeAs[T any](dev lathe.Device, dt lathe.DType, shape []int, spare *hostPool, fill func(hostBuf) error,
	from func(lathe.Device, func([]T) error, ...int) *lathe.Tensor) *lathe.Tensor {
	t := elemOf(dt)
	if spare == nil {
		ran := false
		out := from(dev, func(d []T) error {
			ran = true
			return fill(hostBuf{b: asBytes(d), t: t})
		}, shape...)
		if !ran && out.Err() != nil {
			// The tensor could not be made (past the pool's limit, say),
			// and the other ranks' frames are on their way: the call
			// still runs, into memory of its own, so that this rank stays
			// in step with them, and the error is the tensor's.
			if err := fill(hostBuf{b: aligned(numel(shape) * t.size()), t: t}); err != nil {
				return lathe.Failed(err)
			}
		}
		return out
	}
	h := hostBuf{b: spare.take(numel(shape) * t.size()), t: t}
	clear(h.b)
	if err := fill(h); err != nil {
		return lathe.Failed(err) // the engine may still hold h
	}
	out := from(dev, func(d []T) error { copy(asBytes(d), h.b); return nil }, shape...)
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
