package ops

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// Scalars meet tensors in fills (full, masked_fill, pad's value), as the
// operand of a binary op (add_scalar, lt_scalar, ...) and in comparisons.
// A scalar is a float64; the rules here say when a dtype holds it and how
// a comparison with one that it does not hold still gives the exact
// answer, as PyTorch's does.

// CheckScalar refuses a value v that dtype dt cannot hold: one outside an
// integer dtype's range (NaN and ±Inf included) or a finite one beyond
// float32's, an ErrValue naming arg, v and the range, as PyTorch's
// checked_convert ("value cannot be converted to type int without
// overflow": torch.full((2,), 3e9, dtype=torch.int32), masked_fill, F.pad);
// and a fraction in an integer dtype (1.5 in an int tensor), an ErrDType,
// where torch would truncate it. Unlike torch 1.13, 2⁶³ is refused for
// int64: it is past int64's largest value though float64 rounds that up
// to it.
func CheckScalar(dt dispatch.DType, v float64, arg string) error {
	if !holds(dt, v) {
		return &dispatch.Error{Kind: dispatch.ErrValue, Arg: arg, Found: ftoa(v),
			Detail: "is " + ftoa(v) + ", outside " + dt.String() + "'s range " + rangeOf(dt),
			Fix:    "use a value in the range or a wider dtype"}
	}
	if dt.IsInt() && v != math.Trunc(v) {
		return &dispatch.Error{Kind: dispatch.ErrDType, Arg: arg, Found: ftoa(v), Detail: "is " + ftoa(v) + ", not an integer, but the tensor is " + dt.String(),
			Fix: "use an integral value or a float tensor"}
	}
	return nil
}

// CheckOperand is CheckScalar for the scalar operand of binary op
// (add_scalar, maximum_scalar): an integer dtype must hold it, while a
// float one rounds it, to ±Inf past its range, as torch's float32 + 1e39
// does. A dtype that op does not take is left to op's own error (div of
// an int32 is a dtype error, whatever the scalar).
func CheckOperand(op *dispatch.Op[dispatch.None], dt dispatch.DType, v float64, arg string) error {
	if !dt.IsInt() {
		return nil
	}
	for _, b := range BinaryOps {
		if b.Op == op && !b.DTypes.Has(dt) {
			return nil
		}
	}
	return CheckScalar(dt, v, arg)
}

// ScalarData is one element of dtype dt holding v, as host data for
// Upload; v is one that CheckScalar or CheckOperand took.
func ScalarData(dt dispatch.DType, v float64) any { return FilledData(dt, 1, v) }

// Filled is a tensor of shape on dev with every element v (of dtype dt,
// which CheckScalar took): filled on the host and uploaded where it is
// small, and above smallFill bytes one element uploaded, expanded to the
// shape and copied on the device. The device's allocator then supplies
// the memory, from its pool, and sizes the copy, so that a shape it cannot
// hold is its ErrOutOfMemory; a host slice of that size would be new Go
// heap, whose pages cost a fault each on first touch (about 10 µs on a
// VM: a backward pass's zeros of [512,1000] spent 5 ms there).
func Filled(dev dispatch.Device, dt dispatch.DType, v float64, shape []int) (*dispatch.Tensor, error) {
	if n := dispatch.Numel(shape); n <= smallFill/max(dt.Size(), 1) {
		return dispatch.Upload(dev, FilledData(dt, n, v), dt, shape)
	}
	one, err := dispatch.Upload(dev, FilledData(dt, 1, v), dt, []int{})
	if err != nil {
		return nil, err
	}
	defer one.Release()
	all, err := dispatch.Call(Expand, ViewShape{Shape: shape}, one)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	return dispatch.Call(Contiguous, dispatch.None{}, all)
}

// smallFill is the most bytes that Filled fills on the host: below it,
// three ops on the device cost more than the slice (1.1 µs against 0.27 µs
// for 16 float32s on the cpu); above it the device's fill is as fast or
// faster.
const smallFill = 64 << 10

// FilledData is n elements of dtype dt, each v converted as HostData
// converts, as host data for Upload (nil for an invalid dtype).
func FilledData(dt dispatch.DType, n int, v float64) any {
	switch dt {
	case dispatch.Float32:
		return filled(n, float32(v))
	case dispatch.Float64:
		return filled(n, v)
	case dispatch.Int32:
		return filled(n, int32(v))
	case dispatch.Int64:
		return filled(n, int64(v))
	case dispatch.Bool:
		return filled(n, v != 0)
	case dispatch.Int8:
		return filled(n, int8(v))
	case dispatch.Uint8:
		return filled(n, uint8(v))
	case dispatch.Float16:
		return filled(n, half.Float16(half.Float16FromFloat32(float32(v))))
	case dispatch.BFloat16:
		return filled(n, half.BFloat16(half.BFloat16FromFloat32(float32(v))))
	}
	return nil
}

