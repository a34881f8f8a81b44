package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The orthogonal polynomials of torch.special, each x.F(n) for torch's
// special.f(x, n) with an integer degree n. They share these rules:
//
//   - A negative n gives 0 and n = 0 gives 1 (at a NaN too), as torch's.
//   - Integers and bool are promoted to float32, as torch's; float16 and
//     bfloat16 are computed in float32 and rounded once (torch's cpu
//     refuses them). The cpu computes float32 in float64; cuda and wgpu
//     compute it in float32, as torch's cuda.
//   - The values are torch's algorithms' (aten/src/ATen/native/Math.h):
//     the family's three-term recurrence, and for the Chebyshev kinds past
//     degree 6 (T) or 8 (U, V, W) cos and sin of (n + ·)·acos x inside
//     (-1, 1). Outside it torch runs the recurrence, n steps, which
//     overflows to NaN; lathe takes cosh and sinh of (n + ·)·acosh |x|
//     there, whose values overflow to ±Inf. At x = ±Inf a polynomial is
//     ±Inf (torch's recurrence gives NaN from degree 2 or 3).
//   - The other families run their recurrence, n steps an element, so n
//     above 65536 (ops.MaxPolyRecurrence) is ErrValue for them, where
//     torch's runs for as long as n says. Where their values overflow, the
//     recurrence's Inf turns to NaN a step or two later, as torch's:
//     Hermite's H at x = 3 is NaN at degree 100 in float32 arithmetic
//     (cuda's and wgpu's, as torch's cuda) and at 300 in float64; the
//     cpu computes float32 in float64, so its float32 values are ±Inf
//     between.
//   - Each is differentiable in x to the eighth order, by the recurrence
//     differentiated (torch's have no gradient), so again for n up to
//     65536, Chebyshev's too.

// ChebyshevPolynomialT is the Chebyshev polynomial of the first kind
// T_n(x), cos(n·acos x) on [-1, 1], as torch.special.chebyshev_polynomial_t.
func (x *Tensor) ChebyshevPolynomialT(n int) *Tensor { return x.orthoPoly(ops.ChebyshevT, n) }

// ChebyshevPolynomialU is the Chebyshev polynomial of the second kind
// U_n(x), sin((n+1)θ)/sin θ at x = cos θ, as
// torch.special.chebyshev_polynomial_u.
func (x *Tensor) ChebyshevPolynomialU(n int) *Tensor { return x.orthoPoly(ops.ChebyshevU, n) }

// ChebyshevPolynomialV is the Chebyshev polynomial of the third kind
// V_n(x), cos((n+½)θ)/cos(θ/2) at x = cos θ, as
// torch.special.chebyshev_polynomial_v.
func (x *Tensor) ChebyshevPolynomialV(n int) *Tensor { return x.orthoPoly(ops.ChebyshevV, n) }

// ChebyshevPolynomialW is the Chebyshev polynomial of the fourth kind
// W_n(x), sin((n+½)θ)/sin(θ/2) at x = cos θ, as
// torch.special.chebyshev_polynomial_w.
func (x *Tensor) ChebyshevPolynomialW(n int) *Tensor { return x.orthoPoly(ops.ChebyshevW, n) }

// ShiftedChebyshevPolynomialT is T_n(2x - 1), orthogonal on [0, 1], as
// torch.special.shifted_chebyshev_polynomial_t.
func (x *Tensor) ShiftedChebyshevPolynomialT(n int) *Tensor {
	return x.orthoPoly(ops.ShiftedChebyshevT, n)
}

// ShiftedChebyshevPolynomialU is U_n(2x - 1), as
// torch.special.shifted_chebyshev_polynomial_u.
func (x *Tensor) ShiftedChebyshevPolynomialU(n int) *Tensor {
	return x.orthoPoly(ops.ShiftedChebyshevU, n)
}

// ShiftedChebyshevPolynomialV is V_n(2x - 1), as
// torch.special.shifted_chebyshev_polynomial_v.
func (x *Tensor) ShiftedChebyshevPolynomialV(n int) *Tensor {
	return x.orthoPoly(ops.ShiftedChebyshevV, n)
}

// ShiftedChebyshevPolynomialW is W_n(2x - 1), as
// torch.special.shifted_chebyshev_polynomial_w.
func (x *Tensor) ShiftedChebyshevPolynomialW(n int) *Tensor {
	return x.orthoPoly(ops.ShiftedChebyshevW, n)
}

// HermitePolynomialH is the physicists' Hermite polynomial H_n(x)
// (H_{k+1} = 2x·H_k - 2k·H_{k-1}), as torch.special.hermite_polynomial_h.
func (x *Tensor) HermitePolynomialH(n int) *Tensor { return x.orthoPoly(ops.HermiteH, n) }

// HermitePolynomialHe is the probabilists' Hermite polynomial He_n(x)
// (He_{k+1} = x·He_k - k·He_{k-1}), as torch.special.hermite_polynomial_he.
func (x *Tensor) HermitePolynomialHe(n int) *Tensor { return x.orthoPoly(ops.HermiteHe, n) }

// LaguerrePolynomialL is the Laguerre polynomial L_n(x), orthogonal on
// [0, ∞) with weight e^-x, as torch.special.laguerre_polynomial_l.
func (x *Tensor) LaguerrePolynomialL(n int) *Tensor { return x.orthoPoly(ops.LaguerreL, n) }

// LegendrePolynomialP is the Legendre polynomial P_n(x), orthogonal on
// [-1, 1], as torch.special.legendre_polynomial_p.
func (x *Tensor) LegendrePolynomialP(n int) *Tensor { return x.orthoPoly(ops.LegendreP, n) }

// orthoPoly is the polynomial op of degree n at x.
func (x *Tensor) orthoPoly(op *dispatch.Op[ops.Params], n int) *Tensor {
	if err := x.check(op.Name); err != nil {
		return failed(err)
	}
	if n > ops.MaxPolyRecurrence && !ops.PolyClosed(op) {
		return failed(errorf(op.Name, ErrValue, "n", "is "+strconv.Itoa(n)+", above "+strconv.Itoa(ops.MaxPolyRecurrence)+
			", the highest degree lathe evaluates by recurrence (n steps for each element)", "give n ≤ "+strconv.Itoa(ops.MaxPolyRecurrence)))
	}
	if !x.t.DType.IsFloat() {
		return apply(polyPromoted[op], n, x)
	}
	return apply(op, ops.PolyOf(n, 0), x)
}

// polyPromoted are the polynomials of integers or bool, cast to float32.
var polyPromoted = func() map[*dispatch.Op[ops.Params]]*dispatch.Op[int] {
	m := map[*dispatch.Op[ops.Params]]*dispatch.Op[int]{}
	for _, op := range ops.Polys {
		m[op] = compositeVariant(op.Name, "promoted", []string{"x"}, func(in []*Tensor, n int) *Tensor {
			return apply(op, ops.PolyOf(n, 0), in[0].Cast(Float32))
		})
	}
	return m
}()
