// airy.cuh: the Airy function Ai(x) (dispatch/ops/airy.go), special_airy_ai,
// and its derivative, airy_ai_prime,
// for unary.cu (float32 and float64) and unary_f16.cu and unary_bf16.cu
// (computed in float32, half.cuh), in the dtype's own arithmetic, as
// torch's cuda computes it. The algorithm is the cpu's (backends/cpu/airy.go):
// the modulus and phase forms below -2.09, the Maclaurin series up to 2.09
// (40 terms at most) and the rational form in 1/zeta from there, with
// Cephes's tables (airy_tables.cuh, written by build/airy/tables.py).
#pragma once
#include "unary.cuh"
#include "airy_tables.cuh"

// airy_horner_d is the polynomial with the n coefficients c, highest
// power first, at z, and its derivative in *d.
template <typename F> __device__ __forceinline__ F airy_horner_d(const double *c, int n, F z, F *d) {
	F r = 0, dr = 0;
	for (int i = 0; i < n; i++) dr = dr * z + r, r = r * z + (F)c[i];
	*d = dr;
	return r;
}

// airy_of is Ai(x), and Ai'(x) in *d: each branch's derivative is its
// form's, the series term by term and the rational forms by the quotient
// rule on their polynomials (the cpu's airy, step for step).
template <typename F> __device__ __noinline__ F airy_of(F x, F *d) {
	const F inv_sqrt_pi = (F)0.564189583547756286948;
	if (is_nan(x)) return *d = x;
	if (x > (F)103.892) return *d = 0; // +Inf too; -Inf is past the phase's digits below
	if (x < (F)-2.09) {
		F u = -x, ru = m_sqrt(u);
		F zeta = (F)2 * u * ru / (F)3;
		if (zeta >= (F)(sizeof(F) == 4 ? 8388608.0 : 4503599627370496.0)) return *d = 0; // the phase keeps no digit
		F z = (F)1 / zeta, zz = z * z, dfn, dfd, dgn, dgd;
		F fn = airy_horner_d(airy_afn, 9, zz, &dfn), fd = airy_horner_d(airy_afd, 10, zz, &dfd);
		F gn = airy_horner_d(airy_agn, 11, zz, &dgn), gd = airy_horner_d(airy_agd, 11, zz, &dgd);
		F f = fn / fd, g = gn / gd, df = (dfn * fd - fn * dfd) / (fd * fd), dg = (dgn * gd - gn * dgd) / (gd * gd);
		F up = (F)1 + zz * f, vp = z * g, dz = ru * zz, dzz = (F)2 * z * dz;
		F dup = (f + zz * df) * dzz, dvp = g * dz + z * dg * dzz;
		F a = inv_sqrt_pi / m_sqrt(ru), t = zeta + (F)0.785398163397448309616, s = m_sin(t), c = m_cos(t);
		F v = a * (s * up - c * vp);
		*d = v / ((F)4 * u) + a * (-ru * (c * up + s * vp) + s * dup - c * dvp);
		return v;
	}
	if (x >= (F)2.09) {
		F rx = m_sqrt(x), zeta = (F)2 * x * rx / (F)3, w = (F)1 / zeta, dan, dad;
		F an = airy_horner_d(airy_an, 8, w, &dan), ad = airy_horner_d(airy_ad, 8, w, &dad);
		F v = inv_sqrt_pi * (an / ad) / ((F)2 * m_sqrt(rx) * m_exp(zeta));
		*d = v * (-(dan / an - dad / ad) * rx * w * w - (F)1 / ((F)4 * x) - rx);
		return v;
	}
	F f = 1, g = x, m = 1, n = x, k = 1, df = 0, dg = 1, z = x * x * x, xx = x * x;
	for (int i = 0; i < 40 && m_abs(m / f) > (F)1.11022302462515654042e-16; i++) {
		df += m * xx / (k + (F)1);
		dg += n * xx / (k + (F)2);
		m *= z / ((k + (F)1) * (k + (F)2));
		n *= z / ((k + (F)2) * (k + (F)3));
		f += m;
		g += n;
		k += (F)3;
	}
	const F ai0 = (F)0.355028053887817239260, aip0 = (F)0.258819403792806798405; // Ai(0), -Ai'(0)
	*d = ai0 * df - aip0 * dg;
	return ai0 * f - aip0 * g;
}

struct AiryAi {
	template <typename F> __device__ F operator()(F x, double, double) const {
		F d;
		return airy_of(x, &d);
	}
};
struct AiryAiPrime {
	template <typename F> __device__ F operator()(F x, double, double) const {
		F d;
		airy_of(x, &d);
		return d;
	}
};

#define LATHE_AIRY_UNARY(T, sfx)                      \
	LATHE_UNARY(T, sfx, special_airy_ai, AiryAi) \
	LATHE_UNARY(T, sfx, airy_ai_prime, AiryAiPrime)