// HostData converts float64 values to host data of dtype dt for Upload
// (nil for an invalid dtype): an integer truncates (the caller has checked
// the range), nonzero is true, and a 16-bit float rounds through float32,
// as c10::Half(float(v)) rounds a Python number.
func HostData(dt dispatch.DType, vals []float64) any {
	switch dt {
	case dispatch.Float32:
		return convert(vals, func(v float64) float32 { return float32(v) })
	case dispatch.Float64:
		return append([]float64(nil), vals...)
	case dispatch.Int32:
		return convert(vals, func(v float64) int32 { return int32(v) })
	case dispatch.Int64:
		return convert(vals, func(v float64) int64 { return int64(v) })
	case dispatch.Bool:
		return convert(vals, func(v float64) bool { return v != 0 })
	case dispatch.Int8:
		return convert(vals, func(v float64) int8 { return int8(v) })
	case dispatch.Uint8:
		return convert(vals, func(v float64) uint8 { return uint8(v) })
	case dispatch.Float16:
		return convert(vals, func(v float64) half.Float16 { return half.Float16(half.Float16FromFloat32(float32(v))) })
	case dispatch.BFloat16:
		return convert(vals, func(v float64) half.BFloat16 { return half.BFloat16(half.BFloat16FromFloat32(float32(v))) })
	}
	return nil
}

func filled[T comparable](n int, v T) []T {
	d := make([]T, n)
	var zero T
	if v != zero {
		for i := range d {
			d[i] = v
		}
	}
	return d
}

func convert[T any](vals []float64, f func(float64) T) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = f(v)
	}
	return out
}

// CompareScalar says how to compare a tensor of dtype dt with the scalar
// s by op (Eq, Ne, Lt, Le, Gt or Ge) exactly: either as op against bound,
// a value that dt holds, which gives the same answer for every element of
// dt, or, where every element gives one answer, that answer (constant
// true). PyTorch's comparisons are exact: torch.ones(2, dtype=torch.int32)
// < 3e9 is all true and == 1.5 all false, and NaN is unordered (only ne
// holds). An integer dtype rounds the scalar to the integer that keeps the
// answer (x < 1.5 is x < 2, x ≤ 1.5 is x ≤ 1) and answers alone past its
// range; Bool is the integers 0 and 1. A float dtype takes s as its own
// operand would (rounded, as torch's float32 comparison does), and so does
// an op that does not take dt, whose own error then says so.
func CompareScalar(op *dispatch.Op[dispatch.None], dt dispatch.DType, s float64) (bound float64, all, constant bool) {
	lo, end := intRange(dt)
	if end == 0 || (dt == dispatch.Bool && op != Eq && op != Ne) {
		return s, false, false
	}
	if math.IsNaN(s) {
		return 0, op == Ne, true
	}
	// x and the bound are integers in [lo, end).
	switch op {
	case Eq, Ne:
		if s != math.Trunc(s) || s < lo || s >= end {
			return 0, op == Ne, true
		}
		return s, false, false
	case Lt, Ge: // x < s ⟺ x < ⌈s⌉; x ≥ s ⟺ x ≥ ⌈s⌉
		c := math.Ceil(s)
		switch {
		case c >= end: // x < c for every x
			return 0, op == Lt, true
		case c <= lo: // x ≥ c for every x
			return 0, op == Ge, true
		}
		return c, false, false
	case Le, Gt: // x ≤ s ⟺ x ≤ ⌊s⌋; x > s ⟺ x > ⌊s⌋
		f := math.Floor(s)
		switch {
		case f >= end-1: // x ≤ f for every x (for int64, end-1 rounds to end: no f lies between)
			return 0, op == Le, true
		case f < lo: // x > f for every x
			return 0, op == Gt, true
		}
		return f, false, false
	}
	return s, false, false
}

// holds reports whether dtype dt holds v without overflow.
func holds(dt dispatch.DType, v float64) bool {
	switch dt {
	case dispatch.Float32:
		return math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) <= math.MaxFloat32
	case dispatch.Float16:
		// torch.full((1,), 65505., dtype=torch.float16) overflows; 65504
		// is the largest float16.
		return math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) <= 65504
	case dispatch.BFloat16:
		return math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) <= maxBFloat16
	case dispatch.Int32, dispatch.Int64, dispatch.Int8, dispatch.Uint8:
		// Within [lo, end-1], as torch checks (2147483647.5 is out); for
		// int64, end-1 rounds to end, which is out too.
		lo, end := intRange(dt)
		return v >= lo && v <= end-1 && v < end // false for NaN
	}
	return true
}

// intRange is the least value of an integer dtype (or Bool) and one past
// its greatest, both exact in float64; end is 0 for the float dtypes.
func intRange(dt dispatch.DType) (lo, end float64) {
	switch dt {
	case dispatch.Int32:
		return math.MinInt32, 1 << 31
	case dispatch.Int64:
		return math.MinInt64, 1 << 63
	case dispatch.Int8:
		return math.MinInt8, 1 << 7
	case dispatch.Uint8:
		return 0, 1 << 8
	case dispatch.Bool:
		return 0, 2
	}
	return 0, 0
}

// rangeOf writes dt's range for an error.
func rangeOf(dt dispatch.DType) string {
	switch dt {
	case dispatch.Int32:
		return "[-2147483648, 2147483647]"
	case dispatch.Int64:
		return "[-9223372036854775808, 9223372036854775807]"
	case dispatch.Int8:
		return "[-128, 127]"
	case dispatch.Uint8:
		return "[0, 255]"
	case dispatch.Float32:
		return "[-3.4028235e+38, 3.4028235e+38] and ±Inf"
	case dispatch.Float16:
		return "[-65504, 65504] and ±Inf"
	case dispatch.BFloat16:
		return "[-3.3895314e+38, 3.3895314e+38] and ±Inf"
	}
	return "of every value"
}

// maxBFloat16 is the largest finite bfloat16, 0x1.fep127.
const maxBFloat16 = 0x1.fep127
