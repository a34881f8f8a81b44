// add_scaled.c: add_scaled's rows, p + alpha*q with one rounding
// (vfmadd), eight float32 or four float64 lanes at a time; declared in
// cdecl.h, called from cgo.go where the machine has AVX2 and FMA
// (lathe_has_avx2). add_scaled.go's Go rows give the same values (math.FMA).
#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#include "cdecl.h"

#define AVX2 __attribute__((target("avx2,fma")))

// One template for both dtypes: W lanes of vector type V, and the
// intrinsics and the C fma of T.
#define LATHE_ADD_SCALED_ROWS(T, sfx, V, W, set1, loadu, storeu, fmadd, fmaT)                              \
	AVX2 void lathe_add_scaled_##sfx(T *dst, const T *p, const T *q, T s, T alpha, ptrdiff_t n) {          \
		const V a = set1(alpha), splat = set1(s);                                                      \
		ptrdiff_t i = 0;                                                                               \
		for (; i + W <= n; i += W) storeu(dst + i, fmadd(a, q ? loadu(q + i) : splat, loadu(p + i)));   \
		for (; i < n; i++) dst[i] = fmaT(alpha, q ? q[i] : s, p[i]);                                   \
	}
LATHE_ADD_SCALED_ROWS(float, f32, __m256, 8, _mm256_set1_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_fmadd_ps, fmaf)
LATHE_ADD_SCALED_ROWS(double, f64, __m256d, 4, _mm256_set1_pd, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_fmadd_pd, fma)
