package cpu

import "math"

// The activations' backward ops (dispatch/ops: gelu_backward,
// gelu_tanh_backward, silu_backward): grad·f'(x) in one pass, as PyTorch's
// GeluBackward and silu_backward kernels, where a gradient rule made of
// the basic ops allocated a tensor for each of a dozen steps. Each is
// evaluated in float64 and rounded once. float32 runs go to an AVX2 loop in
// C where the machine has one (shim.c's lathe_act_backward_f32), since a
// call per element to math.Exp and math.Erf cost more than the rest of
// GELU's backward: gelu_tanh and silu in the same float64 arithmetic four
// lanes at a time, gelu in float32 lanes from the normal tail (shim.c's
// gelu_grad8), within a few float32 ulps of float64's (TestActBackwardRows
// states the bound).

const (
	invSqrt2   = 0.70710678118654752440 // 1/√2
	invSqrt2Pi = 0.39894228040143267794 // 1/√(2π)
	geluTanhK  = 0.79788456080286535588 // √(2/π)
	geluTanhC  = 0.044715
)

// actOp numbers the backward ops as shim.c's lathe_act_backward_f32 does.
type actOp uint8

const (
	actGELU actOp = iota
	actGELUTanh
	actSiLU
)

// geluBackward is g·(Φ(x) + x·φ(x)): gelu(x) = x·Φ(x), Φ the normal CDF
// and φ its density (derivatives.yaml's gelu_backward, approximate="none").
func geluBackward(g, x float64) float64 {
	cdf := 0.5 * (1 + math.Erf(x*invSqrt2))
	pdf := math.Exp(-0.5*x*x) * invSqrt2Pi
	return g * (cdf + x*pdf)
}

// geluBackward32 is geluBackward with erf from the float32 kernels'
// polynomials, rounded once to float32.
func geluBackward32(g, x float32) float32 {
	v := float64(x)
	cdf := 0.5 * (1 + erf64Poly(v*invSqrt2))
	pdf := math.Exp(-0.5*v*v) * invSqrt2Pi
	return float32(float64(g) * (cdf + v*pdf))
}

// sigmoids is sigmoid(w) and sigmoid(-w) = 1 - sigmoid(w), both from
// exp(-|w|), so that neither loses digits where the other nears 1.
func sigmoids(w float64) (p, q float64) {
	e := math.Exp(-math.Abs(w))
	p, q = 1/(1+e), e/(1+e)
	if w < 0 {
		p, q = q, p
	}
	return p, q
}

// geluTanhBackward is g·gelu_tanh'(x). With u = k(x + c·x³) and t = tanh(u),
// gelu_tanh(x) = ½x(1 + t), so the derivative is ½(1 + t) + ½x(1 - t²)·k(1 +
// 3c·x²) (derivatives.yaml's gelu_backward with approximate="tanh"). It is
// taken as p + 2x·p·q·k(1 + 3c·x²) with p = sigmoid(2u) = ½(1 + t) and q =
// sigmoid(-2u) = ½(1 - t): 1 + t itself loses digits where t is near -1
// (x below -2), which float32 kernels would feel. Where p·q is 0 (|x| past
// about 10, or infinite) the second term is 0, not 0·inf: the derivative's
// limits, 0 and 1, as the wgpu and cuda kernels give (torch gives NaN).
func geluTanhBackward(g, x float64) float64 {
	x2 := x * x
	p, q := sigmoids(2 * geluTanhK * (x + geluTanhC*x2*x))
	if p*q == 0 {
		return g * p
	}
	return g * (p + 2*x*p*q*geluTanhK*(1+3*geluTanhC*x2))
}

// siluBackward is g·s(1 + x(1 - s)), s = sigmoid(x) (derivatives.yaml's
// silu_backward).
func siluBackward(g, x float64) float64 {
	s, r := sigmoids(x)
	return g * s * (1 + x*r)
}

// reluBackward is 0 where x ≤ 0, else g, as torch's threshold_backward:
// a NaN x passes g on, so that a NaN in the forward pass stays in the
// backward one.
func reluBackward[T float](g, x T) T {
	if x <= 0 {
		return 0
	}
	return g
}

// reluBackwardRows is relu_backward's float32 kernel as row loops: the
// AVX2 loop for long runs.
var reluBackwardRows = rows2[float32, float32]{
	vv: func(dst, g, x []float32) {
		g, x = g[:len(dst)], x[:len(dst)]
		if reluBackwardFloat32(dst, g, x) {
			return
		}
		for i := range dst {
			dst[i] = reluBackward(g[i], x[i])
		}
	},
	vs: func(dst, g []float32, x float32) {
		for i := range dst {
			dst[i] = reluBackward(g[i], x)
		}
	},
	at:   reluBackward[float32],
	cost: costVector,
}

// actBackwardRows is op's float32 kernel as row loops for mapRows2: the C
// loop for long runs, f (the float64 function, or geluBackward32) per
// element otherwise.
func actBackwardRows(op actOp, f func(g, x float32) float32) rows2[float32, float32] {
	return rows2[float32, float32]{
		vv: func(dst, g, x []float32) {
			g, x = g[:len(dst)], x[:len(dst)]
			if actBackwardFloat32(op, dst, g, x) {
				return
			}
			for i := range dst {
				dst[i] = f(g[i], x[i])
			}
		},
		vs: func(dst, g []float32, x float32) {
			for i := range dst {
				dst[i] = f(g[i], x)
			}
		},
		at:   f,
		cost: costVector, // the C loop's, even where it is gelu's (split, it lost more than it won)
	}
}

// float32Binary are the binary ops whose float32 kernels are row loops of
// their own rather than float64 functions rounded per element.
var float32Binary = map[string]rows2[float32, float32]{
	"gelu_backward":      actBackwardRows(actGELU, geluBackward32),
	"gelu_tanh_backward": actBackwardRows(actGELUTanh, via64x2[float32](geluTanhBackward)),
	"silu_backward":      actBackwardRows(actSiLU, via64x2[float32](siluBackward)),
	"relu_backward":      reluBackwardRows,
	"maximum":            vectorBinaryRows(binaryMaximum, binaryKernels()["maximum"].f32, costVector),
	"minimum":            vectorBinaryRows(binaryMinimum, binaryKernels()["minimum"].f32, costVector),
	"pow":                vectorBinaryRows(binaryPow, via64x2[float32](math.Pow), costLoop),
	"atan2":              vectorBinaryRows(binaryAtan2, binaryKernels()["atan2"].f32, costLoop),
	"fmod":               vectorBinaryRows(binaryFMod, binaryKernels()["fmod"].f32, costLoop),
	"remainder":          vectorBinaryRows(binaryRemainder, binaryKernels()["remainder"].f32, costLoop),
}
