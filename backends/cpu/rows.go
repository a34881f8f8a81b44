package cpu

import (
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// Row loops for the elementwise ops that training spends its time in
// besides arithmetic (arith.go): comparisons, where and relu (measured on
// lathe-bench's ResNet block step, where their per-element calls and
// mispredicted branches took 26 of 77 ms). Each loop has
// the op written out, not called through a function value, so the compiler
// keeps it free of calls; their results are those of the per-element
// functions, bit for bit.

type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

var cmpOps = map[string]cmpOp{"eq": opEq, "ne": opNe, "lt": opLt, "le": opLe, "gt": opGt, "ge": opGe}

// cmp is one comparison of a and b.
func cmp[T number](op cmpOp, a, b T) bool {
	switch op {
	case opEq:
		return a == b
	case opNe:
		return a != b
	case opLt:
		return a < b
	case opLe:
		return a <= b
	case opGt:
		return a > b
	}
	return a >= b
}

// compareRows is op as rows2 loops; the switch is outside each loop.
// float32 and int32 runs go to C's lanes (compare32).
func compareRows[T number](op cmpOp) rows2[T, bool] {
	return rows2[T, bool]{
		vv: func(dst []bool, p, q []T) {
			p, q = p[:len(dst)], q[:len(dst)]
			var zero T
			if compare32(op, dst, p, q, zero) {
				return
			}
			switch op {
			case opEq:
				for i := range dst {
					dst[i] = p[i] == q[i]
				}
			case opNe:
				for i := range dst {
					dst[i] = p[i] != q[i]
				}
			case opLt:
				for i := range dst {
					dst[i] = p[i] < q[i]
				}
			case opLe:
				for i := range dst {
					dst[i] = p[i] <= q[i]
				}
			case opGt:
				for i := range dst {
					dst[i] = p[i] > q[i]
				}
			case opGe:
				for i := range dst {
					dst[i] = p[i] >= q[i]
				}
			}
		},
		vs: func(dst []bool, p []T, s T) {
			p = p[:len(dst)]
			if compare32(op, dst, p, nil, s) {
				return
			}
			switch op {
			case opEq:
				for i := range dst {
					dst[i] = p[i] == s
				}
			case opNe:
				for i := range dst {
					dst[i] = p[i] != s
				}
			case opLt:
				for i := range dst {
					dst[i] = p[i] < s
				}
			case opLe:
				for i := range dst {
					dst[i] = p[i] <= s
				}
			case opGt:
				for i := range dst {
					dst[i] = p[i] > s
				}
			case opGe:
				for i := range dst {
					dst[i] = p[i] >= s
				}
			}
		},
		at:   func(a, b T) bool { return cmp(op, a, b) },
		cost: costLoop,
	}
}

// compareKernels are one comparison's loops per dtype, built once.
type compareKernels struct {
	f32 rows2[float32, bool]
	f64 rows2[float64, bool]
	i32 rows2[int32, bool]
	i64 rows2[int64, bool]
}

func newCompareKernels(op cmpOp) *compareKernels {
	return &compareKernels{compareRows[float32](op), compareRows[float64](op), compareRows[int32](op), compareRows[int64](op)}
}

// run compares x and y; it reports false for a dtype it has no loop for
// (bool), which the caller handles.
func (c *compareKernels) run(out, x, y *dispatch.Tensor) bool {
	switch x.DType {
	case dispatch.Float32:
		mapRows2(out, x, y, c.f32)
	case dispatch.Float64:
		mapRows2(out, x, y, c.f64)
	case dispatch.Int32:
		mapRows2(out, x, y, c.i32)
	case dispatch.Int64:
		mapRows2(out, x, y, c.i64)
	default:
		return false
	}
	return true
}

// where writes cond ? x : y. It works on the elements' bits (U is the
// unsigned integer of the element's size) with a mask instead of a branch, since masks
// from data are unpredictable; the runs that gradient rules make (a mask, a
// tensor and a broadcast scalar zero) get loops of their own, in C's lanes
// for 4- and 8-byte elements (whereBits).
func where[U uint8 | uint16 | uint32 | uint64](out, cond, x, y *dispatch.Tensor) {
	o, c, a, b := bitsOf[U](out), elems[bool](cond), bitsOf[U](x), bitsOf[U](y)
	l := newStrided(out, cond, x, y)
	last := len(l.Shape) - 1
	so, sc, sa, sb := l.Strides[0][last], l.Strides[1][last], l.Strides[2][last], l.Strides[3][last]
	l.rows(func(offs []int, n int) {
		oo, co, ao, bo := offs[0], offs[1], offs[2], offs[3]
		switch {
		case so == 1 && sc == 1 && sa == 1 && sb == 1:
			dst, m, p, q := o[oo:oo+n], c[co:co+n], a[ao:ao+n], b[bo:bo+n]
			if whereBits(dst, m, p, q, 0, 0) {
				return
			}
			for i := range dst {
				k := mask[U](m[i])
				dst[i] = p[i]&k | q[i]&^k
			}
		case so == 1 && sc == 1 && sa == 1 && sb == 0:
			dst, m, p, s := o[oo:oo+n], c[co:co+n], a[ao:ao+n], b[bo]
			if whereBits(dst, m, p, nil, 0, s) {
				return
			}
			for i := range dst {
				k := mask[U](m[i])
				dst[i] = p[i]&k | s&^k
			}
		case so == 1 && sc == 1 && sa == 0 && sb == 1:
			dst, m, s, q := o[oo:oo+n], c[co:co+n], a[ao], b[bo:bo+n]
			if whereBits(dst, m, nil, q, s, 0) {
				return
			}
			for i := range dst {
				k := mask[U](m[i])
				dst[i] = s&k | q[i]&^k
			}
		default:
			for i := range n {
				k := mask[U](c[co+i*sc])
				o[oo+i*so] = a[ao+i*sa]&k | b[bo+i*sb]&^k
			}
		}
	})
}

// mask is all ones for true and zero for false, without a branch: a Go
// bool is one byte holding 0 or 1.
func mask[U uint8 | uint16 | uint32 | uint64](c bool) U { return -U(*(*uint8)(unsafe.Pointer(&c))) }

// bitsOf is a cpu tensor's storage as unsigned integers of its element
// size, for loops that move elements without looking at them.
func bitsOf[U uint8 | uint16 | uint32 | uint64](t *dispatch.Tensor) []U {
	var data unsafe.Pointer
	var n int
	switch b := t.Storage.Buffer.(type) {
	case *buffer[float32]:
		data, n = unsafe.Pointer(unsafe.SliceData(b.data)), len(b.data)
	case *buffer[float64]:
		data, n = unsafe.Pointer(unsafe.SliceData(b.data)), len(b.data)
	case *buffer[int32]:
		data, n = unsafe.Pointer(unsafe.SliceData(b.data)), len(b.data)
	case *buffer[int64]:
		data, n = unsafe.Pointer(unsafe.SliceData(b.data)), len(b.data)
	case *buffer[bool]:
		data, n = unsafe.Pointer(unsafe.SliceData(b.data)), len(b.data)
	case *buffer[half.Float16]:
		data, n = unsafe.Pointer(unsafe.SliceData(b.data)), len(b.data)
	case *buffer[half.BFloat16]:
		data, n = unsafe.Pointer(unsafe.SliceData(b.data)), len(b.data)
	case *buffer[int8]:
		data, n = unsafe.Pointer(unsafe.SliceData(b.data)), len(b.data)
	case *buffer[uint8]:
		data, n = unsafe.Pointer(unsafe.SliceData(b.data)), len(b.data)
	}
	return unsafe.Slice((*U)(data), n)
}

// reluRows is relu on a run. Go's max keeps NaN and turns -0 into 0, as
// reluF does, and compiles without a branch, which matters: on data of
// either sign a branch is mispredicted half the time.
func reluRows[T float](dst, src []T) {
	src = src[:len(dst)]
	if d, ok := any(dst).([]float32); ok && reluFloat32(d, any(src).([]float32)) {
		return
	}
	for i, v := range src {
		dst[i] = max(v, 0)
	}
}

// mapRows1 applies rows, a loop over a run of elements, to x into out:
// over the whole tensors where both are flat, over each row where both
// step by one element along the last dimension, and element by element
// (runs of one) otherwise. cost is an element's (costVector, costLoop).
// Unlike map1, it makes no call per element of a run.
func mapRows1[T, U any](out, x *dispatch.Tensor, rows func(dst []U, src []T), cost int) {
	if flat(out, x) {
		o, a := span[U](out), span[T](x)
		if len(o)*cost < minParallel {
			rows(o, a)
			return
		}
		parallelPieces(len(o), cost, func(lo, hi int) { rows(o[lo:hi], a[lo:hi]) })
		return
	}
	o, a := elems[U](out), elems[T](x)
	l := newStrided(out, x)
	last := len(l.Shape) - 1
	so, sa := l.Strides[0][last], l.Strides[1][last]
	l.eachRun(cost, func(offs []int, n int) {
		oo, ao := offs[0], offs[1]
		if so == 1 && sa == 1 {
			rows(o[oo:oo+n], a[ao:ao+n])
			return
		}
		for i := range n {
			rows(o[oo+i*so:][:1], a[ao+i*sa:][:1])
		}
	})
}
