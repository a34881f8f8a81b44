// add_scaled.c: add_scaled's rows, p + alpha*q with one rounding
// (vfmadd), eight float32 or four float64 lanes at a time; declared in
// cdecl.h, called from cgo.go where the machine has AVX2 and FMA
// (lathe_has_avx2). add_scaled.go's Go rows give the same values (math.FMA).
#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#include "cdecl.h"

#define AVX2 __attribute__((target("avx2,fma")))

AVX2 void lathe_add_scaled_f32(float *dst, const float *p, const float *q, float s, float alpha, ptrdiff_t n) {
	const __m256 a = _mm256_set1_ps(alpha), splat = _mm256_set1_ps(s);
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = q ? _mm256_loadu_ps(q + i) : splat;
		_mm256_storeu_ps(dst + i, _mm256_fmadd_ps(a, v, _mm256_loadu_ps(p + i)));
	}
	for (; i < n; i++) dst[i] = fmaf(alpha, q ? q[i] : s, p[i]);
}

AVX2 void lathe_add_scaled_f64(double *dst, const double *p, const double *q, double s, double alpha, ptrdiff_t n) {
	const __m256d a = _mm256_set1_pd(alpha), splat = _mm256_set1_pd(s);
	ptrdiff_t i = 0;
	for (; i + 4 <= n; i += 4) {
		__m256d v = q ? _mm256_loadu_pd(q + i) : splat;
		_mm256_storeu_pd(dst + i, _mm256_fmadd_pd(a, v, _mm256_loadu_pd(p + i)));
	}
	for (; i < n; i++) dst[i] = fma(alpha, q ? q[i] : s, p[i]);
}
