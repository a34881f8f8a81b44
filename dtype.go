package lathe

import "github.com/lathe-ml/lathe/dispatch"

// DType is a tensor's element type.
type DType = dispatch.DType

// The dtypes. Float64 and Int64 are not available on WebGPU.
const (
	Float32 = dispatch.Float32
	Float64 = dispatch.Float64
	Int32   = dispatch.Int32
	Int64   = dispatch.Int64
	Bool    = dispatch.Bool
)

// Element is the set of Go types a tensor can be made from and read into.
type Element interface {
	float32 | float64 | int32 | int64 | bool
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
	}
	return Bool
}
