package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// floatUnary gives each unary op's float function, built from its params.
// Formulas follow PyTorch's definitions (torch.nn.functional docs).
var floatUnary = map[string]func(p ops.Params) func(float64) float64{
	"neg":        fixed(func(x float64) float64 { return -x }),
	"abs":        fixed(math.Abs),
	"sign":       fixed(signF),
	"square":     fixed(func(x float64) float64 { return x * x }),
	"relu":       fixed(func(x float64) float64 { return reluF(x) }),
	"floor":      fixed(math.Floor),
	"ceil":       fixed(math.Ceil),
	"round":      fixed(math.RoundToEven), // torch.round rounds half to even
	"exp":        fixed(expF),
	"log":        fixed(logF),
	"log1p":      fixed(math.Log1p),
	"expm1":      fixed(math.Expm1),
	"sqrt":       fixed(math.Sqrt),
	"rsqrt":      fixed(func(x float64) float64 { return 1 / math.Sqrt(x) }),
	"reciprocal": fixed(func(x float64) float64 { return 1 / x }),
	"sin":        fixed(sinF),
	"cos":        fixed(cosF),
	"tanh":       fixed(math.Tanh),
	"sigmoid":    fixed(sigmoid),
	"silu":       fixed(func(x float64) float64 { return x * sigmoid(x) }),
	"erf":        fixed(math.Erf),
	"erfc":       fixed(math.Erfc), // not 1 - erf, which is 0 from x ≈ 6 in float64
	// The inverse and hyperbolic trigonometric functions are NaN outside
	// their domains (asin, acos and atanh past ±1, acosh below 1), as torch's.
	"asin":  fixed(math.Asin),
	"acos":  fixed(math.Acos),
	"atan":  fixed(math.Atan),
	"tan":   fixed(math.Tan),
	"sinh":  fixed(sinh),
	"cosh":  fixed(cosh),
	"asinh": fixed(math.Asinh),
	"acosh": fixed(math.Acosh),
	"atanh": fixed(math.Atanh),
	// gelu(x) = x·Φ(x), Φ the normal CDF; gelu_tanh is PyTorch's
	// approximate="tanh" form.
	"gelu": fixed(func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }),
	"gelu_tanh": fixed(func(x float64) float64 {
		const c = 0.7978845608028654 // √(2/π)
		return 0.5 * x * (1 + math.Tanh(c*(x+0.044715*x*x*x)))
	}),
	// softplus(x; beta, threshold) is log1p(exp(beta·x))/beta, and x where
	// beta·x > threshold (torch.nn.functional.softplus).
	"softplus": func(p ops.Params) func(float64) float64 {
		return func(x float64) float64 {
			if x*p.A > p.B {
				return x
			}
			return math.Log1p(math.Exp(x*p.A)) / p.A
		}
	},
	"leaky_relu": func(p ops.Params) func(float64) float64 {
		return func(x float64) float64 { return leakyF(x, p.A) }
	},
	"clamp": func(p ops.Params) func(float64) float64 {
		return func(x float64) float64 { return clampF(x, p.A, p.B) }
	},
	"lgamma":          fixed(lgammaF), // gamma.go
	"digamma":         fixed(digammaF),
	"polygamma":       polygammaF,
	"special_airy_ai": fixed(airyAi), // airy.go
	"airy_ai_prime":   fixed(airyAiPrime),
	// orthopoly.go
	"special_chebyshev_polynomial_t":         orthoPoly(chebyshevT, false),
	"special_chebyshev_polynomial_u":         orthoPoly(chebyshevU, false),
	"special_chebyshev_polynomial_v":         orthoPoly(chebyshevV, false),
	"special_chebyshev_polynomial_w":         orthoPoly(chebyshevW, false),
	"special_shifted_chebyshev_polynomial_t": orthoPoly(chebyshevT, true),
	"special_shifted_chebyshev_polynomial_u": orthoPoly(chebyshevU, true),
	"special_shifted_chebyshev_polynomial_v": orthoPoly(chebyshevV, true),
	"special_shifted_chebyshev_polynomial_w": orthoPoly(chebyshevW, true),
	"special_hermite_polynomial_h":           orthoPoly(hermiteH, false),
	"special_hermite_polynomial_he":          orthoPoly(hermiteHe, false),
	"special_laguerre_polynomial_l":          orthoPoly(laguerreL, false),
	"special_legendre_polynomial_p":          orthoPoly(legendreP, false),
}

