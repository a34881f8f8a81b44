package cudaemu_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/lathe-ml/lathe/internal/half"
)

// The dense forms of the elementwise kernels (kernels/cuda/dense.cuh's
// dense_map, behind "<op>_<dtype>"), on the edges of their fast path: sizes
// that are not a multiple of the vector width (the scalar tail), 0 and 1
// elements, views whose element offset leaves them off a 16-byte boundary
// (the whole launch falls back to one element at a time), grids with fewer
// threads than vectors (the grid-stride loop) and more, broadcast periods
// (a single element, a row of whole vectors or not), NaN and Inf, for every
// dtype the templates are instantiated for. Each output sits between
// guard elements that must come back untouched.

// denseSizes cross the vector widths (16 bytes: 16 bools, 4 float32, 2
// float64) and their tails.
var denseSizes = []int{0, 1, 2, 3, 4, 5, 8, 15, 16, 17, 33, 100}

// denseOffsets are element offsets of (out, x, y): all aligned, all off by
// one, one operand off at a time, and out 2 elements in (aligned for a
// 2-byte Vec<u8, 2>, the output of a float64 compare, not for 16 bytes).
var denseOffsets = [][3]int{{0, 0, 0}, {1, 1, 1}, {1, 0, 0}, {0, 1, 0}, {0, 0, 3}, {2, 0, 0}}

// denseGrids are (blocks, threads): fewer threads than vectors, and more.
var denseGrids = [][2]uint32{{1, 4}, {3, 32}}

const guard = 2 // guard elements each side of an output

// putAt copies xs to new memory at element offset off, and returns the
// address of xs[0].
func putAt[T elem](h *host, xs []T, off int) uint64 {
	buf := make([]T, off+len(xs)+1)
	copy(buf[off:], xs)
	return at[T](put(h, buf...), off)
}

// outAt is memory for n outputs at element offset off past guard sentinel
// elements, with as many after: the base and the address of output 0.
func outAt[R elem](h *host, n, off int, sentinel R) (base, p uint64) {
	buf := make([]R, guard+off+n+guard)
	for i := range buf {
		buf[i] = sentinel
	}
	base = put(h, buf...)
	return base, at[R](base, guard+off)
}

// same2 is equality that takes NaN as equal to NaN (x != x only for NaN).
func same2[R elem](a, b R) bool { return a == b || (a != a && b != b) }

// checkOut compares the outputs at p with want and the guards with the
// sentinel.
func checkOut[R elem](t *testing.T, label string, base uint64, off int, want []R, sentinel R) {
	t.Helper()
	n := len(want)
	all := get[R](base, guard+off+n+guard)
	bad := 0
	for i, g := range all {
		w := sentinel
		if j := i - guard - off; j >= 0 && j < n {
			w = want[j]
		}
		if !same2(g, w) {
			if bad < 3 {
				t.Errorf("%s: element %d (output %d) = %v, want %v", label, i, i-guard-off, g, w)
			}
			bad++
		}
	}
}

// binaryDense runs a binary kernel's dense form on every size, offset and
// grid, x and y of out's shape (periods n), against ref.
func binaryDense[T, R elem](t *testing.T, h *host, fn string, gen func(i, k int) T, ref func(a, b T) R, sentinel R) {
	t.Run(fn, func(t *testing.T) {
		for _, n := range denseSizes {
			x, y, want := make([]T, n), make([]T, n), make([]R, n)
			for i := range n {
				x[i], y[i] = gen(i, 0), gen(i, 1)
				want[i] = ref(x[i], y[i])
			}
			for _, off := range denseOffsets {
				for _, g := range denseGrids {
					label := fmt.Sprintf("%s/n=%d/offsets%v/grid%v", fn, n, off, g)
					base, out := outAt(h, n, off[0], sentinel)
					h.launch(fn, g[0], g[1], out, putAt(h, x, off[1]), putAt(h, y, off[2]), int64(n), int64(n), int64(n))
					checkOut(t, label, base, off[0], want, sentinel)
				}
			}
		}
	})
}

// floats32 is a float32 pattern with NaN, ±Inf and -0 among finite values.
func floats32(i, k int) float32 {
	switch (i + 3*k) % 9 {
	case 2:
		return float32(math.NaN())
	case 5:
		return float32(math.Inf(1 - 2*(i%2)))
	case 7:
		return float32(math.Copysign(0, -1))
	}
	return float32(i%13-6) * 0.75 * float32(k+1)
}

func floats64(i, k int) float64 { return float64(floats32(i, k)) * 1.25 }

