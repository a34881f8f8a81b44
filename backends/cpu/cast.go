package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
)

func init() {
	registerNative(ops.Cast, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.CastTo) error {
		castInto(out, in[0])
		return nil
	})
	registerNative(ops.Contiguous, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		castInto(out, in[0]) // same dtype: a strided copy
		return nil
	})
}

// castInto writes x converted to out's dtype. Float to int truncates toward
// zero (floatToInt32 past the range), nonzero is true, true is 1: PyTorch's
// conversions. A narrow dtype converts through its compute dtype (narrow.go):
// float16 to bfloat16 widens exactly and rounds once; float64 to float16
// rounds to float32 first, as c10::Half's conversion from double does; a
// float to int8 or uint8 truncates to int32 as above and keeps the low 8
// bits, which is what torch's static_cast gives on x86 (300.7 is 44, -1 as
// uint8 is 255, NaN and ±Inf are 0).
func castInto(out, x *dispatch.Tensor) {
	if out.DType != x.DType && (dispatch.Narrow(out.DType) || dispatch.Narrow(x.DType)) {
		if out.DType == dispatch.ComputeOf(x.DType) { // widening exactly, into out itself
			widenInto(out, x)
			return
		}
		if dispatch.Narrow(x.DType) {
			w := widened(x)
			defer w.Release()
			x = w
		}
		if !dispatch.Narrow(out.DType) {
			castInto(out, x)
			return
		}
		if c := dispatch.ComputeOf(out.DType); x.DType != c {
			tmp := dispatch.NewTensor(out.Device, c, out.Shape, newBuffer(c, out.Numel()))
			defer tmp.Release()
			castInto(tmp, x)
			x = tmp
		}
		narrowInto(out, x)
		return
	}
	if out.DType == x.DType {
		switch x.DType {
		case dispatch.Float32:
			copySame[float32](out, x)
		case dispatch.Float64:
			copySame[float64](out, x)
		case dispatch.Int32:
			copySame[int32](out, x)
		case dispatch.Int64:
			copySame[int64](out, x)
		case dispatch.Bool:
			copySame[bool](out, x)
		case dispatch.Float16:
			copySame[half.Float16](out, x)
		case dispatch.BFloat16:
			copySame[half.BFloat16](out, x)
		case dispatch.Int8:
			copySame[int8](out, x)
		case dispatch.Uint8:
			copySame[uint8](out, x)
		}
		return
	}
	switch x.DType {
	case dispatch.Float32:
		castFrom[float32](out, x)
	case dispatch.Float64:
		castFrom[float64](out, x)
	case dispatch.Int32:
		castFrom[int32](out, x)
	case dispatch.Int64:
		castFrom[int64](out, x)
	case dispatch.Bool:
		switch out.DType {
		case dispatch.Float32:
			mapRows1(out, x, boolRows[float32], costLoop)
		case dispatch.Float64:
			mapRows1(out, x, boolRows[float64], costLoop)
		case dispatch.Int32:
			mapRows1(out, x, boolRows[int32], costLoop)
		case dispatch.Int64:
			mapRows1(out, x, boolRows[int64], costLoop)
		}
	}
}

// copySame copies x into out of the same dtype with a loop per run and no
// call per element: the contiguous copy that a transposed gradient needs
// before it is stored (an MLP step's 784×256 weight gradient took half a
// millisecond through map1's per-element call).
func copySame[T any](out, x *dispatch.Tensor) {
	if flat(out, x) {
		copy(span[T](out), span[T](x))
		return
	}
	o, a := elems[T](out), elems[T](x)
	l := newStrided(out, x)
	if transposeCopy[T](out, x, l) {
		return
	}
	last := len(l.Shape) - 1
	so, sa := l.Strides[0][last], l.Strides[1][last]
	l.eachRun(costVector, func(offs []int, n int) {
		oo, ao := offs[0], offs[1]
		switch {
		case so == 1 && sa == 1:
			copy(o[oo:oo+n], a[ao:ao+n])
		case so == 1 && sa == 0: // one value expanded (a sum's gradient, made contiguous)
			fill(o[oo:oo+n], a[ao])
		case so == 1:
			dst := o[oo : oo+n]
			for i := range dst {
				dst[i] = a[ao+i*sa]
			}
		default:
			for i := range n {
				o[oo+i*so] = a[ao+i*sa]
			}
		}
	})
}

