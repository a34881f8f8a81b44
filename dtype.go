package lathe

import "github.com/lathe-ml/lathe/dispatch"

// DType is a tensor's element type.
type DType = dispatch.DType

// The dtypes, named as PyTorch names them. Float64 is not available on
// WebGPU. Float16 and BFloat16 are stored in 16 bits and computed in
// float32, rounding each op's result once (to nearest even), as PyTorch
// does on the CPU; Int8 and Uint8 are stored in 8 bits, and their
// arithmetic wraps, as PyTorch's does. The four run on every device,
// computed by the float32 and int32 kernels between conversions.
const (
	Float32  = dispatch.Float32
	Float64  = dispatch.Float64
	Int32    = dispatch.Int32
	Int64    = dispatch.Int64
	Bool     = dispatch.Bool
	Float16  = dispatch.Float16
	BFloat16 = dispatch.BFloat16
	Int8     = dispatch.Int8
	Uint8    = dispatch.Uint8
)

// Element is the set of Go types a tensor can be made from and read into.
// Go has no 16-bit float: make a Float16 or BFloat16 tensor from float32s
// with Cast (or Full, Zeros, Ones, Rand, Arange with the dtype) and read
// one back with Float32s, which widens it exactly.
type Element interface {
	float32 | float64 | int32 | int64 | bool | int8 | uint8
}

// dtypeOf maps a Go element type to its dtype.
func dtypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int32:
		return Int32
	case int64:
		return Int64
	case int8:
		return Int8
	case uint8:
		return Uint8
	}
	return Bool
}
