package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// binaryKernel holds one binary op's element functions, one per dtype family;
// nil where the op does not take that family.
type binaryKernel struct {
	f32  func(a, b float32) float32
	f64  func(a, b float64) float64
	i32  func(a, b int32) int32
	i64  func(a, b int64) int64
	cmpF func(a, b float64) bool // comparisons, floats and ints alike
	cmpI func(a, b int64) bool
}

func arith[T number]() (func(a, b T) T, func(a, b T) T, func(a, b T) T, func(a, b T) T, func(a, b T) T) {
	return func(a, b T) T { return a + b },
		func(a, b T) T { return a - b },
		func(a, b T) T { return a * b },
		func(a, b T) T {
			if a != a || a > b {
				return a // NaN propagates, as in torch.maximum
			}
			return b
		},
		func(a, b T) T {
			if a != a || a < b {
				return a
			}
			return b
		}
}

func binaryKernels() map[string]binaryKernel {
	k := map[string]binaryKernel{}
	a32, s32, m32, max32, min32 := arith[float32]()
	a64, s64, m64, max64, min64 := arith[float64]()
	ai32, si32, mi32, maxi32, mini32 := arith[int32]()
	ai64, si64, mi64, maxi64, mini64 := arith[int64]()
	k["add"] = binaryKernel{f32: a32, f64: a64, i32: ai32, i64: ai64}
	k["sub"] = binaryKernel{f32: s32, f64: s64, i32: si32, i64: si64}
	k["mul"] = binaryKernel{f32: m32, f64: m64, i32: mi32, i64: mi64}
	k["maximum"] = binaryKernel{f32: max32, f64: max64, i32: maxi32, i64: maxi64}
	k["minimum"] = binaryKernel{f32: min32, f64: min64, i32: mini32, i64: mini64}
	k["div"] = binaryKernel{f32: func(a, b float32) float32 { return a / b }, f64: func(a, b float64) float64 { return a / b }}
	k["atan2"] = binaryKernel{f32: via64x2[float32](math.Atan2), f64: math.Atan2}
	k["special_zeta"] = binaryKernel{f32: via64x2[float32](zeta), f64: zeta}  // gamma.go
	k["igamma"] = binaryKernel{f32: via64x2[float32](igamma), f64: igamma}    // igamma.go
	k["igammac"] = binaryKernel{f32: via64x2[float32](igammac), f64: igammac} // igamma.go
	k["pow"] = binaryKernel{f32: via64x2[float32](math.Pow), f64: math.Pow,
		i32: func(a, b int32) int32 { return int32(ipow(int64(a), int64(b))) }, i64: ipow}
	k["fmod"] = binaryKernel{f32: via64x2[float32](math.Mod), f64: math.Mod, i32: fmodInt[int32], i64: fmodInt[int64]}
	k["remainder"] = binaryKernel{f32: remainder(via64x2[float32](math.Mod)), f64: remainder(math.Mod),
		i32: remainder(fmodInt[int32]), i64: remainder(fmodInt[int64])}
	k["floor_divide"] = binaryKernel{i32: floorDivide[int32], i64: floorDivide[int64]}
	k["gcd"] = binaryKernel{i32: gcd[int32], i64: gcd[int64]}
	k["gelu_backward"] = binaryKernel{f32: geluBackward32, f64: geluBackward}
	k["gelu_tanh_backward"] = binaryKernel{f32: via64x2[float32](geluTanhBackward), f64: geluTanhBackward}
	k["silu_backward"] = binaryKernel{f32: via64x2[float32](siluBackward), f64: siluBackward}
	k["relu_backward"] = binaryKernel{f32: reluBackward[float32], f64: reluBackward[float64]}
	k["eq"] = binaryKernel{cmpF: func(a, b float64) bool { return a == b }, cmpI: func(a, b int64) bool { return a == b }}
	k["ne"] = binaryKernel{cmpF: func(a, b float64) bool { return a != b }, cmpI: func(a, b int64) bool { return a != b }}
	k["lt"] = binaryKernel{cmpF: func(a, b float64) bool { return a < b }, cmpI: func(a, b int64) bool { return a < b }}
	k["le"] = binaryKernel{cmpF: func(a, b float64) bool { return a <= b }, cmpI: func(a, b int64) bool { return a <= b }}
	k["gt"] = binaryKernel{cmpF: func(a, b float64) bool { return a > b }, cmpI: func(a, b int64) bool { return a > b }}
	k["ge"] = binaryKernel{cmpF: func(a, b float64) bool { return a >= b }, cmpI: func(a, b int64) bool { return a >= b }}
	return k
}

// fmodInt is C's integer %, which truncates, as Go's does; callers have
// refused a zero divisor, for which it gives 0 rather than panic. (Go's %
// gives 0 for the least integer over -1.)
// binaryOp numbers shim.c's lathe_binary_f32 ops, in its enum's order.
type binaryOp int

const (
	binaryMaximum binaryOp = iota
	binaryMinimum
	binaryFMod
	binaryRemainder
	binaryPow
	binaryAtan2
)

