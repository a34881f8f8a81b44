package cpu

import (
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// The narrow dtypes (float16, bfloat16, int8, uint8) are stored narrow and
// computed wide through dispatch.ViaCompute, whose comment gives the
// rules; the cpu brings its storage and convert.

// convert is the cpu's dispatch.Converter.
func convert(dev dispatch.Device, dst dispatch.Buffer, to dispatch.DType, dstOff int, src dispatch.Buffer, from dispatch.DType, srcOff, n int) error {
	out := &dispatch.Tensor{Shape: []int{n}, Strides: []int{1}, Offset: dstOff, DType: to, Device: dev, Storage: &dispatch.Storage{Buffer: dst, Len: dstOff + n}}
	x := &dispatch.Tensor{Shape: []int{n}, Strides: []int{1}, Offset: srcOff, DType: from, Device: dev, Storage: &dispatch.Storage{Buffer: src, Len: srcOff + n}}
	if dispatch.Narrow(from) {
		widenInto(out, x)
	} else {
		narrowInto(out, x)
	}
	return nil
}

// widened is t (of a narrow dtype) in its compute dtype, for a kernel that
// moves narrow elements itself (cast); a temporary the pool refuses
// unwinds as newBuffer's do.
func widened(t *dispatch.Tensor) *dispatch.Tensor {
	w, err := dispatch.Widened(backend{}, convert, t)
	if err != nil {
		panic(refusal{err})
	}
	return w
}

// widenInto writes x, of a narrow dtype, into out, of its compute dtype and
// x's shape (any layouts), exactly.
func widenInto(out, x *dispatch.Tensor) {
	switch x.DType {
	case dispatch.Float16:
		mapRows1To(out, x, func(d []float32, s []half.Float16) bool { return widen16(d, uint16s(s), false) }, half.Float16.Float32)
	case dispatch.BFloat16:
		mapRows1To(out, x, func(d []float32, s []half.BFloat16) bool { return widen16(d, uint16s(s), true) }, half.BFloat16.Float32)
	case dispatch.Int8:
		map1(out, x, func(v int8) int32 { return int32(v) })
	case dispatch.Uint8:
		map1(out, x, func(v uint8) int32 { return int32(v) })
	}
}

// narrowInto rounds x, of out's compute dtype and shape (any layout), into
// out: to nearest even for the 16-bit floats, the low 8 bits for the 8-bit
// integers.
func narrowInto(out, x *dispatch.Tensor) {
	switch out.DType {
	case dispatch.Float16:
		mapRows1To(out, x, func(d []half.Float16, s []float32) bool { return narrow16(uint16s(d), s, false) },
			func(v float32) half.Float16 { return half.Float16(half.Float16FromFloat32(v)) })
	case dispatch.BFloat16:
		mapRows1To(out, x, func(d []half.BFloat16, s []float32) bool { return narrow16(uint16s(d), s, true) },
			func(v float32) half.BFloat16 { return half.BFloat16(half.BFloat16FromFloat32(v)) })
	case dispatch.Int8:
		map1(out, x, func(v int32) int8 { return int8(v) })
	case dispatch.Uint8:
		map1(out, x, func(v int32) uint8 { return uint8(v) })
	}
}

// mapRows1To is map1 from T to U with a vector loop for contiguous runs:
// rows writes dst from src and reports whether it did (a machine without
// the instructions, a short run), else f runs per element.
func mapRows1To[T, U any](out, x *dispatch.Tensor, rows func(dst []U, src []T) bool, f func(T) U) {
	if !flat(out, x) {
		map1(out, x, f)
		return
	}
	o, a := span[U](out), span[T](x)
	parallel(len(o), 1, func(lo, hi int) {
		if rows(o[lo:hi], a[lo:hi]) {
			return
		}
		for i, v := range a[lo:hi] {
			o[lo+i] = f(v)
		}
	})
}

// uint16s is the bits of a slice of 16-bit floats.
func uint16s[T ~uint16](v []T) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}
