package cpu

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// The narrow dtypes, float16, bfloat16, int8 and uint8, are storage types on
// the cpu: a kernel loads them into a compute dtype (float32 for the 16-bit
// floats, int32 for the 8-bit integers), computes as it does for that dtype
// and stores its result rounded once, as PyTorch's cpu kernels do with
// their opmath type. One path serves every kernel (viaCompute), so no
// kernel has a copy per narrow dtype:
//
//   - Widening is exact, so comparisons, max/min, argmax, indexing and
//     copies see the values themselves.
//   - A float result rounds to the nearest float16 or bfloat16, ties to
//     even (package half); a sum, a product, a mean's sum, a matmul, a
//     softmax or a convolution accumulates in float32 and rounds once at
//     the end, as at::sum and at::mm do for torch.half on the cpu.
//   - An integer result keeps its low 8 bits, two's complement: int8's
//     127 + 1 is -128 and uint8's 0 - 1 is 255, PyTorch's wrapping. That
//     is exact for every op that the integer kernels have (add, sub, mul,
//     pow, sums, products and matmul are ring operations, whose low 8 bits
//     depend only on their operands' low 8 bits; max, min, abs, sign, clamp
//     and the comparisons keep the values).

// narrow reports whether the cpu stores dt narrower than it computes it.
func narrow(dt dispatch.DType) bool { return (dispatch.Halves | dispatch.Bytes).Has(dt) }

// computeOf is the dtype that a kernel computes dt in.
func computeOf(dt dispatch.DType) dispatch.DType {
	switch {
	case dispatch.Halves.Has(dt):
		return dispatch.Float32
	case dispatch.Bytes.Has(dt):
		return dispatch.Int32
	}
	return dt
}

// computable is the part of set that a kernel written for set's wide
// dtypes computes through viaCompute: the narrow dtypes whose compute
// dtype it has.
func computable(set dispatch.DTypeSet) dispatch.DTypeSet {
	out := set & dispatch.Wide
	if set.Has(dispatch.Float32) {
		out |= set & dispatch.Halves
	}
	if set.Has(dispatch.Int32) {
		out |= set & dispatch.Bytes
	}
	return out
}

// viaCompute runs k, a kernel for the wide dtypes, on arguments and a
// result of any dtype: each narrow argument widened to its compute dtype
// (the span of storage it addresses, so a broadcast view stays small),
// and a narrow result computed into a temporary of its compute dtype, then
// rounded into out once. A call with no narrow tensor goes straight to k.
func viaCompute[A any](k dispatch.Kernel[A]) dispatch.Kernel[A] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) error {
		some := narrow(out.DType)
		for _, t := range in {
			some = some || narrow(t.DType)
		}
		if !some {
			return k(out, in, a)
		}
		wide := make([]*dispatch.Tensor, len(in))
		for i, t := range in {
			wide[i] = t
			if narrow(t.DType) {
				wide[i] = widened(t)
				defer wide[i].Release()
			}
		}
		o := out
		if narrow(out.DType) {
			c := computeOf(out.DType)
			o = dispatch.NewTensor(out.Device, c, out.Shape, newBuffer(c, out.Numel()))
			defer o.Release()
		}
		if err := k(o, wide, a); err != nil {
			return err
		}
		if o != out {
			narrowInto(out, o)
		}
		return nil
	}
}

// widened is t (of a narrow dtype) in its compute dtype, exactly, with t's
// shape and strides over a new buffer that holds the span of t's storage
// that t addresses.
func widened(t *dispatch.Tensor) *dispatch.Tensor {
	c := computeOf(t.DType)
	lo, hi := t.Offset, t.Offset+1
	for d, s := range t.Shape {
		if s == 0 {
			lo, hi = t.Offset, t.Offset
			break
		}
		if st := t.Strides[d]; st < 0 {
			lo += (s - 1) * st
		} else {
			hi += (s - 1) * st
		}
	}
	n := hi - lo
	w := dispatch.NewTensor(t.Device, c, []int{n}, newBuffer(c, n))
	src := alias(t, []int{n}, []int{1}, lo)
	switch t.DType {
	case dispatch.Float16:
		map1(w, src, half.Float16.Float32)
	case dispatch.BFloat16:
		map1(w, src, half.BFloat16.Float32)
	case dispatch.Int8:
		map1(w, src, func(v int8) int32 { return int32(v) })
	case dispatch.Uint8:
		map1(w, src, func(v uint8) int32 { return int32(v) })
	}
	v := w.View(t.Shape, t.Strides, t.Offset-lo)
	w.Release()
	return v
}

// narrowInto rounds x, of out's compute dtype and shape (any layout), into
// out: to nearest even for the 16-bit floats, the low 8 bits for the 8-bit
// integers.
func narrowInto(out, x *dispatch.Tensor) {
	switch out.DType {
	case dispatch.Float16:
		map1(out, x, func(v float32) half.Float16 { return half.Float16(half.Float16FromFloat32(v)) })
	case dispatch.BFloat16:
		map1(out, x, func(v float32) half.BFloat16 { return half.BFloat16(half.BFloat16FromFloat32(v)) })
	case dispatch.Int8:
		map1(out, x, func(v int32) int8 { return int8(v) })
	case dispatch.Uint8:
		map1(out, x, func(v int32) uint8 { return uint8(v) })
	}
}