// vectorBinaryRows is op's float32 row loops: lathe_binary_f32 where it
// runs (long runs on a machine with AVX2), else f per element, which gives
// the same values; cost is an element's.
func vectorBinaryRows(op binaryOp, f func(a, b float32) float32, cost int) rows2[float32, float32] {
	return rows2[float32, float32]{
		vv: func(dst, p, q []float32) {
			p, q = p[:len(dst)], q[:len(dst)]
			if binaryFloat32(op, dst, p, q, 0) {
				return
			}
			for i := range dst {
				dst[i] = f(p[i], q[i])
			}
		},
		vs: func(dst, p []float32, s float32) {
			p = p[:len(dst)]
			if binaryFloat32(op, dst, p, nil, s) {
				return
			}
			for i := range dst {
				dst[i] = f(p[i], s)
			}
		},
		at:   f,
		cost: cost,
	}
}

// Pow with an exponent of one element (x.PowScalar(s), or a 0-d or
// one-element tensor) is torch's pow with a scalar exponent, whatever x's
// size and layout: the exponents that torch's kernel takes apart become
// what it takes instead, in x's dtype as torch's: the square for 2, x·x·x
// for 3 and 1/(x·x) for -2 (two roundings), the square root for 0.5 and
// its reciprocal for -0.5 (so -0 and -Inf give -0 and NaN, where C's pow
// gives +0 and +Inf), the reciprocal for -1. Any other exponent, and an
// exponent tensor of more elements (torch's pow of two tensors), is C's
// pow (math.Pow's values). x.PowScalar(2) took 540 times torch's time,
// and PowScalar(3) 245, before the row loops.

// powByExponent32 are float32's taken-apart exponents, as row loops (the
// C loops where they run; dst may be src: each reads an element before it
// writes it).
var powByExponent32 = func() map[float32]func(dst, src []float32) {
	by := map[float32]func(dst, src []float32){}
	for s, name := range map[float32]string{2: "square", 0.5: "sqrt", -0.5: "rsqrt", -1: "reciprocal"} {
		by[s] = float32Unary[name](ops.Params{})
	}
	square, reciprocal := by[2], by[-1]
	by[3] = func(dst, src []float32) {
		src = src[:len(dst)]
		if arithFloat32(opMul, dst, src, src, 0) && arithFloat32(opMul, dst, dst, src, 0) {
			return
		}
		for i, v := range src {
			dst[i] = v * v * v
		}
	}
	by[-2] = func(dst, src []float32) {
		square(dst, src)
		reciprocal(dst, dst)
	}
	return by
}()

// powByExponent64 are float64's, as Go loops.
var powByExponent64 = map[float64]func(dst, src []float64){
	2:    func(dst, src []float64) { eachOf(dst, src, func(v float64) float64 { return v * v }) },
	3:    func(dst, src []float64) { eachOf(dst, src, func(v float64) float64 { return v * v * v }) },
	-2:   func(dst, src []float64) { eachOf(dst, src, func(v float64) float64 { return 1 / (v * v) }) },
	-1:   func(dst, src []float64) { eachOf(dst, src, func(v float64) float64 { return 1 / v }) },
	0.5:  func(dst, src []float64) { eachOf(dst, src, math.Sqrt) },
	-0.5: func(dst, src []float64) { eachOf(dst, src, func(v float64) float64 { return 1 / math.Sqrt(v) }) },
}

// eachOf sets dst[i] to f(src[i]).
func eachOf(dst, src []float64, f func(float64) float64) {
	for i, v := range src[:len(dst)] {
		dst[i] = f(v)
	}
}

// powByScalar runs a float pow whose exponent y has one element that
// torch takes apart (powByExponent32, powByExponent64) and reports
// whether it did; C's pow serves the rest.
func powByScalar(out, x, y *dispatch.Tensor) bool {
	if y.Numel() != 1 {
		return false
	}
	switch x.DType {
	case dispatch.Float32:
		if rows, ok := powByExponent32[elems[float32](y)[y.Offset]]; ok {
			mapRows1(out, x, rows, costVector)
			return true
		}
	case dispatch.Float64:
		if rows, ok := powByExponent64[elems[float64](y)[y.Offset]]; ok {
			mapRows1(out, x, rows, costLoop)
			return true
		}
	}
	return false
}

func fmodInt[T int32 | int64](a, b T) T {
	if b == 0 {
		return 0
	}
	return a % b
}

// floorDivide is a/b rounded down, Python's //, as torch's
// div_floor_integer: the truncated quotient, one less where the remainder
// is nonzero and its sign is not b's. Callers have refused a zero b, for
// which it gives 0; the least integer over -1 wraps to itself, as Go's /
// does.
func floorDivide[T int32 | int64](a, b T) T {
	if b == 0 {
		return 0
	}
	q, r := a/b, a%b
	if r != 0 && (r < 0) != (b < 0) {
		q--
	}
	return q
}

