package cpu

import (
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/layout"
)

// Copy kernels. Each is one strided copy (castInto between tensors of one
// dtype) from a layout over the input into a layout over the fresh output:
// flip reads the input with negated strides, concat and pad write through
// views of the output. The layouts are plain structs over the same storage,
// not counted views: they live only for the kernel's call. They move every
// dtype's elements as they are (registerNative), so a 16-bit float keeps
// its bits, a signalling NaN's too, as torch's copies do.

func init() {
	registerNative(ops.Flip, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.FlipDims) error {
		x := in[0]
		src := alias(x, x.Shape, append([]int(nil), x.Strides...), x.Offset)
		if x.Numel() > 0 {
			for _, d := range a.Of(x) {
				// Start at the last element of d and walk it backward.
				src.Offset += (x.Shape[d] - 1) * x.Strides[d]
				src.Strides[d] = -x.Strides[d]
			}
		}
		castInto(out, src)
		return nil
	})
	registerNative(ops.Concat, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConcatDim) error {
		d := a.Of(in)
		at := 0
		for _, t := range in {
			if t.Numel() > 0 {
				dst := alias(out, t.Shape, out.Strides, out.Offset+at*out.Strides[d])
				castInto(dst, t)
			}
			at += t.Shape[d]
		}
		return nil
	})
	registerNative(ops.Pad, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.Padding) error {
		x := in[0]
		// The part of x that survives the crops goes to the part of out
		// inside the pads; the value, to the rest.
		shape, xSkip, outSkip, ok := layout.PadRegion(x, out, a.Pads)
		if !ok || dispatch.Numel(shape) == 0 {
			fillValue(out, a.Value)
			return nil
		}
		fillBorder(out, shape, a.Pads, a.Value)
		castInto(alias(out, shape, out.Strides, out.Offset+outSkip), alias(x, shape, x.Strides, x.Offset+xSkip))
		return nil
	})
}

// fillBorder sets to v every element of out (contiguous) outside the box
// of the given shape that pad copies x into, which starts at each padded
// dim's left pad (pads as ops.Padding holds them): for each dim d, the
// slabs before and after the box along d, over the box's extent in the
// dims before d and all of the dims after it. The slabs cover the border
// once each; filling all of out first wrote the inside twice (pad of
// [1024, 1024] took twice torch's time).
func fillBorder(out *dispatch.Tensor, shape, pads []int, v float64) {
	r := out.Rank()
	lo := make([]int, r)
	for i := 0; i+1 < len(pads); i += 2 {
		lo[r-1-i/2] = max(pads[i], 0)
	}
	one := dispatch.NewTensor(out.Device, out.DType, []int{1}, newBuffer(out.DType, 1))
	defer one.Release()
	fillValue(one, v)
	box, zeros := make([]int, r), make([]int, r)
	for d := range r {
		for _, slab := range [2][2]int{{0, lo[d]}, {lo[d] + shape[d], out.Shape[d]}} {
			if slab[1] <= slab[0] {
				continue
			}
			off := out.Offset + slab[0]*out.Strides[d]
			for e := range r {
				switch {
				case e < d:
					box[e] = shape[e]
					off += lo[e] * out.Strides[e]
				case e == d:
					box[e] = slab[1] - slab[0]
				default:
					box[e] = out.Shape[e]
				}
			}
			if dispatch.Numel(box) > 0 {
				castInto(alias(out, slices.Clone(box), out.Strides, off), alias(one, slices.Clone(box), zeros, one.Offset))
			}
		}
	}
}

// alias is a layout over t's storage for the duration of a kernel; unlike
// t.View it takes no reference, so nothing need release it.
func alias(t *dispatch.Tensor, shape, strides []int, offset int) *dispatch.Tensor {
	return &dispatch.Tensor{Shape: shape, Strides: strides, Offset: offset, DType: t.DType, Device: t.Device, Storage: t.Storage}
}