func TestDenseBinary(t *testing.T) {
	h := newHost(t)
	binaryDense(t, h, "add_f32", floats32, func(a, b float32) float32 { return a + b }, -9)
	binaryDense(t, h, "maximum_f32", floats32, func(a, b float32) float32 {
		if a != a || a > b {
			return a
		}
		return b
	}, -9)
	binaryDense(t, h, "lt_f32", floats32, func(a, b float32) uint8 { return b2u(a < b) }, 9)
	binaryDense(t, h, "mul_f64", floats64, func(a, b float64) float64 { return a * b }, -9)
	binaryDense(t, h, "ne_f64", floats64, func(a, b float64) uint8 { return b2u(a != b) }, 9)
	binaryDense(t, h, "sub_i32", func(i, k int) int32 { return int32(i*7919*(k+1)) - math.MaxInt32/2*int32(k) },
		func(a, b int32) int32 { return a - b }, -9) // wraps, as Go's
	binaryDense(t, h, "add_i64", func(i, k int) int64 { return int64(i-50) * (math.MaxInt64 / 60) * int64(1-2*k) },
		func(a, b int64) int64 { return a + b }, -9)
	binaryDense(t, h, "eq_bool", func(i, k int) uint8 { return uint8((i >> k) & 1) },
		func(a, b uint8) uint8 { return b2u(a == b) }, 9)
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// TestDensePeriods broadcasts one operand of add_f32 and where_f64 as a
// single element (period 1) or a row of p elements repeated over rows
// (period p: whole vectors when p is a multiple of 4 float32 or 2
// float64, else the scalar loop), aligned or not.
func TestDensePeriods(t *testing.T) {
	h := newHost(t)
	for _, p := range []int{1, 2, 3, 4, 6, 8, 12} {
		for _, rows := range []int{1, 2, 5} {
			n := p * rows
			for _, yoff := range []int{0, 1} {
				for _, g := range denseGrids {
					label := fmt.Sprintf("p=%d/rows=%d/yoff=%d/grid%v", p, rows, yoff, g)
					x, y := make([]float32, n), make([]float32, p)
					for i := range x {
						x[i] = floats32(i, 0)
					}
					for j := range y {
						y[j] = float32(100 * (j + 1))
					}
					want, rev := make([]float32, n), make([]float32, n)
					for i := range n {
						want[i], rev[i] = x[i]+y[i%p], y[i%p]-x[i]
					}
					base, out := outAt[float32](h, n, 0, -9)
					h.launch("add_f32", g[0], g[1], out, putAt(h, x, 0), putAt(h, y, yoff), int64(n), int64(n), int64(p))
					checkOut(t, "add_f32/"+label, base, 0, want, -9)
					base, out = outAt[float32](h, n, 0, -9)
					h.launch("sub_f32", g[0], g[1], out, putAt(h, y, yoff), putAt(h, x, 0), int64(n), int64(p), int64(n))
					checkOut(t, "sub_f32/"+label, base, 0, rev, -9)

					// where(c, x, y): c a row of period p, x one element,
					// y of out's shape.
					c, xs, ys := make([]uint8, p), []float64{math.NaN()}, make([]float64, n)
					for j := range c {
						c[j] = uint8(j % 2 * (j + 1)) // any nonzero byte is true
					}
					wantW := make([]float64, n)
					for i := range n {
						ys[i] = floats64(i, 1)
						wantW[i] = ys[i]
						if c[i%p] != 0 {
							wantW[i] = xs[0]
						}
					}
					wb, wo := outAt[float64](h, n, yoff, -9)
					h.launch("where_f64", g[0], g[1], wo, putAt(h, c, yoff), putAt(h, xs, 1), putAt(h, ys, 0),
						int64(n), int64(p), int64(1), int64(n))
					checkOut(t, "where_f64/"+label, wb, yoff, wantW, -9)
				}
			}
		}
	}
}

// unaryDense runs a unary or cast kernel's dense form (out, x, n[, a, b])
// on every size, offset and grid.
func unaryDense[T, R elem](t *testing.T, h *host, fn string, params bool, gen func(i int) T, ref func(T) R, sentinel R) {
	t.Run(fn, func(t *testing.T) {
		for _, n := range denseSizes {
			x, want := make([]T, n), make([]R, n)
			for i := range n {
				x[i] = gen(i)
				want[i] = ref(x[i])
			}
			for _, off := range denseOffsets {
				for _, g := range denseGrids {
					label := fmt.Sprintf("%s/n=%d/offsets%v/grid%v", fn, n, off[:2], g)
					base, out := outAt(h, n, off[0], sentinel)
					args := []any{out, putAt(h, x, off[1]), int64(n)}
					if params {
						args = append(args, 0.0, 0.0)
					}
					h.launch(fn, g[0], g[1], args...)
					checkOut(t, label, base, off[0], want, sentinel)
				}
			}
		}
	})
}

func TestDenseUnaryAndCast(t *testing.T) {
	h := newHost(t)
	f32 := func(i int) float32 { return floats32(i, 0) }
	f64 := func(i int) float64 { return floats64(i, 0) }
	unaryDense(t, h, "relu_f32", true, f32, func(x float32) float32 {
		if x > 0 || x != x {
			return x
		}
		return 0
	}, -9)
	unaryDense(t, h, "sqrt_f32", true, f32, func(x float32) float32 { return float32(math.Sqrt(float64(x))) }, -9)
	unaryDense(t, h, "neg_f64", true, f64, func(x float64) float64 { return -x }, -9)
	unaryDense(t, h, "abs_i32", true, func(i int) int32 { return int32(i - 7) }, func(x int32) int32 { return max(x, -x) }, -9)
	unaryDense(t, h, "square_i64", true, func(i int) int64 { return int64(i-7) << 31 }, func(x int64) int64 { return x * x }, -9)
	unaryDense(t, h, "cast_f32_f64", false, f32, func(x float32) float64 { return float64(x) }, -9)
	unaryDense(t, h, "cast_f64_f32", false, func(i int) float64 { return 1 + float64(i)/3 }, func(x float64) float32 { return float32(x) }, -9)
	unaryDense(t, h, "cast_i64_i32", false, func(i int) int64 { return int64(i) << 30 }, func(x int64) int32 { return int32(x) }, -9)
	unaryDense(t, h, "cast_bool_f32", false, func(i int) uint8 { return b2u(i%3 != 0) }, func(x uint8) float32 { return float32(b2u(x != 0)) }, -9)
	unaryDense(t, h, "cast_f64_bool", false, f64, func(x float64) uint8 { return b2u(x != 0) }, 9)
	unaryDense(t, h, "cast_bool_bool", false, func(i int) uint8 { return uint8(i % 3) }, func(x uint8) uint8 { return b2u(x != 0) }, 9)
}

// TestDenseNarrowConversions: narrow.cu's conversions, which every
// float16, bfloat16, int8 and uint8 op's operands and result pass through,
// are dense_map too (vectors of 4: 8 or 4 bytes of the narrow side);
// TestNarrowConversions checks their rules on aligned whole vectors, this
// their tails and misaligned views.
func TestDenseNarrowConversions(t *testing.T) {
	h := newHost(t)
	bits16 := func(i int) uint16 { return uint16(i*2053 + 0x3bff) } // normals, subnormals, Inf, NaN as i grows
	bits32 := func(i int) uint32 { return math.Float32bits(floats32(i, 0)) + uint32(i)*0x1001 }
	unaryDense(t, h, "convert_f16_f32", false, bits16, func(b uint16) uint32 { return math.Float32bits(half.Float16ToFloat32(b)) }, 9)
	unaryDense(t, h, "convert_bf16_f32", false, bits16, func(b uint16) uint32 { return math.Float32bits(half.BFloat16ToFloat32(b)) }, 9)
	unaryDense(t, h, "convert_f32_f16", false, bits32, func(b uint32) uint16 { return half.Float16FromFloat32(math.Float32frombits(b)) }, 9)
	unaryDense(t, h, "convert_f32_bf16", false, bits32, func(b uint32) uint16 { return half.BFloat16FromFloat32(math.Float32frombits(b)) }, 9)
	unaryDense(t, h, "convert_i32_i8", false, func(i int) int32 { return int32(i*77 - 300) }, func(v int32) int8 { return int8(v) }, 9)
	unaryDense(t, h, "convert_u8_i32", false, func(i int) uint8 { return uint8(i * 37) }, func(v uint8) int32 { return int32(v) }, 9)
}

func TestDenseFill(t *testing.T) {
	h := newHost(t)
	for _, n := range denseSizes {
		for _, off := range []int{0, 1, 3} {
			for _, g := range denseGrids {
				label := fmt.Sprintf("n=%d/off=%d/grid%v", n, off, g)
				fb, fo := outAt[float64](h, n, off, -9)
				h.launch("fill_f64", g[0], g[1], fo, int64(n), 2.5)
				want := make([]float64, n)
				for i := range want {
					want[i] = 2.5
				}
				checkOut(t, "fill_f64/"+label, fb, off, want, -9)
				bb, bo := outAt[uint8](h, n, off, 9)
				h.launch("fill_bool", g[0], g[1], bo, int64(n), 1.0)
				wantB := make([]uint8, n)
				for i := range wantB {
					wantB[i] = 1
				}
				checkOut(t, "fill_bool/"+label, bb, off, wantB, 9)
			}
		}
	}
}
