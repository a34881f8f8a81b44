package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The orthogonal polynomials of torch.special (dispatch/ops/orthopoly.go):
// family f's polynomial of degree n = p.A, or its derivative of order m =
// p.B, at x. cuda's orthopoly.cuh and wgpu's orthopoly.wgsl compute the
// same, step for step.

// polyFamily is one of the families; the shifted Chebyshev kinds are the
// Chebyshev ones at 2x - 1.
type polyFamily int

const (
	chebyshevT polyFamily = iota
	chebyshevU
	chebyshevV
	chebyshevW
	hermiteH
	hermiteHe
	laguerreL
	legendreP
)

// orthoPoly is the kernel of family f's op, at 2x - 1 where shifted, whose
// derivative of order m is then 2^m times the unshifted one's.
func orthoPoly(f polyFamily, shifted bool) func(ops.Params) func(float64) float64 {
	return func(p ops.Params) func(float64) float64 {
		n, m := p.A, int(p.B)
		if !shifted {
			return func(x float64) float64 { return polyAt(f, n, m, x) }
		}
		scale := math.Ldexp(1, m)
		return func(x float64) float64 { return scale * polyAt(f, n, m, x+x-1) }
	}
}

// polyAt is the m-th derivative of family f's degree-n polynomial at x.
// Degree 0 is 1 at every x, NaN too, and a negative degree 0, as torch's.
func polyAt(f polyFamily, n float64, m int, x float64) float64 {
	switch {
	case n < 0 || float64(m) > n:
		return 0
	case n == 0:
		return 1
	case math.IsNaN(x):
		return x
	case math.IsInf(x, 0):
		return polyAtInf(f, n, m, x)
	}
	if m == 0 {
		if v, ok := polyClosed(f, n, x); ok {
			return v
		}
	}
	return polyRecurrence(f, n, m, x)
}

// polyAtInf is polyAt at x = ±Inf: a derivative of order below the degree
// is infinite, with the sign of the leading coefficient (positive but for
// Laguerre's, (-1)^n) times x's to the power n - m; the derivative of the
// degree's order is a constant, the recurrence's at 0.
func polyAtInf(f polyFamily, n float64, m int, x float64) float64 {
	if float64(m) == n {
		return polyRecurrence(f, n, m, 0)
	}
	s := 1.0
	if f == laguerreL && isOdd(n) {
		s = -s
	}
	if x < 0 && isOdd(n-float64(m)) {
		s = -s
	}
	return math.Inf(int(s))
}

// isOdd reports whether n, a whole number from 0 to 2^63, is odd: from
// 2^53 on every float64 is even.
func isOdd(n float64) bool { return n < 1<<53 && int64(n)&1 == 1 }

// polyClosed is a polynomial's value where it has a closed form, as
// torch's: the Chebyshev kinds at ±1, and past degree 6 (T) or 8 (U, V, W)
// cos and sin of multiples of θ = acos x inside (-1, 1); outside it, where
// torch runs its recurrence, the same in cosh and sinh of t = acosh |x|
// (so that any degree takes no more steps, and the values overflow to
// ±Inf where torch's recurrence gives NaN); and Legendre's P at ±1.
func polyClosed(f polyFamily, n, x float64) (float64, bool) {
	ax := math.Abs(x)
	if f > chebyshevW && (f != legendreP || ax != 1) {
		return 0, false
	}
	odd := isOdd(n)
	sign := 1.0 // (-1)^n
	if odd {
		sign = -1
	}
	if ax == 1 {
		switch f {
		case chebyshevT, legendreP:
			if x > 0 || !odd {
				return 1, true
			}
			return -1, true
		case chebyshevU:
			if x > 0 || !odd {
				return n + 1, true
			}
			return -(n + 1), true
		case chebyshevV:
			if x > 0 {
				return 1, true
			}
			return sign * (n + n + 1), true
		case chebyshevW:
			if x > 0 {
				return n + n + 1, true
			}
			return sign, true
		}
		return 0, false
	}
	if f > chebyshevW || n <= 6 || (f != chebyshevT && n <= 8) {
		return 0, false
	}
	if ax < 1 {
		theta := math.Acos(x)
		switch f {
		case chebyshevT:
			return math.Cos(n * theta), true
		case chebyshevU: // sin θ > 0: θ is at least acos(1 - ε/2), 1.5e-8
			return math.Sin((n+1)*theta) / math.Sin(theta), true
		case chebyshevV:
			if math.Sin(theta/2) != 1 {
				return math.Cos((n+0.5)*theta) / math.Cos(theta/2), true
			}
			return sign * (n + n + 1), true
		default: // chebyshevW
			if math.Cos(theta/2) != 1 {
				return math.Sin((n+0.5)*theta) / math.Sin(theta/2), true
			}
			return n + n + 1, true
		}
	}
	// |x| > 1: x = ±cosh t. T_n = cosh(nt), U_n = sinh((n+1)t)/sinh t,
	// V_n = cosh((n+½)t)/cosh(t/2), W_n = sinh((n+½)t)/sinh(t/2) at cosh t;
	// at -cosh t, T and U take the sign (-1)^n, and V and W swap forms.
	t := math.Acosh(ax)
	var v float64
	switch {
	case f == chebyshevT:
		v = math.Cosh(n * t)
	case f == chebyshevU:
		v = sinhRatio((n+1)*t, t)
	case (f == chebyshevV) == (x > 0):
		v = coshRatio((n+0.5)*t, t/2)
	default:
		v = sinhRatio((n+0.5)*t, t/2)
	}
	if x < 0 {
		v *= sign
	}
	return v, true
}