// leakyF is leaky_relu with the given slope.
func leakyF(x, slope float64) float64 {
	if x > 0 {
		return x
	}
	return x * slope
}

// clampF is clamp to [lo, hi], a NaN kept (hi where lo > hi, as torch).
// Where no bound is NaN, the builtin min and max give math.Min's and
// math.Max's values (±0 alike) and compile inline, where those are calls;
// a NaN bound keeps math's rules (math.Min(-Inf, NaN) is -Inf).
func clampF(x, lo, hi float64) float64 {
	switch {
	case x != x:
		return x
	case lo != lo || hi != hi:
		return math.Min(math.Max(x, lo), hi)
	}
	return min(max(x, lo), hi)
}

// sinh and cosh are math.Sinh and math.Cosh but finite up to 710.4758,
// where the results are: those take e^|x|/2 as Exp(|x|)/2, which overflows
// from 709.78 (so does torch). Past 709, e^-|x| is below float64's
// precision and both are e^|x|/2, taken as (e^(|x|/2) / 2) * e^(|x|/2),
// as glibc's and CUDA's do it.
func sinh(x float64) float64 {
	if math.Abs(x) > 709 {
		return math.Copysign(halfExp(math.Abs(x)), x)
	}
	return math.Sinh(x)
}

func cosh(x float64) float64 {
	if math.Abs(x) > 709 {
		return halfExp(math.Abs(x))
	}
	return math.Cosh(x)
}

// expF is math.Exp but finite up to 709.78, as e^x is (and torch's exp):
// on amd64 math.Exp builds 2^k in one exponent field and overflows from
// 709.44 on, where k reaches 1024. Past 709 it is 2·e^(x - hi)·(1 - lo),
// ln2 = hi + lo split as fdlibm's so that x - hi is exact: within two ulps.
func expF(x float64) float64 {
	if x > 709 {
		const ln2Hi, ln2Lo = 6.93147180369123816490e-01, 1.90821492927058770002e-10
		return math.Exp(x-ln2Hi) * (1 - ln2Lo) * 2
	}
	return math.Exp(x)
}

// sinF and cosF are math.Sin and math.Cos with x reduced first by π/2 in
// three parts with FMA (x - n·p1 is exact, the other two steps round once),
// as unary_f64.h's lanes reduce it, for |x| ≤ 2^30: math.Sin's own
// reduction, in parts without FMA, loses the relative accuracy of a small
// result near a multiple of π (sin(π) came out 17 ulps off, cos near
// multiples of π/2 up to 1e5). Larger |x| keeps math's.
func sinF(x float64) float64 { return sinCos(x, 0) }

func cosF(x float64) float64 { return sinCos(x, 1) }

// sinCos is sin x, or cos x with shift 1: the function of r that
// (n + shift) mod 4 picks, with its sign.
func sinCos(x float64, shift int) float64 {
	if !(math.Abs(x) <= 0x1p30) || x == 0 && shift == 0 {
		if shift == 1 {
			return math.Cos(x)
		}
		return math.Sin(x)
	}
	n := math.RoundToEven(x * (2 / math.Pi))
	r := math.FMA(-n, 0x1.921fb54442d18p+0, x)
	r = math.FMA(-n, 0x1.1a62633145c07p-54, r)
	r = math.FMA(-n, -0x1.f1976b7ed8fbcp-110, r)
	q := (int64(n) + int64(shift)) & 3
	v := math.Sin(r)
	if q&1 == 1 {
		v = math.Cos(r)
	}
	if q&2 != 0 {
		v = -v
	}
	return v
}

