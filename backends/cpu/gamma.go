package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The gamma family's kernels (dispatch/ops/gamma.go) and zeta's, in float64, which
// float32 and the 16-bit floats are computed in and rounded from once.
// The algorithms are torch's (aten/src/ATen/native/Math.h), as the cuda
// (kernels/cuda/gamma.cuh) and wgpu (kernels/wgsl/gamma.wgsl) kernels
// write them, so that the three agree to their dtypes' rounding.

// lgammaF is ln|Γ(x)|: math.Lgamma, but +Inf at -Inf, as C's lgamma
// (and torch's) where Go's gives -Inf.
func lgammaF(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Inf(1)
	}
	l, _ := math.Lgamma(x)
	return l
}

// digammaSeries are the asymptotic series' coefficients of digamma, in
// 1/x², highest first (Cephes's psi.c).
var digammaSeries = [...]float64{8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3,
	-4.16666666666666666667e-3, 3.96825396825396825397e-3, -8.33333333333333333333e-3, 8.33333333333333333333e-2}

// digammaF is ψ(x), torch's calc_digamma: the reflection ψ(1-x) - π/tan(πx)
// below 0, the recurrence ψ(x) = ψ(x+1) - 1/x up to 10 (at most eleven
// steps, as x is then positive), and the asymptotic series from there.
func digammaF(x float64) float64 {
	if x == 0 {
		return math.Copysign(math.Inf(1), -x) // ψ(±0) = ∓Inf
	}
	reflection := 0.0
	if x < 0 {
		if x == math.Trunc(x) {
			return math.NaN() // a pole (-Inf included)
		}
		reflection = math.Pi / math.Tan(math.Pi*reducedTurn(x-math.Trunc(x)))
		x = 1 - x
	}
	// The recurrence's sum of 1/x as one fraction p/q (its terms are all
	// positive once x ≥ 1, so nothing cancels, and q stays below 20!/10!):
	// one division rather than up to eleven.
	result := 0.0
	if x < 1 {
		result = -1 / x
		x++
	}
	if x < 10 {
		p, q := 0.0, 1.0
		for x < 10 {
			p = p*x + q
			q *= x
			x++
		}
		result -= p / q
	}
	if x == 10 {
		const psi10 = 2.25175258906672110764
		return result + psi10 - reflection
	}
	series := 0.0
	if x < 1e17 {
		z := 1 / (x * x)
		for _, c := range digammaSeries {
			series = series*z + c
		}
		series *= z
	}
	return result + math.Log(x) - 0.5/x - series - reflection
}

// reducedTurn is r in (-1, 0) moved by a period into [-1/2, 0), exactly,
// so that tan(πr) loses no digits near r = -1, where πr would round.
func reducedTurn(r float64) float64 {
	if r < -0.5 {
		return r + 1
	}
	return r
}

// trigamma is ψ'(x) in x's dtype: torch's calc_trigamma's reflection
// below 1/2, in that dtype as torch's (so that at the poles, where sin(πx)
// is a rounding error, float32's result is float32's: trigamma(-2) is
// 3.2e14, where float64 gives 1.6e32), then trigammaPositive in float64.
func trigamma[F float32 | float64](x F) F {
	if x >= 0.5 {
		return F(trigammaPositive(float64(x)))
	}
	pi := F(math.Pi)
	s := F(math.Sin(float64(pi * x)))
	return pi*pi/(s*s) - F(trigammaPositive(float64(1-x)))
}

// trigammaPositive is ψ'(x) for x ≥ 1/2 (or NaN): the recurrence up to 10,
// its sum of 1/x² as one fraction p/q (positive terms, q below 1e13), and
// the asymptotic series to 1/x¹⁵, good to float64's digits. torch's stops
// the recurrence at 6 and the series at 1/x⁷, 2e-8 off at 6; float32
// cannot tell the two apart.
func trigammaPositive(x float64) float64 {
	result := 0.0
	if x < 10 {
		p, q := 0.0, 1.0
		for x < 10 { // at most ten steps
			x2 := x * x
			p = p*x2 + q
			q *= x2
			x++
		}
		result = p / q
	}
	z := 1 / (x * x)
	series := 1.0/6 + z*(-1.0/30+z*(1.0/42+z*(-1.0/30+z*(5.0/66+z*(-691.0/2730+z*(7.0/6))))))
	return result + (1+(1/(2*x)+z*series))/x
}