// castFrom converts x, of S, into out's dtype, a run at a time with no
// call per element (map1's call made a float32 to float64 cast cost 1.3 ns
// an element, against the 16-bit casts' 0.06), in C's vector loops where
// convertVector has the pair.
func castFrom[S number](out, x *dispatch.Tensor) {
	switch out.DType {
	case dispatch.Float32:
		mapRows1(out, x, convertRows[S, float32], costLoop)
	case dispatch.Float64:
		mapRows1(out, x, convertRows[S, float64], costLoop)
	case dispatch.Int32:
		if x.DType.IsFloat() {
			mapRows1(out, x, truncRows32[S], costLoop)
			return
		}
		mapRows1(out, x, convertRows[S, int32], costLoop)
	case dispatch.Int64:
		if x.DType.IsFloat() {
			mapRows1(out, x, truncRows64[S], costLoop)
			return
		}
		mapRows1(out, x, convertRows[S, int64], costLoop)
	case dispatch.Bool:
		mapRows1(out, x, nonzeroRows[S], costLoop)
	}
}

// convertRows is Go's conversion of each element: exact between the
// integers and to float64, rounding to nearest even into float32, and
// wrapping int64 into int32 (as torch's static_cast).
func convertRows[S, D number](dst []D, src []S) {
	src = src[:len(dst)]
	if convertVector(dst, src) {
		return
	}
	for i, v := range src {
		dst[i] = D(v)
	}
}

// truncRows32 and truncRows64 convert floats to integers as floatToInt32
// and floatToInt64 do.
func truncRows32[S number](dst []int32, src []S) {
	src = src[:len(dst)]
	if convertVector(dst, src) {
		return
	}
	for i, v := range src {
		dst[i] = floatToInt32(float64(v))
	}
}

func truncRows64[S number](dst []int64, src []S) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = floatToInt64(float64(v))
	}
}

// nonzeroRows is each element's truth: nonzero (NaN included) is true.
func nonzeroRows[S number](dst []bool, src []S) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = v != 0
	}
}

// boolRows is each truth as a number: true is 1.
func boolRows[D number](dst []D, src []bool) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = 0
		if v {
			dst[i] = 1
		}
	}
}

// floatToInt32 and floatToInt64 convert as torch does on x86 (cvttss2si):
// truncation toward zero, and the most negative integer for NaN and for
// a value that truncates outside the integer's range (Inf, 3e9 to int32).
// Go leaves that case to the machine (amd64 gives this value, arm64
// saturates), so it is spelled out; the wgpu and cuda kernels give the
// same.
func floatToInt32(f float64) int32 {
	if !(f > -1<<31-1 && f < 1<<31) {
		return math.MinInt32
	}
	return int32(f)
}

func floatToInt64(f float64) int64 {
	if !(f >= -1<<63 && f < 1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

// truth returns x as a Bool tensor (itself if it is one), for logical ops.
func truth(x *dispatch.Tensor) *dispatch.Tensor {
	if x.DType == dispatch.Bool {
		return x
	}
	out := dispatch.NewTensor(x.Device, dispatch.Bool, x.Shape, newBuffer(dispatch.Bool, x.Numel()))
	castInto(out, x)
	return out
}

// walk calls f on each element of t in row-major order, on one goroutine.
func walk[T any](t *dispatch.Tensor, f func(T)) {
	data := elems[T](t)
	shape := t.Shape
	if t.Numel() == 0 {
		return
	}
	idx := make([]int, len(shape))
	off := t.Offset
	for {
		f(data[off])
		d := len(shape) - 1
		for ; d >= 0; d-- {
			idx[d]++
			off += t.Strides[d]
			if idx[d] < shape[d] {
				break
			}
			off -= idx[d] * t.Strides[d]
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}