// logF is math.Log but right for a subnormal x, where amd64's math.Log
// (which reads the exponent field as it stands) gives log(5e-324) as
// -709.09 for -744.44: such an x is scaled by 2^54 first.
func logF(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		return math.Log(x*0x1p54) - 54*math.Ln2
	}
	return math.Log(x)
}

// halfExp is e^a/2 for a > 709, without overflowing before it.
func halfExp(a float64) float64 {
	h := math.Exp(a / 2)
	return h / 2 * h
}

// intUnary gives the unary ops that integer dtypes have.
var intUnary = map[string]func(p ops.Params) func(int64) int64{
	"neg":    fixedInt(func(x int64) int64 { return -x }),
	"abs":    fixedInt(func(x int64) int64 { return max(x, -x) }),
	"sign":   fixedInt(func(x int64) int64 { return int64(cmpInt(x, 0)) }),
	"square": fixedInt(func(x int64) int64 { return x * x }),
	"relu":   fixedInt(func(x int64) int64 { return max(x, 0) }),
	"floor":  fixedInt(func(x int64) int64 { return x }),
	"ceil":   fixedInt(func(x int64) int64 { return x }),
	"round":  fixedInt(func(x int64) int64 { return x }),
	"clamp": func(p ops.Params) func(int64) int64 {
		return func(x int64) int64 {
			v := float64(x)
			if v < p.A {
				return int64(math.Ceil(p.A))
			}
			if v > p.B {
				return int64(math.Floor(p.B))
			}
			return x
		}
	},
}

func fixed(f func(float64) float64) func(ops.Params) func(float64) float64 {
	return func(ops.Params) func(float64) float64 { return f }
}

func fixedInt(f func(int64) int64) func(ops.Params) func(int64) int64 {
	return func(ops.Params) func(int64) int64 { return f }
}

func signF(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0 // torch.sign gives +0 for ±0 and for NaN
}

func reluF(x float64) float64 {
	if x > 0 || x != x {
		return x
	}
	return 0
}

// sigmoid is evaluated so that exp never overflows.
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func init() {
	for _, u := range ops.UnaryOps {
		ff, fi := floatUnary[u.Name], intUnary[u.Name]
		dtypes := u.DTypes
		if fi == nil {
			dtypes &= dispatch.Floats
		}
		registerElementwise(u.Op, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, p ops.Params) error {
			x := in[0]
			switch x.DType {
			case dispatch.Float32:
				if u.Name == "relu" {
					mapRows1(out, x, reluRows[float32], costVector)
					return nil
				}
				if rows, ok := float32Unary[u.Name]; ok {
					mapRows1(out, x, rows(p), costVector)
					return nil
				}
				map1(out, x, via64[float32](ff(p)))
			case dispatch.Float64:
				if u.Name == "relu" {
					mapRows1(out, x, reluRows[float64], costLoop)
					return nil
				}
				if rows, ok := float64Unary[u.Name]; ok {
					mapRows1(out, x, rows(p), costLoop)
					return nil
				}
				map1(out, x, ff(p))
			case dispatch.Int32:
				map1(out, x, viaInt[int32](fi(p)))
			case dispatch.Int64:
				map1(out, x, fi(p))
			}
			return nil
		})
	}
	register(ops.LogicalNot, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		x := truth(in[0])
		map1(out, x, func(b bool) bool { return !b })
		return nil
	})
	// where moves bits, so it takes every dtype as it is: by element size.
	registerNative(ops.Where, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		c := in[0] // the schema makes it bool
		switch out.DType.Size() {
		case 4:
			where[uint32](out, c, in[1], in[2])
		case 8:
			where[uint64](out, c, in[1], in[2])
		case 2:
			where[uint16](out, c, in[1], in[2])
		case 1:
			where[uint8](out, c, in[1], in[2])
		}
		return nil
	})
}
