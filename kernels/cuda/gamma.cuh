// gamma.cuh: the gamma family's unary ops (dispatch/ops/gamma.go): lgamma,
// digamma and polygamma, and the binary special_zeta, igamma and igammac (igamma.cuh), for gamma.cu (float32 and float64) and
// gamma_f16.cu and gamma_bf16.cu (computed in float32, half.cuh): a
// module of their own, as zeta's sums are most of their PTX. The
// algorithms are torch's (aten/src/ATen/native/Math.h), as lathe's cpu
// kernels write them (backends/cpu/gamma.go), in the dtype's own
// arithmetic; trigamma goes on to x = 10 and 1/x^15, where torch's stops
// at 6 and 1/x^7 (2e-8 off in float64). Every loop has a fixed bound, so
// no input can keep a thread.
#pragma once
#include "unary.cuh"
#include "binary.cuh"
#include "igamma.cuh"

// reduced_turn is r in (-1, 0) moved by a period into [-1/2, 0), exactly,
// so that tan(pi r) and |sin(pi r)| lose no digits near r = -1.
template <typename F> __device__ __forceinline__ F reduced_turn(F r) { return r < (F)-0.5 ? r + (F)1 : r; }

// digamma_of is torch's calc_digamma: the reflection psi(1-x) - pi/tan(pi x)
// below 0 (NaN at the poles), the recurrence psi(x) = psi(x+1) - 1/x up to
// 10 (eleven steps at most, as x is then positive), the series beyond.
template <typename F> __device__ F digamma_of(F x) {
	const F pi = (F)3.14159265358979323846;
	if (x == (F)0) return (F)-1 / x; // -Inf at +0, +Inf at -0
	F reflection = 0;
	if (x < 0) {
		F t = m_ceil(x);
		if (x == t) return (F)nan_f64(); // -Inf included
		reflection = pi / m_tan(pi * reduced_turn(x - t));
		x = (F)1 - x;
	}
	F result = 0;
	for (int i = 0; i < 11 && x < (F)10; i++) {
		result -= (F)1 / x;
		x += (F)1;
	}
	if (x == (F)10) return result + (F)2.25175258906672110764 - reflection;
	F series = 0;
	if (x < (F)1e17) {
		F z = (F)1 / (x * x);
		series = z * ((F)8.33333333333333333333e-2 +
		              z * ((F)-8.33333333333333333333e-3 +
		                   z * ((F)3.96825396825396825397e-3 +
		                        z * ((F)-4.16666666666666666667e-3 +
		                             z * ((F)7.57575757575757575758e-3 +
		                                  z * ((F)-2.10927960927960927961e-2 + z * (F)8.33333333333333333333e-2))))));
	}
	return result + m_log(x) - (F)0.5 / x - series - reflection;
}

// trigamma_of: the reflection below 1/2, as torch's (so that float32's
// poles are float32's: trigamma(-2) is 3.2e14), the recurrence up to 10
// (ten steps at most) and the series to 1/x^15.
template <typename F> __device__ F trigamma_of(F x) {
	const F pi = (F)3.14159265358979323846;
	F sign = 1, result = 0;
	if (x < (F)0.5) {
		sign = -1;
		F s = m_sin(pi * x);
		result -= pi * pi / (s * s);
		x = (F)1 - x;
	}
	for (int i = 0; i < 10 && x < (F)10; i++) {
		result += (F)1 / (x * x);
		x += (F)1;
	}
	F z = (F)1 / (x * x);
	F series = (F)1 / 6 + z * ((F)-1 / 30 + z * ((F)1 / 42 + z * ((F)-1 / 30 + z * ((F)5 / 66 + z * ((F)-691 / 2730 + z * ((F)7 / 6))))));
	result += ((F)1 + ((F)1 / ((F)2 * x) + z * series)) / x;
	return sign * result;
}

