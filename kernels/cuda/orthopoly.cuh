// orthopoly.cuh: torch.special's orthogonal polynomials (dispatch/ops/orthopoly.go),
// unary ops whose attributes are the degree n and the order m of the derivative,
// for orthopoly.cu (float32 and float64) and orthopoly_f16.cu and
// orthopoly_bf16.cu (computed in float32, half.cuh). The algorithm is the
// cpu's (backends/cpu/orthopoly.go), in the dtype's own arithmetic, as
// torch's cuda computes: each family's three-term recurrence,
// differentiated m times, and the Chebyshev kinds' closed forms. A family
// is 0-3 for Chebyshev's T, U, V and W, 4 and 5 for Hermite's H and He, 6
// for Laguerre's L and 7 for Legendre's P. The recurrence's loop is
// bounded by the degree, which the ops hold to 65536, and by 65536 here.
#pragma once
#include "unary.cuh"

template <typename F> __device__ __forceinline__ bool poly_is_odd(F n) { return n - (F)2 * m_floor((F)0.5 * n) == (F)1; }

// sinh_ratio is sinh(a)/sinh(b) for a >= b > 0, as e^(a-b)/(1 - e^-2b)
// where sinh(a) would overflow though the ratio need not; cosh_ratio
// likewise.
template <typename F> __device__ F sinh_ratio(F a, F b) {
	if (a < (F)(sizeof(F) == 4 ? 80 : 700)) return m_sinh(a) / m_sinh(b);
	return m_exp(a - b) / -m_expm1((F)-2 * b);
}
template <typename F> __device__ F cosh_ratio(F a, F b) {
	if (a < (F)(sizeof(F) == 4 ? 80 : 700)) return m_cosh(a) / m_cosh(b);
	return m_exp(a - b) / ((F)1 + m_exp((F)-2 * b));
}

// poly_closed sets v where a closed form gives the value: the Chebyshev
// kinds and Legendre's at +-1, the Chebyshev kinds past degree 6 (T) or 8
// in cos and sin of theta = acos x inside (-1, 1), and in cosh and sinh of
// t = acosh |x| outside it.
template <typename F> __device__ __noinline__ bool poly_closed(int f, F n, F x, F *v) {
	F ax = m_abs(x);
	bool odd = poly_is_odd(n);
	F sign = odd ? (F)-1 : (F)1;
	if (ax == (F)1) {
		switch (f) {
		case 0:
		case 7: *v = x > 0 || !odd ? (F)1 : (F)-1; return true;
		case 1: *v = x > 0 || !odd ? n + (F)1 : -(n + (F)1); return true;
		case 2: *v = x > 0 ? (F)1 : sign * (n + n + (F)1); return true;
		case 3: *v = x > 0 ? n + n + (F)1 : sign; return true;
		}
		return false;
	}
	if (f > 3 || n <= (F)6 || (f != 0 && n <= (F)8)) return false;
	if (ax < (F)1) {
		F theta = m_acos(x);
		switch (f) {
		case 0: *v = m_cos(n * theta); return true;
		case 1: *v = m_sin((n + (F)1) * theta) / m_sin(theta); return true; // sin(theta) > 0 inside (-1, 1)
		case 2:
			*v = m_sin((F)0.5 * theta) != (F)1 ? m_cos((n + (F)0.5) * theta) / m_cos((F)0.5 * theta) : sign * (n + n + (F)1);
			return true;
		default:
			*v = m_cos((F)0.5 * theta) != (F)1 ? m_sin((n + (F)0.5) * theta) / m_sin((F)0.5 * theta) : n + n + (F)1;
			return true;
		}
	}
	F t = m_acosh(ax), r;
	if (f == 0) r = m_cosh(n * t);
	else if (f == 1) r = sinh_ratio((n + (F)1) * t, t);
	else if ((f == 2) == (x > 0)) r = cosh_ratio((n + (F)0.5) * t, (F)0.5 * t);
	else r = sinh_ratio((n + (F)0.5) * t, (F)0.5 * t);
	*v = x < 0 ? r * sign : r;
	return true;
}

// poly_step is the j-th derivative at degree k + 1 from the j-th at k (d)
// and k - 1 (prev) and the (j-1)-th at k (lower): the recurrence
// P_{k+1} = (a_k x + b_k) P_k - c_k P_{k-1} differentiated j times; at
// j = 0, torch's expression term for term.
template <typename F> __device__ __forceinline__ F poly_step(int f, F k, F j, F x, F d, F lower, F prev) {
	switch (f) {
	case 4: return (x + x) * d + (F)2 * j * lower - (F)2 * k * prev;
	case 5: return x * d + j * lower - k * prev;
	case 6: return ((k + k + ((F)1 - x)) * d - j * lower - k * prev) / (k + (F)1);
	case 7: return ((k + k + (F)1) * x * d + (k + k + (F)1) * j * lower - k * prev) / (k + (F)1);
	}
	return (x + x) * d + (F)2 * j * lower - prev;
}

