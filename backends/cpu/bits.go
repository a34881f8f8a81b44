package cpu

import (
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
)

// The bitwise ops and the shifts as whole-row loops (rows2), as arith.go's
// arithmetic: one switch per row, then a loop with no call in it. A call
// per element (map2) took and of 2^20 int32s to six times torch's time.
// Their results are binary.go's per-element functions'.

type bitOp uint8

const (
	bitAnd bitOp = iota
	bitOr
	bitXor
	bitShl
	bitShr
)

var bitOps = map[string]bitOp{
	"bitwise_and": bitAnd, "bitwise_or": bitOr, "bitwise_xor": bitXor,
	"bitwise_left_shift": bitShl, "bitwise_right_shift": bitShr,
}

// bitRows is op's row loops for T. A shift count is taken mod T's width,
// as x86's shift (and torch 1.13's cpu) takes it.
func bitRows[T int32 | int64](op bitOp) rows2[T, T] {
	w := T(8*unsafe.Sizeof(T(0)) - 1)
	at := func(a, b T) T {
		switch op {
		case bitAnd:
			return a & b
		case bitOr:
			return a | b
		case bitXor:
			return a ^ b
		case bitShl:
			return a << (b & w)
		}
		return a >> (b & w)
	}
	return rows2[T, T]{
		vv: func(dst, p, q []T) {
			p, q = p[:len(dst)], q[:len(dst)]
			switch op {
			case bitAnd:
				for i := range dst {
					dst[i] = p[i] & q[i]
				}
			case bitOr:
				for i := range dst {
					dst[i] = p[i] | q[i]
				}
			case bitXor:
				for i := range dst {
					dst[i] = p[i] ^ q[i]
				}
			case bitShl:
				for i := range dst {
					dst[i] = p[i] << (q[i] & w)
				}
			case bitShr:
				for i := range dst {
					dst[i] = p[i] >> (q[i] & w)
				}
			}
		},
		vs: func(dst, p []T, s T) {
			p = p[:len(dst)]
			switch op {
			case bitAnd:
				for i := range dst {
					dst[i] = p[i] & s
				}
			case bitOr:
				for i := range dst {
					dst[i] = p[i] | s
				}
			case bitXor:
				for i := range dst {
					dst[i] = p[i] ^ s
				}
			case bitShl:
				for i := range dst {
					dst[i] = p[i] << (s & w)
				}
			case bitShr:
				for i := range dst {
					dst[i] = p[i] >> (s & w)
				}
			}
		},
		at:   at,
		cost: costVector,
	}
}

// bitKernels are op's row loops for int32 and int64, built once.
type bitKernels struct {
	i32 rows2[int32, int32]
	i64 rows2[int64, int64]
}

func newBitKernels(op bitOp) *bitKernels {
	return &bitKernels{bitRows[int32](op), bitRows[int64](op)}
}

// run reports whether x's dtype has a row loop (the 8-bit dtypes reach the
// kernel widened to int32).
func (b *bitKernels) run(out, x, y *dispatch.Tensor) bool {
	switch x.DType {
	case dispatch.Int32:
		mapRows2(out, x, y, b.i32)
	case dispatch.Int64:
		mapRows2(out, x, y, b.i64)
	default:
		return false
	}
	return true
}
