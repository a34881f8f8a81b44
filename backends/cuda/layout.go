package cuda

import (
	"encoding/binary"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// The kernels' by-value structs (kernels/cuda/lathe.cuh, matmul.cu) and the
// one way they are written: cBytes. Every field of every struct is 8 bytes,
// so the C layout has no padding and is the Go struct's fields in order,
// little-endian (as every host that runs CUDA here is: x86-64, arm64).
// layout_test.go checks the offsets against those the .cuh states.

// maxRank and maxOperands are LATHE_MAX_RANK and LATHE_MAX_OPERANDS.
const (
	maxRank     = 8
	maxOperands = 4
)

// cLayout is struct Layout: up to four operands walked over one shape.
type cLayout struct {
	Rank   int64
	Shape  [maxRank]int64
	Stride [maxOperands][maxRank]int64
	Offset [maxOperands]int64
}

// cRows is struct Rows: rows of elements (outer dims) each reduced or
// scanned along its inner dims; operand 0 is the output, 1 the input.
type cRows struct {
	OuterRank   int64
	InnerRank   int64
	OuterShape  [maxRank]int64
	OuterStride [2][maxRank]int64
	InnerShape  [maxRank]int64
	InnerStride [2][maxRank]int64
	Offset      [2]int64
}

// cLayout32 is struct Layout32 (kernels/cuda/dense.cuh): a cLayout whose
// index and offsets fit in 31 bits, each dim's size with its divisor by
// multiplication (magic, shift). Every field is 4 bytes.
type cLayout32 struct {
	Rank   int32
	Shape  [maxRank]uint32
	Magic  [maxRank]uint32
	Shift  [maxRank]uint32
	Stride [maxOperands][maxRank]int32
}

// cMatmulStrides is struct MatmulStrides: the batch, row and column
// strides of A, B and C, in elements.
type cMatmulStrides struct {
	A, B, C [3]int64
}

// cBytes is the bytes of one of the c* structs as the kernel receives it.
func cBytes(v any) []byte {
	b, err := binary.Append(nil, binary.LittleEndian, v)
	if err != nil {
		panic("cuda: " + err.Error()) // only the fixed-size c* structs come here
	}
	return b
}

// rankError is what a kernel returns for a walk past the kernels' rank.
func rankError(rank int) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrUnsupported, Found: strconv.Itoa(rank) + " dims",
		Detail: "needs " + strconv.Itoa(rank) + " dims that do not merge, but the cuda kernels walk at most " + strconv.Itoa(maxRank),
		Fix:    "make the tensor contiguous first (.Contiguous()) or reshape it to fewer dims"}
}

// layoutOf is w collapsed (layout.Walk.Collapse) and written as a
// cLayout of up to maxOperands operands.
func layoutOf(w layout.Walk) (cLayout, error) {
	c := w.Collapse()
	var l cLayout
	if c.Rank() > maxRank {
		return l, rankError(c.Rank())
	}
	l.Rank = int64(c.Rank())
	for d, s := range c.Shape {
		l.Shape[d] = int64(s)
		for j := range c.Strides {
			l.Stride[j][d] = int64(c.Strides[j][d])
		}
	}
	return l, nil
}

// fits32 is the most a strided32 kernel's index or offset may be: 2^31 - 1
// (a variable so that the tests can send small walks down the 64-bit path).
var fits32 = 1<<31 - 1

// layout32Of is l as a cLayout32 for a walk of n elements, and whether it
// fits: n and every operand's farthest offset (the sum over dims of
// (size-1)·|stride|, which bounds every partial sum, whatever the strides'
// signs) at most 2^31 - 1. l's offsets must be 0, as layoutOf writes them.
func layout32Of(l cLayout, n int) (cLayout32, bool) {
	var c cLayout32
	if n > fits32 {
		return c, false
	}
	c.Rank = int32(l.Rank)
	for k := range maxOperands {
		var reach int64
		for d := range int(l.Rank) {
			s := l.Stride[k][d]
			reach += (l.Shape[d] - 1) * max(s, -s)
			if reach > int64(fits32) {
				return c, false
			}
			c.Stride[k][d] = int32(s)
		}
	}
	for d := range int(l.Rank) {
		c.Shape[d] = uint32(l.Shape[d])
		c.Magic[d], c.Shift[d] = divisor32(uint32(l.Shape[d]))
	}
	return c, true
}

// divisor32 is the (magic, shift) pair with which dense.cuh's offsets32_of
// divides by d (1 <= d < 2^31) for dividends below 2^31: q = (umulhi(i,
// magic) + i) >> shift, shift the least s with 2^s >= d and magic
// floor(2^32·(2^s - d)/d) + 1, which is below 2^32 as 2^s < 2d (Granlund
// and Montgomery, PLDI 1994).
func divisor32(d uint32) (magic, shift uint32) {
	for uint64(1)<<shift < uint64(d) {
		shift++
	}
	return uint32((uint64(1)<<32*(uint64(1)<<shift-uint64(d)))/uint64(d) + 1), shift
}

// rows writes a cRows from the rows' walk (outer, both operands) and the
// walk within a row (inner, both operands), each collapsed on its own.
func rows(outer, inner layout.Walk) (cRows, error) {
	o, in := outer.Collapse(), inner.Collapse()
	var r cRows
	for _, w := range []layout.Walk{o, in} {
		if w.Rank() > maxRank {
			return r, rankError(w.Rank())
		}
	}
	r.OuterRank, r.InnerRank = int64(o.Rank()), int64(in.Rank())
	for d, s := range o.Shape {
		r.OuterShape[d] = int64(s)
		for j := range 2 {
			r.OuterStride[j][d] = int64(o.Strides[j][d])
		}
	}
	for d, s := range in.Shape {
		r.InnerShape[d] = int64(s)
		for j := range 2 {
			r.InnerStride[j][d] = int64(in.Strides[j][d])
		}
	}
	return r, nil
}

// view is one operand of a launch: the device address of its element 0 and
// its shape and strides in elements. Aliases of part of a tensor (concat's
// and pad's destinations, flip's reversed source) are views whose address is
// moved by an element offset, so the kernels' own offsets stay 0.
type view struct {
	ptr     uint64
	dtype   dispatch.DType
	shape   []int
	strides []int
}

func viewOf(t *dispatch.Tensor) view {
	return view{ptr: addressOf(t), dtype: t.DType, shape: t.Shape, strides: t.Strides}
}

// moved is v with its address moved by off elements (off may be negative:
// the address arithmetic wraps as the device's does).
func (v view) moved(off int) view {
	v.ptr += uint64(int64(off) * int64(v.dtype.Size()))
	return v
}

// contiguous reports whether v's elements lie in row-major order with no gaps.
func (v view) contiguous() bool {
	want := 1
	for i := len(v.shape) - 1; i >= 0; i-- {
		if v.shape[i] != 1 && v.strides[i] != want {
			return false
		}
		want *= v.shape[i]
	}
	return true
}

// broadcastTo is v's strides broadcast to shape (NumPy's rules: missing
// leading dims and size-1 dims get stride 0).
func (v view) broadcastTo(shape []int) []int {
	return layout.BroadcastStridesOf(v.shape, v.strides, shape)
}
