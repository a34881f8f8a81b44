package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// float64Unary gives the float64 unary ops that have row loops of their
// own: floatUnary's functions named in a loop, where the compiler calls
// (or inlines) them directly, in place of map1's call through a function
// value per element (neg of 524k float64s took 583 µs). Each gives its
// floatUnary function's values exactly.
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
}

// fixed64 is a float64 row loop that takes no parameters.
func fixed64(rows func(dst, src []float64)) func(ops.Params) func(dst, src []float64) {
	return func(ops.Params) func(dst, src []float64) { return rows }
}