// sinhRatio is sinh(a)/sinh(b) for a ≥ b > 0, as e^(a-b)/(1 - e^-2b) where
// sinh(a) would overflow though the ratio need not.
func sinhRatio(a, b float64) float64 {
	if a < 700 {
		return math.Sinh(a) / math.Sinh(b)
	}
	return math.Exp(a-b) / -math.Expm1(-2*b)
}

// coshRatio is cosh(a)/cosh(b) for a ≥ b ≥ 0, as sinhRatio.
func coshRatio(a, b float64) float64 {
	if a < 700 {
		return math.Cosh(a) / math.Cosh(b)
	}
	return math.Exp(a-b) / (1 + math.Exp(-2*b))
}

// polyRecurrence is the m-th derivative of family f's degree-n polynomial
// at x by its three-term recurrence, differentiated m times: each order's
// next term takes the order below's current one (polyStep); the values
// alone (m = 0) keep two terms, not three rows. It stops at a NaN, which
// every later term would be. A degree or order past the ops'
// limits, which the ops refuse before the launch, is NaN.
func polyRecurrence(f polyFamily, n float64, m int, x float64) float64 {
	if n > ops.MaxPolyRecurrence || m > ops.MaxPolyDerivative {
		return math.NaN()
	}
	p1, d1 := polyFirst(f, x)
	if m == 0 { // the values alone, in two terms
		p0 := 1.0
		for k := 1.0; k < n; k++ {
			p0, p1 = p1, polyStep(f, k, 0, x, p1, 0, p0)
			if math.IsNaN(p1) {
				break
			}
		}
		return p1
	}
	var terms [3][ops.MaxPolyDerivative + 1]float64
	prev, cur, next := &terms[0], &terms[1], &terms[2]
	prev[0] = 1
	cur[0], cur[1] = p1, d1
	for k := 1; k < int(n); k++ {
		for j := 0; j <= m; j++ {
			lower := 0.0
			if j > 0 {
				lower = cur[j-1]
			}
			next[j] = polyStep(f, float64(k), float64(j), x, cur[j], lower, prev[j])
		}
		prev, cur, next = cur, next, prev
		if math.IsNaN(cur[m]) {
			break
		}
	}
	return cur[m]
}

// polyFirst is family f's degree-1 polynomial at x and its derivative.
func polyFirst(f polyFamily, x float64) (float64, float64) {
	switch f {
	case chebyshevT, hermiteHe, legendreP:
		return x, 1
	case chebyshevV:
		return x + x - 1, 2
	case chebyshevW:
		return x + x + 1, 2
	case laguerreL:
		return 1 - x, -1
	}
	return x + x, 2 // chebyshevU, hermiteH
}

// polyStep is the j-th derivative of the degree-(k+1) polynomial from the
// j-th derivatives d of degree k and prev of degree k - 1 and the (j-1)-th
// derivative lower of degree k (0 for j = 0): each family's recurrence
// P_{k+1} = (a_k·x + b_k)·P_k - c_k·P_{k-1}, differentiated j times, which
// adds j·a_k·P_k^(j-1). At j = 0 it is torch's expression, term for term.
func polyStep(f polyFamily, k, j, x, d, lower, prev float64) float64 {
	switch f {
	case hermiteH:
		return (x+x)*d + 2*j*lower - 2*k*prev
	case hermiteHe:
		return x*d + j*lower - k*prev
	case laguerreL:
		return ((k+k+(1-x))*d - j*lower - k*prev) / (k + 1)
	case legendreP:
		return ((k+k+1)*x*d + (k+k+1)*j*lower - k*prev) / (k + 1)
	}
	return (x+x)*d + 2*j*lower - prev // the Chebyshev kinds
}