// gcd is torch's calc_gcd: Euclid's algorithm on |a| and |b|, where the
// least integer's absolute value wraps to itself (so its gcd with 0 is
// negative, as torch's).
func gcd[T int32 | int64](a, b T) T {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for a != 0 {
		a, b = fmodInt(b, a), a
	}
	return b
}

// remainder is torch.remainder from fmod: a nonzero remainder whose sign
// is not b's moves by b, so the result takes b's sign (ATen's
// BinaryOpsKernel.cpp). math.Mod, C's fmod, is exact, and float32's is
// float64's rounded back, which it holds exactly.
func remainder[T number](fmod func(a, b T) T) func(a, b T) T {
	return func(a, b T) T {
		m := fmod(a, b)
		if m != 0 && (b < 0) != (m < 0) {
			m += b
		}
		return m
	}
}

// ipow is integer power by squaring; callers have refused negative exponents.
func ipow(a, b int64) int64 {
	r := int64(1)
	for b > 0 {
		if b&1 == 1 {
			r *= a
		}
		a *= a
		b >>= 1
	}
	return r
}

func init() {
	kernels := binaryKernels()
	for _, b := range ops.BinaryOps {
		name := b.Name
		if name == "logical_and" || name == "logical_or" {
			continue
		}
		k := kernels[name]
		var ar *arithKernels // built once here, not per call: closures allocate
		if op, ok := arithOps[name]; ok {
			ar = newArithKernels(op, k)
		}
		var cr *compareKernels
		if op, ok := cmpOps[name]; ok {
			cr = newCompareKernels(op)
		}
		var br *bitKernels
		if op, ok := bitOps[name]; ok {
			br = newBitKernels(op)
		}
		rows32, hasRows32 := float32Binary[name]
		pow := b.Op == ops.Pow
		registerElementwise(b.Op, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
			x, y := in[0], in[1]
			if pow && powByScalar(out, x, y) {
				return nil
			}
			if hasRows32 && x.DType == dispatch.Float32 {
				mapRows2(out, x, y, rows32)
				return nil
			}
			if cr != nil && cr.run(out, x, y) {
				return nil
			}
			if br != nil && br.run(out, x, y) {
				return nil
			}
			if k.cmpF != nil {
				compare(out, x, y, k.cmpF, k.cmpI)
				return nil
			}
			if ar != nil {
				return ar.run(out, x, y, name)
			}
			switch x.DType {
			case dispatch.Float32:
				map2(out, x, y, k.f32)
			case dispatch.Float64:
				map2(out, x, y, k.f64)
			case dispatch.Int32:
				map2(out, x, y, k.i32)
			case dispatch.Int64:
				map2(out, x, y, k.i64)
			default:
				return dispatch.Unsupported(out.Device, name, x.DType)
			}
			return nil
		})
	}
	register(ops.LogicalAnd, logical(func(a, b bool) bool { return a && b }))
	register(ops.LogicalOr, logical(func(a, b bool) bool { return a || b }))
}

// arithKernels are add, sub, mul or div as row loops (arith.go), per dtype.
type arithKernels struct {
	op  arithOp
	f32 rows2[float32, float32]
	f64 rows2[float64, float64]
	i32 rows2[int32, int32]
	i64 rows2[int64, int64]
}

func newArithKernels(op arithOp, k binaryKernel) *arithKernels {
	return &arithKernels{op, arithRows(op, k.f32), arithRows(op, k.f64), arithRows(op, k.i32), arithRows(op, k.i64)}
}

func (a *arithKernels) run(out, x, y *dispatch.Tensor, name string) error {
	switch x.DType {
	case dispatch.Float32:
		if !flat(out, x, y) && arithBroadcastFloat32(a.op, out, x, y) {
			return nil
		}
		mapRows2(out, x, y, a.f32)
	case dispatch.Float64:
		mapRows2(out, x, y, a.f64)
	case dispatch.Int32:
		mapRows2(out, x, y, a.i32)
	case dispatch.Int64:
		mapRows2(out, x, y, a.i64)
	default:
		return dispatch.Unsupported(out.Device, name, x.DType)
	}
	return nil
}

func compare(out, x, y *dispatch.Tensor, cf func(a, b float64) bool, ci func(a, b int64) bool) {
	switch x.DType {
	case dispatch.Float32:
		map2(out, x, y, func(a, b float32) bool { return cf(float64(a), float64(b)) })
	case dispatch.Float64:
		map2(out, x, y, cf)
	case dispatch.Int32:
		map2(out, x, y, func(a, b int32) bool { return ci(int64(a), int64(b)) })
	case dispatch.Int64:
		map2(out, x, y, ci)
	case dispatch.Bool:
		toI := func(v bool) int64 {
			if v {
				return 1
			}
			return 0
		}
		map2(out, x, y, func(a, b bool) bool { return ci(toI(a), toI(b)) })
	}
}

func logical(f func(a, b bool) bool) dispatch.Kernel[dispatch.None] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		map2(out, truth(in[0]), truth(in[1]), f)
		return nil
	}
}
