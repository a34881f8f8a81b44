package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// float64Unary gives the float64 unary ops that have row loops of their
// own: floatUnary's functions named in a loop, where the compiler calls
// (or inlines) them directly, in place of map1's call through a function
// value per element (neg of 524k float64s took 583 µs), each giving its
// floatUnary function's values exactly; and exp, log, tanh, sigmoid, silu,
// sin and cos in C's float64 lanes (vectorFloat64).
var float64Unary = map[string]func(p ops.Params) func(dst, src []float64){
	"neg": fixed64(func(dst, src []float64) {
		for i, v := range src[:len(dst)] {
			dst[i] = -v
		}
	}),
	"abs": fixed64(func(dst, src []float64) {
		for i, v := range src[:len(dst)] {
			dst[i] = math.Abs(v)
		}
	}),
	"square": fixed64(func(dst, src []float64) {
		for i, v := range src[:len(dst)] {
			dst[i] = v * v
		}
	}),
	"reciprocal": fixed64(func(dst, src []float64) {
		for i, v := range src[:len(dst)] {
			dst[i] = 1 / v
		}
	}),
	"sign": fixed64(func(dst, src []float64) {
		for i, v := range src[:len(dst)] {
			dst[i] = signF(v)
		}
	}),
	"floor": fixed64(func(dst, src []float64) {
		for i, v := range src[:len(dst)] {
			dst[i] = math.Floor(v)
		}
	}),
	"ceil": fixed64(func(dst, src []float64) {
		for i, v := range src[:len(dst)] {
			dst[i] = math.Ceil(v)
		}
	}),
	"round": fixed64(func(dst, src []float64) {
		for i, v := range src[:len(dst)] {
			dst[i] = math.RoundToEven(v)
		}
	}),
	"clamp": func(p ops.Params) func(dst, src []float64) {
		return func(dst, src []float64) {
			for i, v := range src[:len(dst)] {
				dst[i] = clampF(v, p.A, p.B)
			}
		}
	},
	"leaky_relu": func(p ops.Params) func(dst, src []float64) {
		return func(dst, src []float64) {
			for i, v := range src[:len(dst)] {
				dst[i] = leakyF(v, p.A)
			}
		}
	},
	"exp":     vectorFloat64(f64Exp, "exp"),
	"log":     vectorFloat64(f64Log, "log"),
	"tanh":    vectorFloat64(f64Tanh, "tanh"),
	"sigmoid": vectorFloat64(f64Sigmoid, "sigmoid"),
	"silu":    vectorFloat64(f64SiLU, "silu"),
	"sin":     vectorFloat64(f64Sin, "sin"),
	"cos":     vectorFloat64(f64Cos, "cos"),
}

// float64Op numbers unary_f64.h's ops, in its enum's order.
type float64Op int

const (
	f64Exp float64Op = iota
	f64Log
	f64Tanh
	f64Sigmoid
	f64SiLU
	f64Sin
	f64Cos
)

// vectorFloat64 is op's row loop: shim.c's lathe_unary_f64 where it runs
// (long runs on a machine with AVX2), else floatUnary's function of the
// same name per element. The two agree within an ulp or two (the Go
// functions are math.Exp and the rest; TestUnaryFloat64Vector measures
// it), and on every special value.
func vectorFloat64(op float64Op, name string) func(ops.Params) func(dst, src []float64) {
	f := floatUnary[name](ops.Params{})
	return fixed64(func(dst, src []float64) {
		src = src[:len(dst)]
		if unaryFloat64(op, dst, src) {
			return
		}
		for i, v := range src {
			dst[i] = f(v)
		}
	})
}

// fixed64 is a float64 row loop that takes no parameters.
func fixed64(rows func(dst, src []float64)) func(ops.Params) func(dst, src []float64) {
	return func(ops.Params) func(dst, src []float64) { return rows }
}