// zeta_positive is sum_{k>=0} (q + k)^-s for s > 1 and q > 0 (Cephes's
// zeta.c without its early exits): ten terms, then the Euler-Maclaurin
// tail from w = q + 9 with twelve Bernoulli terms, (2i+2)!/B_{2i+2}, each
// term's numerator and power one product t (times (s+k)/w a step), as
// gamma.go's: apart, the numerator overflows float32 where the power
// underflows, Inf*0. Not inlined, nor its loops unrolled: zeta_of calls it
// three times, and each pow is a few hundred instructions.
template <typename F> __device__ __noinline__ F zeta_positive(F s, F q) {
	const double bernoulli[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
	                              -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
	                              1.8152105401943546773e17, -7.1661652561756670113e18};
	F sum = m_pow(q, -s), w = q, b = 0;
#pragma unroll 1
	for (int i = 0; i < 9; i++) {
		w += (F)1;
		b = m_pow(w, -s);
		sum += b;
	}
	sum += b * w / (s - (F)1) - (F)0.5 * b;
	F t = b, k = 0;
#pragma unroll 1
	for (int i = 0; i < 12; i++) {
		t *= (s + k) / w;
		sum += t / (F)bernoulli[i];
		t *= (s + k + (F)1) / w;
		k += (F)2;
	}
	return sum;
}

// zeta_of is the Hurwitz zeta function sum_{k>=0} (q + k)^-x (torch's
// special.zeta): +Inf at x = 1 and where q is 0, a negative integer or
// -Inf; NaN for x < 1 and where q < 0 and x is not an integer; a negative
// q regrouped into three sums of a positive one, zeta(x, r) + (-1)^x
// (zeta(x, 1 - r) - zeta(x, 1 - q)) with r = q - floor(q), where Cephes
// sums as many terms as q is far below 0.
template <typename F> __device__ F zeta_of(F x, F q) {
	if (is_nan(x) || is_nan(q)) return (F)nan_f64();
	if (x == (F)1) return (F)inf_f64();
	if (x < (F)1) return (F)nan_f64();
	F fl = m_floor(q);
	if (q <= (F)0 && q == fl) return (F)inf_f64();
	if (q < (F)0) {
		if (x != m_floor(x)) return (F)nan_f64();
		F r = q - fl;
		F sign = x - (F)2 * m_floor(x * (F)0.5) == (F)1 ? (F)-1 : (F)1;
		// The pair first, which cancels exactly at a half-integer q for
		// an odd x, leaving zeta(x, 1 - q) whole (backends/cpu/gamma.go).
		return (zeta_positive(x, r) + sign * zeta_positive(x, (F)1 - r)) - sign * zeta_positive(x, (F)1 - q);
	}
	return zeta_positive(x, q);
}

struct Lgamma {
	// The C library's ln|Gamma(x)|: +Inf at 0, the negative integers and +-Inf.
	template <typename F> __device__ F operator()(F x, double, double) const { return m_lgamma(x); }
};
struct Digamma {
	template <typename F> __device__ F operator()(F x, double, double) const { return digamma_of(x); }
};
// polygamma(n, x) with a = n and b = (-1)^(n+1) n! (ops.PolygammaOf).
struct Polygamma {
	template <typename F> __device__ F operator()(F x, double n, double c) const {
		if (n == 0) return digamma_of(x);
		if (n == 1) return trigamma_of(x);
		return (F)c * zeta_of((F)(n + 1), x);
	}
};

// special_zeta(x, q), a binary op (binary.cuh's templates).
struct Zeta {
	template <typename F> __device__ F operator()(F x, F q) const { return zeta_of(x, q); }
};

#define LATHE_GAMMA_UNARIES(T, sfx)                 \
	LATHE_UNARY(T, sfx, lgamma, Lgamma)         \
	LATHE_UNARY(T, sfx, digamma, Digamma)       \
	LATHE_UNARY(T, sfx, polygamma, Polygamma)   \
	LATHE_BINARY(T, T, sfx, special_zeta, Zeta) \
	LATHE_BINARY(T, T, sfx, igamma, Igamma)     \
	LATHE_BINARY(T, T, sfx, igammac, Igammac)