// zetaBernoulli are Cephes's A[i] of zeta.c, (2i+2)!/B_{2i+2}.
var zetaBernoulli = [...]float64{12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
	-2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
	-7.1661652561756670113e18}

// zeta is the Hurwitz zeta function Σ_{k≥0} (q + k)^-x, as torch's
// special.zeta (Cephes's zeta.c): +Inf at x = 1 and where q is 0, a
// negative integer or -Inf; NaN for x < 1, and where q < 0 and x is not
// an integer. Cephes sums while q + k ≤ 9, as many terms as a negative q
// is far below 0; here such a q is regrouped instead, (zeta(x, r) +
// (-1)^x·zeta(x, 1 - r)) - (-1)^x·zeta(x, 1 - q) with r = q - floor(q), three
// sums of a positive q, so that no input takes more than a fixed number
// of steps. Both lose the digits that the cancelling terms of a q far
// below 0 share.
func zeta(x, q float64) float64 {
	switch {
	case x != x || q != q:
		return math.NaN()
	case x == 1:
		return math.Inf(1)
	case x < 1:
		return math.NaN()
	case q <= 0 && q == math.Floor(q):
		return math.Inf(1)
	case q < 0:
		if x != math.Floor(x) {
			return math.NaN()
		}
		r := q - math.Floor(q)
		sign := 1.0
		if math.Mod(x, 2) == 1 {
			sign = -1
		}
		// The pair first: for an odd x at a half-integer q, zeta(x, r) and
		// zeta(x, 1 - r) are the same sum and cancel exactly, leaving
		// zeta(x, 1 - q) whole; grouped the other way, its digits were
		// lost in zeta(x, 1 - r) (in float32, all of polygamma(8, -3.5)).
		return (zetaPositive(x, r) + sign*zetaPositive(x, 1-r)) - sign*zetaPositive(x, 1-q)
	}
	return zetaPositive(x, q)
}

// zetaPositive is Σ_{k≥0} (q + k)^-s for s > 1 and q > 0: ten terms, then
// the Euler–Maclaurin tail from w = q + 9 with twelve Bernoulli terms,
// s(s+1)…(s+2i)·w^-(s+2i+1)/A[i]. Their numerator and power are kept as
// one product t, each step times (s+k)/w, where Cephes keeps them apart:
// for a large s the factorial overflows float32 where the power
// underflows (polygamma(88, ·)), and their product was Inf·0, NaN.
func zetaPositive(s, q float64) float64 {
	sum := math.Pow(q, -s)
	w, b := q, 0.0
	for range 9 {
		w++
		b = math.Pow(w, -s)
		sum += b
	}
	sum += b*w/(s-1) - 0.5*b
	t, k := b, 0.0
	for _, c := range zetaBernoulli {
		t *= (s + k) / w
		sum += t / c
		t *= (s + k + 1) / w
		k += 2
	}
	return sum
}

// polygammaF is polygamma(n, x) for p = ops.PolygammaOf(n): trigamma for
// n = 1, p.B·zeta(n + 1, x) from 2 on (digamma for n = 0).
func polygammaF(p ops.Params) func(float64) float64 {
	switch p.A {
	case 0:
		return digammaF
	case 1:
		return trigamma[float64]
	}
	return func(x float64) float64 { return p.B * zeta(p.A+1, x) }
}

// polygammaRows is polygamma's float32 rows: trigamma in float32, as
// torch's (gamma_f32.h's lanes where they run); the others in float64,
// rounded once.
func polygammaRows(p ops.Params) func(dst, src []float32) {
	f := via64[float32](polygammaF(p))
	if p.A == 1 {
		f = trigamma[float32]
	}
	return func(dst, src []float32) {
		if p.A == 1 && unary64Float32(unary64Trigamma, dst, src[:len(dst)], 0, 0) {
			return
		}
		for i, v := range src[:len(dst)] {
			dst[i] = f(v)
		}
	}
}
