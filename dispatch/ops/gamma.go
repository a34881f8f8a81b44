package ops

import "math"

// The gamma family: lgamma, digamma and polygamma, each the derivative of
// the one before (polygamma's of polygamma with n + 1), so that a kernel
// for each, with that rule, differentiates to any order. Their values are
// torch's: ln|Γ(x)| (+Inf at 0, at the negative integers and at ±Inf);
// digamma by torch's calc_digamma (±Inf at ∓0, NaN at the negative
// integers); polygamma(1, x) by its calc_trigamma, and polygamma(n, x)
// from n = 2 as (-1)^(n+1)·n!·zeta(n + 1, x).
var (
	Lgamma    = unary("lgamma", Floats)
	Digamma   = unary("digamma", Floats)
	Polygamma = unary("polygamma", Floats)
)

// Zeta is the Hurwitz zeta function Σ_{k≥0} (q + k)^-x, torch's
// special.zeta (Cephes's zeta.c): +Inf at x = 1 and where q is 0, a
// negative integer or -Inf; NaN for x < 1, and where q < 0 and x is not
// an integer. polygamma(n, x) is (-1)^(n+1)·n!·zeta(n + 1, x) from n = 2.
var Zeta = binaryArgs("special_zeta", [2]string{"x", "q"}, Floats, false)

// PolygammaOf is polygamma's attributes for order n ≥ 1: A is n, and B
// the factor (-1)^(n+1)·n! of zeta(n + 1, x), which a kernel multiplies
// (in its compute dtype, so that past n = 34 it is ±Inf in float32, as
// torch's).
func PolygammaOf(n int) Params {
	l, _ := math.Lgamma(float64(n) + 1)
	c := math.Exp(l)
	if n%2 == 0 {
		c = -c
	}
	return Params{A: float64(n), B: c}
}

// Igamma and Igammac are the regularized incomplete gamma functions
// P(a, x) = γ(a, x)/Γ(a) and Q(a, x) = 1 - P(a, x), torch's igamma and
// igammac (special.gammainc, special.gammaincc), SciPy's algorithm: NaN
// for a < 0 or x < 0 and where a and x are both 0 or both +Inf; P(0, x)
// = 1 for x > 0, P(a, 0) = 0, P(+Inf, x) = 0, P(a, +Inf) = 1.
var (
	Igamma  = binaryArgs("igamma", [2]string{"a", "x"}, Floats, false)
	Igammac = binaryArgs("igammac", [2]string{"a", "x"}, Floats, false)
)
