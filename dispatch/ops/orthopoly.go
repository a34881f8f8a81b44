package ops

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
)

// The orthogonal polynomials of torch.special, each a unary op of x whose
// Params are the degree n (A) and the order m of the derivative computed
// (B, 0 for the polynomial itself), so that the gradient of order m is the
// op of order m + 1 and they differentiate to any order up to
// MaxPolyDerivative. The kernels (backends/cpu/orthopoly.go,
// kernels/cuda/orthopoly.cuh, kernels/wgsl/orthopoly.wgsl) evaluate the
// family's three-term recurrence, differentiated m times, and for the
// Chebyshev kinds past a small degree their closed forms in cos or cosh of
// n·acos(x), as torch's do (with cosh added for |x| > 1, where torch's
// recurrence runs n steps and then overflows to NaN).
var (
	ChebyshevT        = unary("special_chebyshev_polynomial_t", Floats)
	ChebyshevU        = unary("special_chebyshev_polynomial_u", Floats)
	ChebyshevV        = unary("special_chebyshev_polynomial_v", Floats)
	ChebyshevW        = unary("special_chebyshev_polynomial_w", Floats)
	ShiftedChebyshevT = unary("special_shifted_chebyshev_polynomial_t", Floats)
	ShiftedChebyshevU = unary("special_shifted_chebyshev_polynomial_u", Floats)
	ShiftedChebyshevV = unary("special_shifted_chebyshev_polynomial_v", Floats)
	ShiftedChebyshevW = unary("special_shifted_chebyshev_polynomial_w", Floats)
	HermiteH          = unary("special_hermite_polynomial_h", Floats)
	HermiteHe         = unary("special_hermite_polynomial_he", Floats)
	LaguerreL         = unary("special_laguerre_polynomial_l", Floats)
	LegendreP         = unary("special_legendre_polynomial_p", Floats)
)

// MaxPolyDerivative is the highest order of derivative the kernels
// compute: the recurrence keeps each order below it at every step.
const MaxPolyDerivative = 8

// MaxPolyRecurrence is the highest degree the kernels reach by recurrence,
// n steps an element: the Chebyshev kinds' values have closed forms past
// degree 8 and take any degree, but their derivatives and the other
// families run the recurrence, and a higher degree is refused before the
// launch rather than left to run for minutes.
const MaxPolyRecurrence = 1 << 16

// PolyOf is an orthogonal polynomial's attributes: degree n and the
// order m of the derivative.
func PolyOf(n, m int) Params { return Params{A: float64(n), B: float64(m)} }

// Polys lists the polynomial ops.
var Polys = []*dispatch.Op[Params]{ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW,
	ShiftedChebyshevT, ShiftedChebyshevU, ShiftedChebyshevV, ShiftedChebyshevW, HermiteH, HermiteHe, LaguerreL, LegendreP}

// IsPoly reports whether op is one of Polys.
func IsPoly(op *dispatch.Op[Params]) bool { return slices.Contains(Polys, op) }

// PolyClosed reports whether op's values (not its derivatives) take any
// degree, by closed forms: the Chebyshev kinds'.
func PolyClosed(op *dispatch.Op[Params]) bool { return slices.Contains(Polys[:8], op) }
