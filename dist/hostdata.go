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
// f gets x's own memory on the cpu (lathe.WithData); otherwise a copy in
// memory from spare, given back if f succeeds. float16 and bfloat16, which
// lathe lends as no Go type, are copied into new memory (HalfBits).
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
	case lathe.Float16, lathe.BFloat16:
		var bits []uint16
		if bits, err = x.HalfBits(); err == nil {
			err = run(hostBuf{b: asBytes(bits), t: tUint16})
		}
	default:
		err = lathe.NewError("", lathe.ErrDType, "x", "has dtype "+x.DType().String()+", which no engine carries", "cast it to a dtype lathe has")
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
// go through new memory (FromHalfBits). fill's error is the tensor's.
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
	bits := make([]uint16, numel(shape)) // float16 and bfloat16
	if err := fill(hostBuf{b: asBytes(bits), t: tUint16}); err != nil {
		return lathe.Failed(err)
	}
	if len(shape) == 0 { // FromHalfBits reads no shape as 1-D
		t := lathe.FromHalfBits(dev, dt, bits, 1)
		defer t.Release()
		return t.Reshape()
	}
	return lathe.FromHalfBits(dev, dt, bits, shape...)
}

func makeAs[T lathe.Element](dev lathe.Device, dt lathe.DType, shape []int, spare *hostPool, fill func(hostBuf) error) *lathe.Tensor {
	t := elemOf(dt)
	if spare == nil {
		ran := false
		out := lathe.FromFunc(dev, func(d []T) error {
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
