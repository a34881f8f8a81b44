package cpu

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// halfOp numbers the elementwise ops that shim.c's lathe_half_map computes
// on 16-bit floats without leaving L1: the arithmetic (arith.go's arithOp
// order), relu, and the activations' gradients (actOp's order after
// opGELUBackward).
type halfOp uint8

const (
	halfAdd halfOp = iota
	halfSub
	halfMul
	halfDiv
	halfReLU
	halfReLUBackward
	halfGELUBackward
	halfGELUTanhBackward
	halfSiLUBackward
)

var halfOps = map[string]halfOp{
	"add": halfAdd, "sub": halfSub, "mul": halfMul, "div": halfDiv, "relu": halfReLU, "relu_backward": halfReLUBackward,
	"gelu_backward": halfGELUBackward, "gelu_tanh_backward": halfGELUTanhBackward, "silu_backward": halfSiLUBackward,
}

// fusedHalf computes op where out and every argument are dense 16-bit
// floats of one dtype and shape (a binary arithmetic op's second argument
// may be a single element instead), and reports whether it did. Each
// goroutine's part goes through lathe_half_map, which widens, computes and
// rounds a few hundred values at a time in L1: registerElementwise's blocks
// of L2 made the ResNet block's bfloat16 relu and add half again as slow
// as float32's. The results are the float32 kernels' rounded once, as the
// blocks' are; runs shorter than vectorMin are left to the blocks, whose
// float32 kernels there are Go's (within an ulp of C's for the
// activations' gradients).
func fusedHalf(op halfOp, out *dispatch.Tensor, in []*dispatch.Tensor) bool {
	n := out.Numel()
	if !haveF16C || !dispatch.Halves.Has(out.DType) || n < vectorMin || !out.IsContiguous() {
		return false
	}
	dense := func(t *dispatch.Tensor) bool {
		return t.DType == out.DType && slices.Equal(t.Shape, out.Shape) && t.IsContiguous()
	}
	if !dense(in[0]) {
		return false
	}
	var q []uint16
	var s float32
	bf := out.DType == dispatch.BFloat16
	o, p := bits16(out.Storage.Buffer)[out.Offset:out.Offset+n], bits16(in[0].Storage.Buffer)[in[0].Offset:in[0].Offset+n]
	if len(in) == 2 {
		y := in[1]
		switch {
		case dense(y):
			q = bits16(y.Storage.Buffer)[y.Offset : y.Offset+n]
		case y.DType == out.DType && y.Numel() == 1 && op <= halfDiv:
			v := bits16(y.Storage.Buffer)[y.Offset]
			if s = half.Float16(v).Float32(); bf {
				s = half.BFloat16(v).Float32()
			}
		case y.DType == out.DType && op <= halfDiv:
			return fusedHalfRows(op, bf, o, p, out, in[0], y)
		default:
			return false
		}
	}
	parallel(n, costVector, func(lo, hi int) {
		var qs []uint16
		if q != nil {
			qs = q[lo:hi]
		}
		halfMap(op, bf, o[lo:hi], p[lo:hi], qs, s)
	})
	return true
}

// fusedHalfRows is fusedHalf's arithmetic with y one value per row: the
// collapsed layout of out, x and y is [R, C] with y's strides [1, 0], or
// [A, R, C] with [0, 1, 0] (a channel's bias on an NCHW batch); x is
// dense. Each goroutine's rows go through lathe_half_rows.
func fusedHalfRows(op halfOp, bf bool, o, p []uint16, out, x, y *dispatch.Tensor) bool {
	l := newStrided(out, x, y)
	var period, cols int
	switch {
	case len(l.Shape) == 2 && slices.Equal(l.Strides[2], []int{1, 0}):
		period, cols = l.Shape[0], l.Shape[1]
	case len(l.Shape) == 3 && slices.Equal(l.Strides[2], []int{0, 1, 0}):
		period, cols = l.Shape[1], l.Shape[2]
	default:
		return false
	}
	b := bits16(y.Storage.Buffer)[y.Offset : y.Offset+period]
	parallel(len(o)/cols, cols, func(lo, hi int) {
		halfRows(op, bf, o[lo*cols:hi*cols], p[lo*cols:hi*cols], b, lo, period, cols)
	})
	return true
}
