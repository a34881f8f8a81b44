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
