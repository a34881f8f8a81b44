package cpu

import "github.com/lathe-ml/lathe/dispatch/ops"

// float32Unary gives the float32 unary ops that have row loops of their
// own, in place of a call per element through float64 math (via64): erf,
// gelu, exp and sqrt of their own C loops, and those of shim.c's
// lathe_unary_f32.
var float32Unary = map[string]func(p ops.Params) func(dst, src []float32){
	"erf":        fixedRows(erfRows),
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