// fillValue sets every element of out (contiguous) to v in out's dtype;
// dispatch has checked that the dtype holds v exactly.
func fillValue(out *dispatch.Tensor, v float64) {
	switch out.DType {
	case dispatch.Float32:
		fillSame(out, float32(v))
	case dispatch.Float64:
		fillSame(out, v)
	case dispatch.Int32:
		fillSame(out, int32(v))
	case dispatch.Int64:
		fillSame(out, int64(v))
	case dispatch.Bool:
		fillSame(out, v != 0)
	case dispatch.Float16:
		fillSame(out, half.Float16(half.Float16FromFloat32(float32(v))))
	case dispatch.BFloat16:
		fillSame(out, half.BFloat16(half.BFloat16FromFloat32(float32(v))))
	case dispatch.Int8:
		fillSame(out, int8(v))
	case dispatch.Uint8:
		fillSame(out, uint8(v))
	}
}

// fillSame sets out's elements to v: memclr where v is all zero bits (a
// pad's zeros, the common case; a -0 is not), else v copied over ever
// longer runs, at memmove's speed either way.
func fillSame[T comparable](out *dispatch.Tensor, v T) {
	o := elems[T](out)[out.Offset : out.Offset+out.Numel()]
	var zero T
	if v == zero && !isNegZero(v) {
		clear(o)
		return
	}
	fill(o, v)
}

// fill sets every element of d to v by copies of doubling length, which
// the runtime's memmove does in vector stores (a loop storing an element at
// a time made the global pooling's gradient of [32,16,32,32] 0.27 ms).
func fill[T any](d []T, v T) {
	if len(d) == 0 {
		return
	}
	d[0] = v
	for n := 1; n < len(d); n *= 2 {
		copy(d[n:], d[:n])
	}
}

// isNegZero reports whether v is a float -0, equal to 0 but not all zero
// bits.
func isNegZero[T comparable](v T) bool {
	switch f := any(v).(type) {
	case float32:
		return math.Signbit(float64(f))
	case float64:
		return math.Signbit(f)
	}
	return false
}

// transposeCopy is copySame for 4-byte elements whose last dim the input
// walks across its rows while the dim before it walks along them (x.T made
// contiguous, NCHW to NHWC): the matrices of those two dims go through
// lathe_transpose32's 8 × 8 tiles, blocks of 64 rows spread over the
// cores. A copy an element at a time read a cache line per element, and
// [1024, 1024].T took 3.5 times torch's time. It reports false for any
// other layout, for matrices under 8 × 8, and where the C loop does not
// run (copySame's element loop then writes the whole output).
func transposeCopy[T any](out, x *dispatch.Tensor, l strided) bool {
	var zero T
	last := len(l.Shape) - 1
	if unsafe.Sizeof(zero) != 4 || last < 1 || !haveAVX2 {
		return false
	}
	k := last - 1
	rows, cols := l.Shape[k], l.Shape[last]
	ldd, lds := l.Strides[0][k], l.Strides[1][last]
	if l.Strides[0][last] != 1 || l.Strides[1][k] != 1 || lds < rows || ldd < cols || rows < 8 || cols < 8 {
		return false
	}
	o, a := bitsOf[uint32](out), bitsOf[uint32](x)
	const block = 64 // rows per task
	blocks := (rows + block - 1) / block
	matrices := dispatch.Numel(l.Shape[:k])
	var declined atomic.Bool // a slice shorter than the layout: a bug, which the element loop then covers
	parallel(matrices*blocks, block*cols, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			// The matrix's offsets in each operand, from its index over
			// the dims before the two.
			bo, ba := l.base[0], l.base[1]
			for d, m := k-1, task/blocks; d >= 0; d-- {
				i := m % l.Shape[d]
				bo, ba, m = bo+i*l.Strides[0][d], ba+i*l.Strides[1][d], m/l.Shape[d]
			}
			r0 := task % blocks * block
			if !transpose32(o[bo+r0*ldd:], a[ba+r0:], min(block, rows-r0), cols, ldd, lds) {
				declined.Store(true)
			}
		}
	})
	return !declined.Load()
}
