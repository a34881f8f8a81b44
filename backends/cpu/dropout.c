// dropout.c: dropout's float32 and float64 rows, with eight Philox4x32-10
// blocks (32 words) at a time in AVX2 lanes; declared in cdecl.h, called
// from cgo.go where the machine has AVX2 (lathe_has_avx2). The words are
// internal/philox's, bit for bit: dropout.go's Go rows, the cuda and wgpu
// kernels and this file make the same mask.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "cdecl.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

#define AVX2 __attribute__((target("avx2,fma")))

// mulhilo8 sets hi and lo to the high and low words of m·c in each of the
// eight lanes: vpmuludq multiplies the even lanes, and the odd ones
// shifted down.
AVX2 static inline void mulhilo8(__m256i c, __m256i m, __m256i *hi, __m256i *lo) {
	__m256i even = _mm256_mul_epu32(c, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);
	*hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
	*lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

// philox8 sets w[0..3] to the 32 words of the blocks at counters b ..
// b+7 under key (k0, k1), in element order: lane e of w[q] is word e % 4
// of block b + 2q + e / 4.
AVX2 static void philox8(__m256i w[4], uint64_t b, uint32_t k0, uint32_t k1) {
	uint32_t lo[8], hi[8];
	for (int j = 0; j < 8; j++) {
		lo[j] = (uint32_t)(b + j);
		hi[j] = (uint32_t)((b + j) >> 32);
	}
	__m256i c0 = _mm256_loadu_si256((const __m256i *)lo), c1 = _mm256_loadu_si256((const __m256i *)hi);
	__m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
	const __m256i m0 = _mm256_set1_epi64x(PHILOX_M0), m1 = _mm256_set1_epi64x(PHILOX_M1);
	for (int r = 0; r < 10; r++) {
		if (r > 0) {
			k0 += PHILOX_W0;
			k1 += PHILOX_W1;
		}
		__m256i hi0, lo0, hi1, lo1;
		mulhilo8(c0, m0, &hi0, &lo0);
		mulhilo8(c2, m1, &hi1, &lo1);
		c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)k0));
		c1 = lo1;
		c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)k1));
		c3 = lo0;
	}
	// Lane j of ck is word k of block b + j: a 4x8 transpose, in 128-bit
	// halves (blocks j and j + 4), then the halves put in order.
	__m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
	__m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
	__m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2); // blocks 0, 4 and 1, 5
	__m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3); // blocks 2, 6 and 3, 7
	w[0] = _mm256_permute2x128_si256(u0, u1, 0x20);
	w[1] = _mm256_permute2x128_si256(u2, u3, 0x20);
	w[2] = _mm256_permute2x128_si256(u0, u1, 0x31);
	w[3] = _mm256_permute2x128_si256(u2, u3, 0x31);
}

// The rows: dst[e] = src[e]·(keep ? scale : 0) for the n elements from
// index first, keep being the element's word at least threshold. A row
// walks the 32 words of eight blocks at a time from first's block, word w
// of a turn being element w - skip of the turn (skip: the words before
// first in its block, on the first turn). float32 keeps and scales eight
// lanes at a time where they are all the row's; float64, and lanes that
// straddle the row's ends, take the words one by one.

AVX2 static void drop_row_f32(float *dst, const float *src, ptrdiff_t n, uint64_t first, uint32_t k0, uint32_t k1, __m256i t,
			      uint32_t threshold, float scale) {
	const __m256 s = _mm256_set1_ps(scale);
	__m256i w[4];
	uint32_t words[32];
	uint64_t b = first / 4;
	for (ptrdiff_t i = -(ptrdiff_t)(first % 4); i < n; i += 32, b += 8) {
		philox8(w, b, k0, k1);
		ptrdiff_t lo = i < 0 ? -i : 0, hi = n - i < 32 ? n - i : 32;
		int stored = 0;
		for (int q = 0; q < 4; q++) {
			ptrdiff_t e0 = 8 * q;
			if (e0 >= lo && e0 + 8 <= hi) {
				// w >= t, unsigned: max(w, t) == w.
				__m256 keep = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_max_epu32(w[q], t), w[q]));
				_mm256_storeu_ps(dst + i + e0, _mm256_mul_ps(_mm256_loadu_ps(src + i + e0), _mm256_and_ps(keep, s)));
				continue;
			}
			if (!stored) {
				for (int k = 0; k < 4; k++) _mm256_storeu_si256((__m256i *)(words + 8 * k), w[k]);
				stored = 1;
			}
			for (ptrdiff_t e = e0 > lo ? e0 : lo; e < e0 + 8 && e < hi; e++) dst[i + e] = src[i + e] * (words[e] >= threshold ? scale : 0.0f);
		}
	}
}

