package lathe

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
)

// host copies x's elements, in row-major order, into a new Go slice of its
// dtype's type, waiting for the device if it must.
func (x *Tensor) host(op string) (any, error) {
	if err := x.check(op); err != nil {
		return nil, err
	}
	t := x.t
	if !t.IsContiguous() {
		c, err := dispatch.Call(ops.Contiguous, none, t)
		if err != nil {
			return nil, located(err, op)
		}
		defer c.Release()
		t = c
	}
	data, err := dispatch.ReadHost(t)
	if err != nil {
		return nil, located(err, op)
	}
	return data, nil
}

// values is the shared body of Float32s, Float64s, ...: x's data as []T,
// refusing a dtype other than T's rather than converting silently.
func values[T Element](x *Tensor, op string) ([]T, error) {
	if err := x.check(op); err != nil {
		return nil, err
	}
	want := dtypeOf[T]()
	if x.t.DType != want {
		return nil, errorf(op, ErrDType, "", "needs a "+want.String()+" tensor, got "+x.t.DType.String(),
			"convert it first with .Cast("+want.GoString()+")")
	}
	data, err := x.host(op)
	if err != nil {
		return nil, err
	}
	return data.([]T), nil
}

// Float32s returns a float32 tensor's elements in row-major order. A
// float16 or bfloat16 tensor's are widened to float32, which is exact.
func (x *Tensor) Float32s() ([]float32, error) {
	if x != nil && x.t != nil && dispatch.Halves.Has(x.t.DType) {
		data, err := x.host("float32s")
		if err != nil {
			return nil, err
		}
		return halfFloat32s(data), nil
	}
	return values[float32](x, "float32s")
}

// halfFloat32s widens host data of a 16-bit float dtype to float32s.
func halfFloat32s(data any) []float32 {
	switch d := data.(type) {
	case []half.Float16:
		return convertEach(d, half.Float16.Float32)
	case []half.BFloat16:
		return convertEach(d, half.BFloat16.Float32)
	}
	return nil
}

func convertEach[T, U any](d []T, f func(T) U) []U {
	out := make([]U, len(d))
	for i, v := range d {
		out[i] = f(v)
	}
	return out
}

// Float64s returns a float64 tensor's elements in row-major order.
func (x *Tensor) Float64s() ([]float64, error) { return values[float64](x, "float64s") }

// Int32s returns an int32 tensor's elements in row-major order.
func (x *Tensor) Int32s() ([]int32, error) { return values[int32](x, "int32s") }

// Int64s returns an int64 tensor's elements in row-major order.
func (x *Tensor) Int64s() ([]int64, error) { return values[int64](x, "int64s") }

// Bools returns a bool tensor's elements in row-major order.
func (x *Tensor) Bools() ([]bool, error) { return values[bool](x, "bools") }

// Int8s returns an int8 tensor's elements in row-major order.
func (x *Tensor) Int8s() ([]int8, error) { return values[int8](x, "int8s") }

// Uint8s returns a uint8 tensor's elements in row-major order.
func (x *Tensor) Uint8s() ([]uint8, error) { return values[uint8](x, "uint8s") }

// Item returns the value of a one-element tensor of any dtype as a float64
// (true is 1), as PyTorch's item does. A float64 holds every int64 of up
// to 2^53 in magnitude exactly and rounds larger ones; Int64s gives an
// int64 tensor's values exactly.
func (x *Tensor) Item() (float64, error) {
	if err := x.check("item"); err != nil {
		return 0, err
	}
	if n := x.t.Numel(); n != 1 {
		return 0, errorf("item", ErrShape, "", "needs a tensor of one element, got shape "+dispatch.FormatShape(x.t.Shape),
			"reduce it first, e.g. with .Sum()")
	}
	data, err := x.host("item")
	if err != nil {
		return 0, err
	}
	return asFloat64s(data)[0], nil
}

// asFloat64s widens host data of any dtype to float64, for printing and Item.
func asFloat64s(data any) []float64 {
	switch d := data.(type) {
	case []float64:
		return d
	case []float32:
		return widen(d)
	case []int32:
		return widen(d)
	case []int64:
		return widen(d)
	case []int8:
		return widen(d)
	case []uint8:
		return widen(d)
	case []half.Float16, []half.BFloat16:
		return widen(halfFloat32s(d))
	case []bool:
		out := make([]float64, len(d))
		for i, b := range d {
			if b {
				out[i] = 1
			}
		}
		return out
	}
	return nil
}

func widen[T float32 | int32 | int64 | int8 | uint8](d []T) []float64 {
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = float64(v)
	}
	return out
}

// HalfBits returns a float16 or bfloat16 tensor's elements, in row-major
// order, as their 16 bits, untouched: what Float32s would widen, including
// a NaN's payload and its signalling bit, which a round trip through
// float32 would quiet. It is the storage that safetensors and torch's
// .view(torch.int16) see.
func (x *Tensor) HalfBits() ([]uint16, error) {
	if err := x.check("half_bits"); err != nil {
		return nil, err
	}
	if !dispatch.Halves.Has(x.t.DType) {
		return nil, errorf("half_bits", ErrDType, "", "needs a float16 or bfloat16 tensor, got "+x.t.DType.String(),
			"convert it first with .Cast(lathe.Float16) or .Cast(lathe.BFloat16)")
	}
	data, err := x.host("half_bits")
	if err != nil {
		return nil, err
	}
	switch d := data.(type) {
	case []half.Float16:
		return convertEach(d, func(h half.Float16) uint16 { return uint16(h) }), nil
	case []half.BFloat16:
		return convertEach(d, func(h half.BFloat16) uint16 { return uint16(h) }), nil
	}
	return nil, errorf("half_bits", ErrDType, "", "got host data of an unexpected type for "+x.t.DType.String(), "")
}
