package cuda

import (
	"fmt"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// Host data as bytes: what Upload copies to the device and Read fills.

// elemSize is the bytes per element of a dtype on the device: Go's size for
// the numeric types (the 16-bit floats are their bits, as internal/half
// holds them), and one byte (0 or 1) for bool, as the kernels store it.
func elemSize(dt dispatch.DType) (int, bool) {
	switch dt {
	case dispatch.Float32, dispatch.Int32:
		return 4, true
	case dispatch.Float64, dispatch.Int64:
		return 8, true
	case dispatch.Float16, dispatch.BFloat16:
		return 2, true
	case dispatch.Bool, dispatch.Int8, dispatch.Uint8:
		return 1, true
	}
	return 0, false
}

// asBytes is the memory of a slice, byte by byte.
func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var v T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(v)))
}

// hostBytes returns the bytes of host data that Upload was given, its dtype
// and element count.
func hostBytes(data any) (raw []byte, dt dispatch.DType, n int, err error) {
	switch d := data.(type) {
	case []float32:
		return asBytes(d), dispatch.Float32, len(d), nil
	case []float64:
		return asBytes(d), dispatch.Float64, len(d), nil
	case []int32:
		return asBytes(d), dispatch.Int32, len(d), nil
	case []int64:
		return asBytes(d), dispatch.Int64, len(d), nil
	case []bool:
		return asBytes(d), dispatch.Bool, len(d), nil // Go stores a bool as one byte, 0 or 1
	case []half.Float16:
		return asBytes(d), dispatch.Float16, len(d), nil
	case []half.BFloat16:
		return asBytes(d), dispatch.BFloat16, len(d), nil
	case []int8:
		return asBytes(d), dispatch.Int8, len(d), nil
	case []uint8:
		return asBytes(d), dispatch.Uint8, len(d), nil
	}
	return nil, 0, 0, &dispatch.Error{Kind: dispatch.ErrDType, Detail: fmt.Sprintf("cannot hold host data of type %T", data)}
}

// hostSlice makes the Go slice that Read returns for n elements of dt and
// the bytes to fill it through. A bool result is filled as bytes and then
// converted (finish), so that a kernel that stored a nonzero byte other than
// 1 still reads as true rather than as an invalid Go bool.
func hostSlice(dt dispatch.DType, n int) (out any, raw []byte, finish func(), err error) {
	switch dt {
	case dispatch.Float32:
		s := make([]float32, n)
		return s, asBytes(s), func() {}, nil
	case dispatch.Float64:
		s := make([]float64, n)
		return s, asBytes(s), func() {}, nil
	case dispatch.Int32:
		s := make([]int32, n)
		return s, asBytes(s), func() {}, nil
	case dispatch.Int64:
		s := make([]int64, n)
		return s, asBytes(s), func() {}, nil
	case dispatch.Float16:
		s := make([]half.Float16, n)
		return s, asBytes(s), func() {}, nil
	case dispatch.BFloat16:
		s := make([]half.BFloat16, n)
		return s, asBytes(s), func() {}, nil
	case dispatch.Int8:
		s := make([]int8, n)
		return s, asBytes(s), func() {}, nil
	case dispatch.Uint8:
		s := make([]uint8, n)
		return s, asBytes(s), func() {}, nil
	case dispatch.Bool:
		s, b := make([]bool, n), make([]byte, n)
		return s, b, func() {
			for i, v := range b {
				s[i] = v != 0
			}
		}, nil
	}
	return nil, nil, nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: "cannot read dtype " + dt.String() + " from a cuda device"}
}