AVX2 static void drop_row_f64(double *dst, const double *src, ptrdiff_t n, uint64_t first, uint32_t k0, uint32_t k1, uint32_t threshold,
			      double scale) {
	__m256i w[4];
	uint32_t words[32];
	uint64_t b = first / 4;
	for (ptrdiff_t i = -(ptrdiff_t)(first % 4); i < n; i += 32, b += 8) {
		philox8(w, b, k0, k1);
		for (int q = 0; q < 4; q++) _mm256_storeu_si256((__m256i *)(words + 8 * q), w[q]);
		ptrdiff_t lo = i < 0 ? -i : 0, hi = n - i < 32 ? n - i : 32;
		for (ptrdiff_t e = lo; e < hi; e++) dst[i + e] = src[i + e] * (words[e] >= threshold ? scale : 0.0);
	}
}

AVX2 void lathe_dropout_f32(float *dst, const float *src, ptrdiff_t n, uint64_t first, uint64_t key, uint32_t threshold, float scale) {
	drop_row_f32(dst, src, n, first, (uint32_t)key, (uint32_t)(key >> 32), _mm256_set1_epi32((int)threshold), threshold, scale);
}

AVX2 void lathe_dropout_f64(double *dst, const double *src, ptrdiff_t n, uint64_t first, uint64_t key, uint32_t threshold, double scale) {
	drop_row_f64(dst, src, n, first, (uint32_t)key, (uint32_t)(key >> 32), threshold, scale);
}

// The blocks (attention's probabilities, backends/cpu/attention.go's
// dropBlock): rows of a block at row stride ld, row r from index
// first + r·step, of cols elements, or under causal masking of
// diag + r + 1 of them (0 to cols); where dst is not src, dst's elements
// past a row's are zeroed, as src's are.
#define DROPOUT_BLOCK(T, ROW, ...)                                                                                       \
	for (ptrdiff_t r = 0; r < rows; r++) {                                                                           \
		ptrdiff_t n = cols;                                                                                      \
		if (causal) {                                                                                            \
			n = diag + r + 1;                                                                                \
			n = n < 0 ? 0 : n > cols ? cols : n;                                                             \
		}                                                                                                        \
		ROW(dst + r * ld, src + r * ld, n, first + (uint64_t)r * step, (uint32_t)key, (uint32_t)(key >> 32), __VA_ARGS__); \
		if (dst != src)                                                                                          \
			for (ptrdiff_t e = n; e < cols; e++) dst[r * ld + e] = (T)0;                                     \
	}

AVX2 void lathe_dropout_block_f32(float *dst, const float *src, ptrdiff_t ld, ptrdiff_t rows, ptrdiff_t cols, int causal, ptrdiff_t diag,
				  uint64_t first, uint64_t step, uint64_t key, uint32_t threshold, float scale) {
	const __m256i t = _mm256_set1_epi32((int)threshold);
	DROPOUT_BLOCK(float, drop_row_f32, t, threshold, scale)
}

AVX2 void lathe_dropout_block_f64(double *dst, const double *src, ptrdiff_t ld, ptrdiff_t rows, ptrdiff_t cols, int causal, ptrdiff_t diag,
				  uint64_t first, uint64_t step, uint64_t key, uint32_t threshold, double scale) {
	DROPOUT_BLOCK(double, drop_row_f64, threshold, scale)
}
