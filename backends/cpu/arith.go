package cpu

// The four arithmetic ops as whole-row loops (see rows2): one switch per
// row, then a loop with no call in it, which the compiler unrolls and keeps
// free of bounds checks; float32 and float64 rows go to AVX2 loops in C
// where the machine has them (Go does not vectorise). Their results are those of the
// per-element functions in binary.go, bit for bit.

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
)

type arithOp uint8

const (
	opAdd arithOp = iota
	opSub
	opMul
	opDiv
)

var arithOps = map[string]arithOp{"add": opAdd, "sub": opSub, "mul": opMul, "div": opDiv}

func arithRows[T number](op arithOp, at func(a, b T) T) rows2[T, T] {
	return rows2[T, T]{
		vv: func(dst, p, q []T) {
			p, q = p[:len(dst)], q[:len(dst)]
			if d, ok := any(dst).([]float32); ok && arithFloat32(op, d, any(p).([]float32), any(q).([]float32), 0) {
				return
			}
			if d, ok := any(dst).([]float64); ok && arithFloat64(op, d, any(p).([]float64), any(q).([]float64), 0) {
				return
			}
			switch op {
			case opAdd:
				for i := range dst {
					dst[i] = p[i] + q[i]
				}
			case opSub:
				for i := range dst {
					dst[i] = p[i] - q[i]
				}
			case opMul:
				for i := range dst {
					dst[i] = p[i] * q[i]
				}
			case opDiv:
				for i := range dst {
					dst[i] = p[i] / q[i]
				}
			}
		},
		vs: func(dst, p []T, s T) {
			p = p[:len(dst)]
			if d, ok := any(dst).([]float32); ok && arithFloat32(op, d, any(p).([]float32), nil, any(s).(float32)) {
				return
			}
			if d, ok := any(dst).([]float64); ok && arithFloat64(op, d, any(p).([]float64), nil, any(s).(float64)) {
				return
			}
			switch op {
			case opAdd:
				for i := range dst {
					dst[i] = p[i] + s
				}
			case opSub:
				for i := range dst {
					dst[i] = p[i] - s
				}
			case opMul:
				for i := range dst {
					dst[i] = p[i] * s
				}
			case opDiv:
				for i := range dst {
					dst[i] = p[i] / s
				}
			}
		},
		at:   at,
		cost: costVector,
	}
}

// arithBroadcastFloat32 runs a float32 add, sub, mul or div whose one
// operand has out's layout and whose other is a row repeated down the rows
// (a bias: [R, C] + [C]), one value per row ([R, C] - [R, 1]), or one value
// per row of each of A blocks ([A, R, C] + [R, 1], a channel's bias on an
// NCHW image batch) as one C loop per goroutine, and reports whether it
// did. Walked row by row, a row of a few dozen values cost less than its
// call.
func arithBroadcastFloat32(op arithOp, out, x, y *dispatch.Tensor) bool {
	if !haveAVX2 || out.Numel() < vectorMin {
		return false
	}
	l := newStrided(out, x, y)
	if len(l.Shape) == 3 {
		return arithBlocksFloat32(op, l, out, x, y)
	}
	if len(l.Shape) != 2 {
		return false
	}
	rows, cols := l.Shape[0], l.Shape[1]
	dense := []int{cols, 1}
	if !slices.Equal(l.Strides[0], dense) {
		return false
	}
	full, b, fullBase, bBase, bStrides, bLeft := x, y, l.base[1], l.base[2], l.Strides[2], false
	if !slices.Equal(l.Strides[1], dense) {
		full, b, fullBase, bBase, bStrides, bLeft = y, x, l.base[2], l.base[1], l.Strides[1], true
		if !slices.Equal(l.Strides[2], dense) {
			return false
		}
	}
	var perRow bool
	switch {
	case bStrides[0] == 0 && bStrides[1] == 1:
	case bStrides[0] == 1 && bStrides[1] == 0:
		perRow = true
	default:
		return false
	}
	o, f, bv := elems[float32](out)[l.base[0]:], elems[float32](full)[fullBase:], elems[float32](b)[bBase:]
	parallelPieces(rows, cols, func(lo, hi int) {
		bRows := bv
		if perRow {
			bRows = bv[lo:]
		}
		arithBcastFloat32(op, o[lo*cols:], f[lo*cols:], bRows, hi-lo, cols, perRow, bLeft)
	})
	return true
}

// arithBlocksFloat32 is arithBroadcastFloat32 for a collapsed layout [A, R,
// C] whose broadcast operand has strides [0, 1, 0]: the A·R rows of C
// values split over goroutines, each row r against b[r mod R], one C call
// for each run of rows within a block.
func arithBlocksFloat32(op arithOp, l strided, out, x, y *dispatch.Tensor) bool {
	blocks, period, cols := l.Shape[0], l.Shape[1], l.Shape[2]
	dense, per := []int{period * cols, cols, 1}, []int{0, 1, 0}
	if !slices.Equal(l.Strides[0], dense) {
		return false
	}
	full, b, fullBase, bBase, bLeft := x, y, l.base[1], l.base[2], false
	switch {
	case slices.Equal(l.Strides[1], dense) && slices.Equal(l.Strides[2], per):
	case slices.Equal(l.Strides[2], dense) && slices.Equal(l.Strides[1], per):
		full, b, fullBase, bBase, bLeft = y, x, l.base[2], l.base[1], true
	default:
		return false
	}
	o, f, bv := elems[float32](out)[l.base[0]:], elems[float32](full)[fullBase:], elems[float32](b)[bBase:]
	parallelPieces(blocks*period, cols, func(lo, hi int) {
		for r := lo; r < hi; {
			end := min(hi, (r/period+1)*period) // the end of r's block
			arithBcastFloat32(op, o[r*cols:], f[r*cols:], bv[r%period:], end-r, cols, true, bLeft)
			r = end
		}
	})
	return true
}