// poly_recurrence runs the recurrence to degree n with each derivative to
// order m, in three rows of terms that take turns as the degrees k - 1, k
// and k + 1; it stops at a NaN, which every later term would be.
template <typename F> __device__ __noinline__ F poly_recurrence(int f, F n, int m, F x) {
	if (n > (F)65536 || m > 8) return (F)nan_f64();
	F terms[3][9] = {};
	terms[0][0] = (F)1;
	switch (f) {
	case 0:
	case 5:
	case 7: terms[1][0] = x, terms[1][1] = (F)1; break;
	case 2: terms[1][0] = x + x - (F)1, terms[1][1] = (F)2; break;
	case 3: terms[1][0] = x + x + (F)1, terms[1][1] = (F)2; break;
	case 6: terms[1][0] = (F)1 - x, terms[1][1] = (F)-1; break;
	default: terms[1][0] = x + x, terms[1][1] = (F)2;
	}
	int prev = 0, cur = 1, next = 2, steps = (int)n;
	for (int k = 1; k < steps; k++) {
		for (int j = 0; j <= m; j++) {
			F lower = j > 0 ? terms[cur][j - 1] : (F)0;
			terms[next][j] = poly_step(f, (F)k, (F)j, x, terms[cur][j], lower, terms[prev][j]);
		}
		int done = prev;
		prev = cur, cur = next, next = done;
		if (is_nan(terms[cur][m])) break;
	}
	return terms[cur][m];
}

// poly_at is family f's degree-n polynomial's derivative of order m at x:
// 0 below degree 0 and past the degree, 1 at degree 0; at +-Inf, below the
// degree's order, +-Inf with the leading coefficient's sign ((-1)^n for
// Laguerre's) times x's^(n-m), and at it the constant the recurrence
// gives at 0.
template <typename F> __device__ __noinline__ F poly_at(int f, F n, int m, F x) {
	if (n < (F)0 || (F)m > n) return (F)0;
	if (n == (F)0) return (F)1;
	if (is_nan(x)) return x;
	if (m_abs(x) == (F)inf_f64()) {
		if ((F)m == n) return poly_recurrence(f, n, m, (F)0);
		bool negative = (f == 6 && poly_is_odd(n)) != (x < 0 && poly_is_odd(n - (F)m));
		return negative ? (F)-inf_f64() : (F)inf_f64();
	}
	F v;
	if (m == 0 && poly_closed(f, n, x, &v)) return v;
	return poly_recurrence(f, n, m, x);
}

// OrthoPoly is family FAM's op, at 2x - 1 where SHIFTED (times 2^m), with
// a = n and b = m (ops.PolyOf).
template <int FAM, bool SHIFTED> struct OrthoPoly {
	template <typename F> __device__ F operator()(F x, double n, double m) const {
		if (SHIFTED) return (F)(1 << (int)m) * poly_at(FAM, (F)n, (int)m, x + x - (F)1);
		return poly_at(FAM, (F)n, (int)m, x);
	}
};

// The ops' functors, named so that LATHE_UNARY's argument holds no comma.
typedef OrthoPoly<0, false> ChebyshevT;
typedef OrthoPoly<1, false> ChebyshevU;
typedef OrthoPoly<2, false> ChebyshevV;
typedef OrthoPoly<3, false> ChebyshevW;
typedef OrthoPoly<0, true> ShiftedChebyshevT;
typedef OrthoPoly<1, true> ShiftedChebyshevU;
typedef OrthoPoly<2, true> ShiftedChebyshevV;
typedef OrthoPoly<3, true> ShiftedChebyshevW;
typedef OrthoPoly<4, false> HermiteH;
typedef OrthoPoly<5, false> HermiteHe;
typedef OrthoPoly<6, false> LaguerreL;
typedef OrthoPoly<7, false> LegendreP;

#define LATHE_ORTHOPOLY_UNARIES(T, sfx)                                                \
	LATHE_UNARY(T, sfx, special_chebyshev_polynomial_t, ChebyshevT)                 \
	LATHE_UNARY(T, sfx, special_chebyshev_polynomial_u, ChebyshevU)                 \
	LATHE_UNARY(T, sfx, special_chebyshev_polynomial_v, ChebyshevV)                 \
	LATHE_UNARY(T, sfx, special_chebyshev_polynomial_w, ChebyshevW)                 \
	LATHE_UNARY(T, sfx, special_shifted_chebyshev_polynomial_t, ShiftedChebyshevT) \
	LATHE_UNARY(T, sfx, special_shifted_chebyshev_polynomial_u, ShiftedChebyshevU) \
	LATHE_UNARY(T, sfx, special_shifted_chebyshev_polynomial_v, ShiftedChebyshevV) \
	LATHE_UNARY(T, sfx, special_shifted_chebyshev_polynomial_w, ShiftedChebyshevW) \
	LATHE_UNARY(T, sfx, special_hermite_polynomial_h, HermiteH)                     \
	LATHE_UNARY(T, sfx, special_hermite_polynomial_he, HermiteHe)                   \
	LATHE_UNARY(T, sfx, special_laguerre_polynomial_l, LaguerreL)                   \
	LATHE_UNARY(T, sfx, special_legendre_polynomial_p, LegendreP)
