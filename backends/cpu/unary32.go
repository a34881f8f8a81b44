package cpu

import "github.com/lathe-ml/lathe/dispatch/ops"

// float32Unary gives the float32 unary ops that have row loops of their
// own, in place of a call per element through float64 math (via64): erf,
// gelu, exp and sqrt of their own C loops, and those of shim.c's
// lathe_unary_f32.
var float32Unary = map[string]func(p ops.Params) func(dst, src []float32){
	"erf":        fixedRows(erfRows),
	"polygamma":  polygammaRows, // gamma.go
	"lgamma":     vectorUnary64(unary64Lgamma, "lgamma"),
	"digamma":    vectorUnary64(unary64Digamma, "digamma"),
	"erfc":       vectorUnary64(unary64Erfc, "erfc"), // erfc_f32.h
	"gelu":       fixedRows(geluRows),
	"exp":        fixedRows(expRows),
	"sqrt":       fixedRows(sqrtRows),
	"neg":        vectorUnary(unaryNeg, "neg"),
	"abs":        vectorUnary(unaryAbs, "abs"),
	"square":     vectorUnary(unarySquare, "square"),
	"reciprocal": vectorUnary(unaryReciprocal, "reciprocal"),
	"rsqrt":      vectorUnary(unaryRsqrt, "rsqrt"),
	"floor":      vectorUnary(unaryFloor, "floor"),
	"ceil":       vectorUnary(unaryCeil, "ceil"),
	"round":      vectorUnary(unaryRound, "round"),
	"sign":       vectorUnary(unarySign, "sign"),
	"clamp":      vectorUnary(unaryClamp, "clamp"),
	"leaky_relu": vectorUnary(unaryLeakyReLU, "leaky_relu"),
	"sigmoid":    vectorUnary(unarySigmoid, "sigmoid"),
	"silu":       vectorUnary(unarySiLU, "silu"),
	"tanh":       vectorUnary(unaryTanh, "tanh"),
	"gelu_tanh":  vectorUnary(unaryGELUTanh, "gelu_tanh"),
	"log":        vectorUnary64(unary64Log, "log"),
	"log1p":      vectorUnary64(unary64Log1p, "log1p"),
	"expm1":      vectorUnary64(unary64Expm1, "expm1"),
	"sin":        vectorUnary64(unary64Sin, "sin"),
	"cos":        vectorUnary64(unary64Cos, "cos"),
	"softplus":   vectorUnary64(unary64Softplus, "softplus"),
	"tan":        vectorUnary64(unary64Tan, "tan"),
	"sinh":       vectorUnary64(unary64Sinh, "sinh"),
	"cosh":       vectorUnary64(unary64Cosh, "cosh"),
	"asinh":      vectorUnary64(unary64Asinh, "asinh"),
	"acosh":      vectorUnary64(unary64Acosh, "acosh"),
	"atanh":      vectorUnary64(unary64Atanh, "atanh"),
	"atan":       vectorUnary64(unary64Atan, "atan"),
	"asin":       vectorUnary64(unary64Asin, "asin"),
	"acos":       vectorUnary64(unary64Acos, "acos"),
}

// unaryOp numbers shim.c's lathe_unary_f32 ops, in its enum's order.
type unaryOp int

const (
	unaryNeg unaryOp = iota
	unaryAbs
	unarySquare
	unaryReciprocal
	unaryRsqrt
	unaryFloor
	unaryCeil
	unaryRound
	unarySign
	unaryClamp
	unaryLeakyReLU
	unarySigmoid
	unarySiLU
	unaryTanh
	unaryGELUTanh
)

// unary64Op numbers shim.c's lathe_unary64_f32 ops, in its enum's order.
type unary64Op int

const (
	unary64Log unary64Op = iota
	unary64Log1p
	unary64Expm1
	unary64Sin
	unary64Cos
	unary64Softplus
	unary64Tan
	unary64Sinh
	unary64Cosh
	unary64Asinh
	unary64Acosh
	unary64Atanh
	unary64Atan
	unary64Asin
	unary64Acos
	unary64Lgamma
	unary64Digamma
	unary64Trigamma
	unary64Erfc
)

// fixedRows is a row loop that takes no parameters.
func fixedRows(rows func(dst, src []float32)) func(ops.Params) func(dst, src []float32) {
	return func(ops.Params) func(dst, src []float32) { return rows }
}

// vectorUnary is op's row loop: lathe_unary_f32 where it runs (long runs
// on a machine with AVX2), else floatUnary's function of the same name in
// float64 per element. The parameters reach C as float32, as torch's
// float32 kernels take them.
func vectorUnary(op unaryOp, name string) func(ops.Params) func(dst, src []float32) {
	return func(p ops.Params) func(dst, src []float32) {
		f := via64[float32](floatUnary[name](p))
		a, b := float32(p.A), float32(p.B)
		return func(dst, src []float32) {
			if unaryFloat32(op, dst, src, a, b) {
				return
			}
			src = src[:len(dst)]
			for i, v := range src {
				dst[i] = f(v)
			}
		}
	}
}

// vectorUnary64 is op's row loop: lathe_unary64_f32 where it runs, in
// float64 lanes with the parameters as float64 (softplus's beta and
// threshold, as floatUnary takes them), else floatUnary's function of the
// same name per element. The two give the same float32 but where a
// float64 result lies within a few float64 ulps of a float32 rounding
// boundary: there they may differ by an ulp.
func vectorUnary64(op unary64Op, name string) func(ops.Params) func(dst, src []float32) {
	return func(p ops.Params) func(dst, src []float32) {
		f := via64[float32](floatUnary[name](p))
		return func(dst, src []float32) {
			if unary64Float32(op, dst, src[:len(dst)], p.A, p.B) {
				return
			}
			for i, v := range src[:len(dst)] {
				dst[i] = f(v)
			}
		}
	}
}
