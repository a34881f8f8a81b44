package cuda

import (
	"encoding/binary"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
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

// walk is a shape walked by several operands, each with its own strides
// (in elements; 0 along broadcast dims), as the cpu backend's layout.
type walk struct {
	shape   []int
	strides [][]int
}

// collapse drops size-1 dims and merges each dim into the one before it
// when every operand steps over it exactly, so that a contiguous walk
// becomes one dim and most strided ones few. The row-major order of the
// elements, and so each element's offset in every operand, is unchanged;
// a walk of no dims (one element) stays so, and an empty one keeps a dim
// of size 0.
func (w walk) collapse() walk {
	k := len(w.strides)
	out := walk{shape: []int{}, strides: make([][]int, k)}
	for j := range out.strides {
		out.strides[j] = []int{}
	}
	for d, s := range w.shape {
		if s == 0 {
			return walk{shape: []int{0}, strides: zeros(k)}
		}
		if s == 1 {
			continue
		}
		n := len(out.shape)
		merge := n > 0
		for j := 0; merge && j < k; j++ {
			merge = out.strides[j][n-1] == w.strides[j][d]*s
		}
		if merge {
			out.shape[n-1] *= s
			for j := range k {
				out.strides[j][n-1] = w.strides[j][d]
			}
			continue
		}
		out.shape = append(out.shape, s)
		for j := range k {
			out.strides[j] = append(out.strides[j], w.strides[j][d])
		}
	}
	return out
}

func zeros(k int) [][]int {
	z := make([][]int, k)
	for j := range z {
		z[j] = []int{0}
	}
	return z
}

// rankError is what a kernel returns for a walk past the kernels' rank.
func rankError(rank int) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrUnsupported, Found: strconv.Itoa(rank) + " dims",
		Detail: "needs " + strconv.Itoa(rank) + " dims that do not merge, but the cuda kernels walk at most " + strconv.Itoa(maxRank),
		Fix:    "make the tensor contiguous first (.Contiguous()) or reshape it to fewer dims"}
}

// layout is w collapsed and written as a cLayout.
func (w walk) layout() (cLayout, error) {
	c := w.collapse()
	var l cLayout
	if len(c.shape) > maxRank {
		return l, rankError(len(c.shape))
	}
	l.Rank = int64(len(c.shape))
	for d, s := range c.shape {
		l.Shape[d] = int64(s)
		for j := range c.strides {
			l.Stride[j][d] = int64(c.strides[j][d])
		}
	}
	return l, nil
}

// rows writes a cRows from the rows' walk (outer, both operands) and the
// walk within a row (inner, both operands), each collapsed on its own.
func rows(outer, inner walk) (cRows, error) {
	o, in := outer.collapse(), inner.collapse()
	var r cRows
	if len(o.shape) > maxRank {
		return r, rankError(len(o.shape))
	}
	if len(in.shape) > maxRank {
		return r, rankError(len(in.shape))
	}
	r.OuterRank, r.InnerRank = int64(len(o.shape)), int64(len(in.shape))
	for d, s := range o.shape {
		r.OuterShape[d] = int64(s)
		for j := range 2 {
			r.OuterStride[j][d] = int64(o.strides[j][d])
		}
	}
	for d, s := range in.shape {
		r.InnerShape[d] = int64(s)
		for j := range 2 {
			r.InnerStride[j][d] = int64(in.strides[j][d])
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
	s := make([]int, len(shape))
	off := len(shape) - len(v.shape)
	for i := range v.shape {
		if v.shape[i] != 1 {
			s[off+i] = v.strides[i]
		}
	}
	return s
}
