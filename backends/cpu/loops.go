package cpu

import "github.com/lathe-ml/lathe/dispatch"

// Generic elementwise loops. Every elementwise kernel is one of these with a
// per-element function; out is the freshly allocated (contiguous) output
// and the inputs are read through their strides, broadcast to out's shape.

type number interface {
	~float32 | ~float64 | ~int32 | ~int64
}

type float interface{ ~float32 | ~float64 }

// flat reports whether every input is contiguous with out's shape, so that
// a loop can walk plain slices: the common case, and the one that must not
// pay for a layout.
func flat(out *dispatch.Tensor, in ...*dispatch.Tensor) bool {
	for _, t := range in {
		if len(t.Shape) != len(out.Shape) || !t.IsContiguous() {
			return false
		}
		for i, s := range t.Shape {
			if s != out.Shape[i] {
				return false
			}
		}
	}
	return out.IsContiguous()
}

// span is the slice of a contiguous tensor's elements.
func span[T any](t *dispatch.Tensor) []T {
	return elems[T](t)[t.Offset : t.Offset+t.Numel()]
}

// map1 is mapRows1 with f called per element: for the ops with no row
// loop of their own, which pay that call (a few nanoseconds an element).
func map1[T, U any](out, x *dispatch.Tensor, f func(T) U) {
	mapRows1(out, x, func(dst []U, src []T) {
		src = src[:len(dst)]
		for i, v := range src {
			dst[i] = f(v)
		}
	}, costLoop)
}

func map2[T, U any](out, x, y *dispatch.Tensor, f func(T, T) U) {
	mapRows2(out, x, y, elementRows(f))
}

// rows2 applies a binary op to runs of elements: vv where both inputs step
// with the output, vs where the rhs is one value for the run (a scalar or a
// broadcast dim), at for one element of any other stride pattern. map2
// builds them from a per-element function; the hot arithmetic ops give
// loops of their own (arith.go), since a call per element costs more than
// an add.
type rows2[T, U any] struct {
	vv   func(dst []U, p, q []T)
	vs   func(dst []U, p []T, s T)
	at   func(a, b T) U
	cost int // of an element of vv, for parallel: costVector or costLoop
}

func elementRows[T, U any](f func(T, T) U) rows2[T, U] {
	return rows2[T, U]{
		vv: func(dst []U, p, q []T) {
			q = q[:len(dst)]
			for i := range dst {
				dst[i] = f(p[i], q[i])
			}
		},
		vs: func(dst []U, p []T, s T) {
			for i := range dst {
				dst[i] = f(p[i], s)
			}
		},
		at:   f,
		cost: costLoop,
	}
}

func mapRows2[T, U any](out, x, y *dispatch.Tensor, r rows2[T, U]) {
	if y.Numel() == 1 && flat(out, x) {
		// A tensor with a scalar (x·s, x + s): the row the strided walk
		// below would make, without the walk's dozen allocations, which
		// made a scalar op on a small tensor cost three binary ops.
		o, a, s := span[U](out), span[T](x), elems[T](y)[y.Offset]
		if len(o) == 1 {
			// One element is vv's, as the walk takes it.
			r.vv(o, a, elems[T](y)[y.Offset:y.Offset+1])
			return
		}
		if len(o)*r.cost < minParallel {
			r.vs(o, a, s)
			return
		}
		parallelPieces(len(o), r.cost, func(lo, hi int) { r.vs(o[lo:hi], a[lo:hi], s) })
		return
	}
	if flat(out, x, y) {
		o, a, b := span[U](out), span[T](x), span[T](y)
		if len(o)*r.cost < minParallel {
			r.vv(o, a, b) // no closure for parallel to allocate
			return
		}
		parallelPieces(len(o), r.cost, func(lo, hi int) { r.vv(o[lo:hi], a[lo:hi], b[lo:hi]) })
		return
	}
	o, a, b := elems[U](out), elems[T](x), elems[T](y)
	l := newStrided(out, x, y)
	last := len(l.Shape) - 1
	so, sa, sb := l.Strides[0][last], l.Strides[1][last], l.Strides[2][last]
	l.eachRun(r.cost, func(offs []int, n int) {
		oo, ao, bo := offs[0], offs[1], offs[2]
		switch {
		case so == 1 && sa == 1 && sb == 1:
			r.vv(o[oo:oo+n], a[ao:ao+n], b[bo:bo+n])
		case so == 1 && sa == 1 && sb == 0: // tensor with a scalar
			r.vs(o[oo:oo+n], a[ao:ao+n], b[bo])
		case so == 1 && sa == 0 && sb == 1: // a scalar with a tensor: an expanded gradient
			splatRows(o[oo:oo+n], a[ao], b[bo:bo+n], r.vv)
		default:
			for i := range n {
				o[oo+i*so] = r.at(a[ao+i*sa], b[bo+i*sb])
			}
		}
	})
}

// splatRows is vv over dst with a first operand of one value, s, repeated:
// splatChunk copies of it at a time, so that a row kernel of two runs (a C
// loop, for the activations' gradients) serves the gradient that a sum or
// a mean hands back, an expanded view whose one value each element reads.
// The per-element path took gelu's backward to ten times torch's time.
func splatRows[T, U any](dst []U, s T, q []T, vv func(dst []U, p, q []T)) {
	if len(dst) == 0 {
		return
	}
	// Chunks of one length, at least splatChunk/2 where there are several,
	// so that none falls below the C loops' vectorMin where the whole run
	// would not (they and the Go loops round differently). The copies
	// escape to the heap (vv is a function value), so they are made to the
	// chunk's length: an array of splatChunk was 8 KiB of Go heap for every
	// row, a row of 8 values as well (RMSNorm's step on [3, 4, 8]: 100 KB).
	chunks := (len(dst) + splatChunk - 1) / splatChunk
	p := make([]T, (len(dst)+chunks-1)/chunks)
	for i := range p {
		p[i] = s
	}
	for lo := 0; lo < len(dst); lo += len(p) {
		hi := min(lo+len(p), len(dst))
		vv(dst[lo:hi], p[:hi-lo], q[lo:hi])
	}
}

// splatChunk is the most copies of the scalar splatRows makes: 8 KiB of
// float32, a call of the C loops per 2048 values or fewer.
const splatChunk = 2048

// via64 lifts a float64 function to a float dtype. Math functions are
// evaluated in float64 and rounded once, which is at least as accurate as
// PyTorch's float32 kernels.
func via64[T float](f func(float64) float64) func(T) T {
	return func(x T) T { return T(f(float64(x))) }
}

func via64x2[T float](f func(a, b float64) float64) func(T, T) T {
	return func(x, y T) T { return T(f(float64(x), float64(y))) }
}

func viaInt[T ~int32 | ~int64](f func(int64) int64) func(T) T {
	return func(x T) T { return T(f(int64(x))) }
}
