// airy.cuh: the Airy function Ai(x) (dispatch/ops/airy.go), special_airy_ai,
// for unary.cu (float32 and float64) and unary_f16.cu and unary_bf16.cu
// (computed in float32, half.cuh), in the dtype's own arithmetic, as
// torch's cuda computes it. The algorithm is the cpu's (backends/cpu/airy.go):
// the modulus and phase forms below -2.09, the Maclaurin series up to 2.09
// (40 terms at most) and the rational form in 1/zeta from there, with
// Cephes's tables (airy_tables.cuh, written by build/airy/tables.py).
#pragma once
#include "unary.cuh"
#include "airy_tables.cuh"

// airy_horner is the polynomial with the n coefficients c, highest power
// first, at z.
template <typename F> __device__ __forceinline__ F airy_horner(const double *c, int n, F z) {
	F r = 0;
	for (int i = 0; i < n; i++) r = r * z + (F)c[i];
	return r;
}

template <typename F> __device__ __noinline__ F airy_ai_of(F x) {
	const F inv_sqrt_pi = (F)0.564189583547756286948;
	if (is_nan(x)) return x;
	if (x > (F)103.892) return 0; // +Inf too; -Inf is past the phase's digits below
	if (x < (F)-2.09) {
		F zeta = (F)-2 * x * m_sqrt(-x) / (F)3;
		if (zeta >= (F)(sizeof(F) == 4 ? 8388608.0 : 4503599627370496.0)) return 0; // the phase keeps no digit
		F z = (F)1 / zeta, zz = z * z;
		F uf = (F)1 + zz * airy_horner(airy_afn, 9, zz) / airy_horner(airy_afd, 10, zz);
		F ug = z * airy_horner(airy_agn, 11, zz) / airy_horner(airy_agd, 11, zz);
		F t = zeta + (F)0.785398163397448309616;
		return inv_sqrt_pi / m_sqrt(m_sqrt(-x)) * (m_sin(t) * uf - m_cos(t) * ug);
	}
	if (x >= (F)2.09) {
		F zeta = (F)2 * x * m_sqrt(x) / (F)3;
		F r = airy_horner(airy_an, 8, (F)1 / zeta) / airy_horner(airy_ad, 8, (F)1 / zeta);
		return inv_sqrt_pi * r / ((F)2 * m_sqrt(m_sqrt(x)) * m_exp(zeta));
	}
	F f = 1, g = x, m = 1, n = x, k = 1, z = x * x * x;
	for (int i = 0; i < 40 && m_abs(m / f) > (F)1.11022302462515654042e-16; i++) {
		m *= z / ((k + (F)1) * (k + (F)2));
		n *= z / ((k + (F)2) * (k + (F)3));
		f += m;
		g += n;
		k += (F)3;
	}
	return (F)0.355028053887817239260 * f - (F)0.258819403792806798405 * g;
}

struct AiryAi {
	template <typename F> __device__ F operator()(F x, double, double) const { return airy_ai_of(x); }
};

#define LATHE_AIRY_UNARY(T, sfx) LATHE_UNARY(T, sfx, special_airy_ai, AiryAi)
