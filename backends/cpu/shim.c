//go:build cgo

// The C of the cpu backend, declared in cdecl.h and called only from
// cgo.go: OpenBLAS's GEMMs, reached through dlopen, and the AVX2 loops of a
// float32 sum and a float32 softmax row. Nothing here keeps a pointer it
// is given past the call.
#include <dlfcn.h>
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdecl.h"
#include "conv_tiles.h"

// ---- OpenBLAS ----

// The few CBLAS entry points lathe uses, found with dlopen so that lathe
// builds and runs without OpenBLAS (then gonum does the work). Values of
// the CBLAS enums: CblasRowMajor 101, CblasNoTrans 111, CblasTrans 112.
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *, int);
typedef char *(*config_fn)(void);
typedef void (*threads_fn)(int);

static sgemm_fn lathe_sgemm_p;
static dgemm_fn lathe_dgemm_p;
static config_fn lathe_config_p;
static threads_fn lathe_threads_p;

// lathe_blas_open returns NULL on success, else dlerror's text.
const char *lathe_blas_open(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
	lathe_sgemm_p = (sgemm_fn)dlsym(h, "cblas_sgemm");
	lathe_dgemm_p = (dgemm_fn)dlsym(h, "cblas_dgemm");
	lathe_config_p = (config_fn)dlsym(h, "openblas_get_config");
	// One thread to start with: blas_threads.go's gate sets the count
	// each call needs, and assumes it starts here.
	lathe_threads_p = (threads_fn)dlsym(h, "openblas_set_num_threads");
	if (lathe_threads_p) lathe_threads_p(1);
	if (!lathe_sgemm_p || !lathe_dgemm_p) return "no cblas_sgemm or cblas_dgemm in the library";
	return NULL;
}

const char *lathe_blas_config(void) { return lathe_config_p ? lathe_config_p() : "unknown"; }

int lathe_blas_threads(int n) {
	if (!lathe_threads_p) return 0;
	lathe_threads_p(n);
	return 1;
}

void lathe_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc) {
	lathe_sgemm_p(101, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void lathe_dgemm(int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                 const double *b, int ldb, double beta, double *c, int ldc) {
	lathe_dgemm_p(101, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// ---- AVX2 loops ----

// Loops that the Go compiler leaves scalar and that dominate a whole op's
// time: a float32 sum and a float32 softmax row. They are written with GCC's
// vector extensions and compiled for AVX2 with FMA by a target attribute
// on each function, the rest of the package's C staying baseline x86-64; a
// machine without AVX2 never calls them (cgo.go checks lathe_has_avx2 first).
// The softmax rows also come in AVX-512's sixteen lanes (vec_exp.h), which
// only a machine with AVX-512 calls (lathe_has_avx512).

typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));

#define AVX2 __attribute__((target("avx2,fma")))

int lathe_has_avx2(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

AVX2 static inline v8f load8(const float *p) { v8f v; memcpy(&v, p, sizeof v); return v; }
AVX2 static inline void store8(float *p, v8f v) { memcpy(p, &v, sizeof v); }

// Adds the two halves of v to a and b in float64.
AVX2 static inline void add_wide(v8f v, v4d *a, v4d *b) {
	v4f lo = __builtin_shufflevector(v, v, 0, 1, 2, 3), hi = __builtin_shufflevector(v, v, 4, 5, 6, 7);
	*a += __builtin_convertvector(lo, v4d);
	*b += __builtin_convertvector(hi, v4d);
}

AVX2 static inline double hsum(v4d a) { return (a[0] + a[1]) + (a[2] + a[3]); }

// affine8 is v·a + b in float64, rounded once to float32.
AVX2 static inline v8f affine8(v8f v, double a, double b) {
	v4f lo = __builtin_shufflevector(v, v, 0, 1, 2, 3), hi = __builtin_shufflevector(v, v, 4, 5, 6, 7);
	v4f rl = __builtin_convertvector(__builtin_convertvector(lo, v4d) * a + b, v4f);
	v4f rh = __builtin_convertvector(__builtin_convertvector(hi, v4d) * a + b, v4f);
	return __builtin_shufflevector(rl, rh, 0, 1, 2, 3, 4, 5, 6, 7);
}

// pick is mask ? a : b lane by lane (C has no vector ?:).
AVX2 static inline v8f pick(v8i mask, v8f a, v8f b) {
	v8i ia, ib, r;
	memcpy(&ia, &a, sizeof ia);
	memcpy(&ib, &b, sizeof ib);
	r = (mask & ia) | (~mask & ib);
	v8f out;
	memcpy(&out, &r, sizeof out);
	return out;
}

// lathe_sum_f32 adds blocks of sumBlock values in float32 lanes (64 lanes,
// each adding sumBlock/64 values, then the lanes added pairwise) and adds
// the blocks' sums in float64: a cascade, as PyTorch's cpu sum. Each value
// then goes through at most sumBlock/64 + 6 float32 roundings, so the
// error is at most about 22·2⁻²⁴·Σ|x| however long x is, and the loop reads
// float32 at memory speed instead of widening every value to float64
// (which halved its speed). Eight vectors of lanes rather than four (and
// blocks of 1024 rather than 256) read 32 MB in 10-12% less time, as
// measured in one process alternating the two.
enum { sumBlock = 1024 };

AVX2 static inline float hsum8(v8f v) {
	v4f h = __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
	return (h[0] + h[2]) + (h[1] + h[3]);
}

AVX2 double lathe_sum_f32(const float *x, ptrdiff_t n) {
	double s = 0;
	ptrdiff_t i = 0;
	for (; i + sumBlock <= n; i += sumBlock) {
		v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
		for (ptrdiff_t j = i; j < i + sumBlock; j += 64) {
			a0 += load8(x + j);
			a1 += load8(x + j + 8);
			a2 += load8(x + j + 16);
			a3 += load8(x + j + 24);
			a4 += load8(x + j + 32);
			a5 += load8(x + j + 40);
			a6 += load8(x + j + 48);
			a7 += load8(x + j + 56);
		}
		s += hsum8(((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)));
	}
	for (; i < n; i++) s += x[i];
	return s;
}

// lathe_prod_f32 is the product of the n values at x in float64, in
// sixteen chains (four vectors of four lanes) multiplied together at the
// end, where one chain's latency bounded the loop: a [1024, 1024] product
// over dim 1 took nine times torch's time. A float64 product of float32
// values keeps 29 bits beyond float32's, so the order moves the result
// rounded to float32 only at a hair from a tie (torch multiplies in
// float32 lanes).
AVX2 double lathe_prod_f32(const float *x, ptrdiff_t n) {
	v4d p0 = {1, 1, 1, 1}, p1 = p0, p2 = p0, p3 = p0;
	ptrdiff_t i = 0;
	for (; i + 16 <= n; i += 16) {
		v8f a = load8(x + i), b = load8(x + i + 8);
		p0 *= __builtin_convertvector(__builtin_shufflevector(a, a, 0, 1, 2, 3), v4d);
		p1 *= __builtin_convertvector(__builtin_shufflevector(a, a, 4, 5, 6, 7), v4d);
		p2 *= __builtin_convertvector(__builtin_shufflevector(b, b, 0, 1, 2, 3), v4d);
		p3 *= __builtin_convertvector(__builtin_shufflevector(b, b, 4, 5, 6, 7), v4d);
	}
	v4d p = (p0 * p1) * (p2 * p3);
	double r = (p[0] * p[1]) * (p[2] * p[3]);
	for (; i < n; i++) r *= x[i];
	return r;
}

// lathe_reduce_rows_f32 writes to dst[r] a reduction of each of rows runs
// of n >= 8 values, stride apart from x: lathe_sum_f32 rounded to float
// (op 0), lathe_extreme_f32's largest (1) or smallest (2), or
// lathe_prod_f32 rounded to float (3). A reduction over the last dim hands
// a goroutine's rows to one call, where a call per row cost as much as
// reducing a row of a thousand values.
AVX2 void lathe_reduce_rows_f32(int op, float *dst, const float *x, ptrdiff_t rows, ptrdiff_t n, ptrdiff_t stride) {
	for (ptrdiff_t r = 0; r < rows; r++) {
		const float *row = x + r * stride;
		switch (op) {
		case 0: dst[r] = (float)lathe_sum_f32(row, n); break;
		case 3: dst[r] = (float)lathe_prod_f32(row, n); break;
		default: dst[r] = lathe_extreme_f32(row, n, op == 1);
		}
	}
}

// lathe_arith_f32 writes op(p[i], q[i]) to dst[i] for i < n (op(p[i], s)
// where q is NULL): IEEE's float32 add, sub, mul and div, lane by lane,
// so the results are the Go loops' (arith.go) bit for bit, at eight lanes
// a step. The ops are numbered as arith.go's arithOp.
enum { arithAdd, arithSub, arithMul, arithDiv };

// A row of 16 MiB or more (one goroutine's part of a 32 MiB output) is
// too large to be read again from the cache by the next op, so its stores
// go straight to memory (non-temporal: no read of each destination line
// first), after a scalar head that aligns dst to 32 bytes: a third less
// memory traffic for a+b on 16M floats. Smaller rows keep ordinary
// stores, since an elementwise chain reads each result back at once, from
// the cache (streaming at 1 MiB made (a*b+c).relu on 4M floats 20% slower).
enum { streamMin = 1 << 22 };

AVX2 static inline void stream8(float *p, v8f v) { __builtin_ia32_movntps256(p, v); }

// splat8 is s in every lane. ((v8f){0} + s would turn a -0 into +0, and
// then x·s, x + s differ from the Go loops' in the sign of a zero.)
AVX2 static inline v8f splat8(float s) { return (v8f){s, s, s, s, s, s, s, s}; }

// ARITH_LOOP is written once for float32 (eight lanes, lathe_arith_f32)
// and float64 (four, lathe_arith_f64 in unary_f64.h): W lanes of vector
// type V, with that width's LOAD, STORE, STREAM and SPLAT.
#define ARITH_LOOP(OP, V, W, LOAD, STORE, STREAM, SPLAT) \
	do { \
		V sv = SPLAT(s); \
		if (n >= streamMin) { \
			for (; i < n && ((uintptr_t)(dst + i) & 31) != 0; i++) dst[i] = p[i] OP (q ? q[i] : s); \
			if (!q) \
				for (; i + W <= n; i += W) STREAM(dst + i, LOAD(p + i) OP sv); \
			else \
				for (; i + W <= n; i += W) STREAM(dst + i, LOAD(p + i) OP LOAD(q + i)); \
			__builtin_ia32_sfence(); \
		} else if (!q) { \
			for (; i + W <= n; i += W) STORE(dst + i, LOAD(p + i) OP sv); \
		} else { \
			for (; i + W <= n; i += W) STORE(dst + i, LOAD(p + i) OP LOAD(q + i)); \
		} \
		for (; i < n; i++) dst[i] = p[i] OP (q ? q[i] : s); \
	} while (0)

// ARITH_SWITCH runs M with op's operator.
#define ARITH_SWITCH(M)                    \
	switch (op) {                      \
	case arithAdd: M(+); break;        \
	case arithSub: M(-); break;        \
	case arithMul: M(*); break;        \
	case arithDiv: M(/); break;        \
	}

#define ARITH_F32(OP) ARITH_LOOP(OP, v8f, 8, load8, store8, stream8, splat8)

AVX2 void lathe_arith_f32(int op, float *dst, const float *p, const float *q, float s, ptrdiff_t n) {
	ptrdiff_t i = 0;
	ARITH_SWITCH(ARITH_F32)
}

// lathe_arith_bcast_f32 is lathe_arith_f32 over rows runs of cols values
// of full (dst the same shape), against b broadcast: b's cols values again
// for every run (per_row 0: a bias), or b[r] for every value of run r
// (per_row 1). b is the left operand where b_left is set (b - x, b / x).
// One call for the whole tensor, where a call per run cost more than a run
// of a few dozen values.
#define BCAST_RUN(OP, L, R, LV, RV) \
	do { \
		for (; j + 8 <= cols; j += 8) store8(d + j, LV OP RV); \
		for (; j < cols; j++) d[j] = L OP R; \
	} while (0)

#define BCAST_LOOP(OP) \
	for (ptrdiff_t r = 0; r < rows; r++) { \
		float *d = dst + r * cols; \
		const float *f = full + r * cols; \
		ptrdiff_t j = 0; \
		if (per_row) { \
			float s = b[r]; \
			v8f sv = splat8(s); \
			if (b_left) BCAST_RUN(OP, s, f[j], sv, load8(f + j)); \
			else BCAST_RUN(OP, f[j], s, load8(f + j), sv); \
		} else if (b_left) { \
			BCAST_RUN(OP, b[j], f[j], load8(b + j), load8(f + j)); \
		} else { \
			BCAST_RUN(OP, f[j], b[j], load8(f + j), load8(b + j)); \
		} \
	}

AVX2 void lathe_arith_bcast_f32(int op, float *dst, const float *full, const float *b, ptrdiff_t rows, ptrdiff_t cols, int per_row, int b_left) {
	ARITH_SWITCH(BCAST_LOOP)
}

// lathe_relu_backward_f32 writes 0 where x[i] <= 0, else g[i] (a NaN x
// passes g on), to dst for i < n: relu's gradient in one pass.
AVX2 void lathe_relu_backward_f32(float *dst, const float *g, const float *x, ptrdiff_t n) {
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) store8(dst + i, pick(load8(x + i) <= 0, (v8f){0}, load8(g + i)));
	for (; i < n; i++) dst[i] = x[i] <= 0 ? 0 : g[i];
}

// lathe_relu_f32 writes max(x, 0) of the n values at src to dst, with Go's
// max: NaN stays NaN and -0 gives +0.
AVX2 void lathe_relu_f32(float *dst, const float *src, ptrdiff_t n) {
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) {
		v8f v = load8(src + i);
		store8(dst + i, pick(v <= 0, (v8f){0}, v));
	}
	for (; i < n; i++) dst[i] = src[i] <= 0 ? 0 : src[i];
}

// ---- 16-bit float conversions ----

// lathe_widen16 writes the float32 values of the n 16-bit floats at src to
// dst, and lathe_narrow16 rounds n float32s to 16-bit floats (to nearest
// even), bit for bit as internal/half does: bf != 0 for bfloat16 (integer
// lane arithmetic), else float16 (F16C's vcvtph2ps and vcvtps2ph, which
// quiet a NaN and keep its sign and top payload bits, as half does). They
// run where cgo.go's haveF16C is set.

typedef unsigned int v8u __attribute__((vector_size(32)));
typedef short v8h __attribute__((vector_size(16)));
typedef unsigned short v8us __attribute__((vector_size(16)));

// FMA too, so that load8 and store8 (AVX2 with FMA) inline here: GCC does
// not inline a function built for instructions its caller is not, and the
// call per eight values made the loops three times slower.
#define F16C __attribute__((target("avx2,fma,f16c")))

int lathe_has_f16c(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

// isnan8 is a lane mask of the NaNs among eight float32 bit patterns: one
// unordered compare, where an integer test of the exponent and mantissa
// took three instructions.
F16C static inline v8u isnan8(v8u b) {
	v8f f;
	memcpy(&f, &b, sizeof f);
	v8i m = f != f;
	v8u u;
	memcpy(&u, &m, sizeof u);
	return u;
}

// bf16 → f32: the bits moved up 16; a NaN gets the quiet bit.
F16C static inline v8u widen_bf16(v8us h) {
	v8u b = __builtin_convertvector(h, v8u) << 16;
	return b | (isnan8(b) & 0x00400000);
}

// f32 → bf16: round the dropped 16 bits to nearest even; a NaN keeps its
// top bits and gets the quiet bit (the rounding add could carry it away).
F16C static inline v8us narrow_bf16(v8u b) {
	v8u nan = isnan8(b);
	v8u r = (b + 0x7fff + ((b >> 16) & 1)) >> 16;
	v8u q = (b >> 16) | 0x0040;
	return __builtin_convertvector((nan & q) | (~nan & r), v8us);
}

// load8us is the eight 16-bit values from p.
static inline v8us load8us(const unsigned short *p) {
	v8us h;
	memcpy(&h, p, sizeof h);
	return h;
}

// widen8 is the float32 values of eight 16-bit floats.
F16C static inline v8f widen8(v8us h, int bf) {
	v8f f;
	if (bf) {
		v8u b = widen_bf16(h);
		memcpy(&f, &b, sizeof f);
		return f;
	}
	v8h hs;
	memcpy(&hs, &h, sizeof hs);
	return __builtin_ia32_vcvtph2ps256(hs);
}

// widen_loop and narrow_loop are inlined with bf a constant, so that each
// dtype's loop is its own and tests nothing per value.
F16C static inline void widen_loop(float *dst, const unsigned short *src, ptrdiff_t n, int bf) {
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) {
		v8us h;
		memcpy(&h, src + i, sizeof h);
		store8(dst + i, widen8(h, bf));
	}
	for (; i < n; i++) dst[i] = widen8((v8us){src[i]}, bf)[0];
}

F16C void lathe_widen16(float *dst, const unsigned short *src, ptrdiff_t n, int bf) {
	if (bf) {
		widen_loop(dst, src, n, 1);
	} else {
		widen_loop(dst, src, n, 0);
	}
}

F16C static inline v8us narrow8(v8f f, int bf) {
	if (bf) {
		v8u b;
		memcpy(&b, &f, sizeof b);
		return narrow_bf16(b);
	}
	v8h h = __builtin_ia32_vcvtps2ph256(f, 0); // 0: round to nearest even
	v8us u;
	memcpy(&u, &h, sizeof u);
	return u;
}

F16C static inline void narrow_loop(unsigned short *dst, const float *src, ptrdiff_t n, int bf) {
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) {
		v8us h = narrow8(load8(src + i), bf);
		memcpy(dst + i, &h, sizeof h);
	}
	for (; i < n; i++) dst[i] = narrow8((v8f){src[i]}, bf)[0];
}

F16C void lathe_narrow16(unsigned short *dst, const float *src, ptrdiff_t n, int bf) {
	if (bf) {
		narrow_loop(dst, src, n, 1);
	} else {
		narrow_loop(dst, src, n, 0);
	}
}

// ---- casts between float32, float64 and int32 ----

// lathe_convert writes the n values at src converted to dst's type, bit
// for bit as Go's conversions on amd64 (cast.go's convertRows and
// truncRows32, which run where this does not): the same instructions,
// under the same rounding mode. A float to int32 truncates toward zero;
// NaN and a value outside int32 give INT32_MIN, x86's "integer
// indefinite", which is what torch gives, so no lane needs a test.

AVX2 void lathe_convert(int kind, void *dst, const void *src, ptrdiff_t n) {
	ptrdiff_t i = 0;
	switch (kind) {
	case convF32F64: {
		const float *s = src;
		double *d = dst;
		for (; i + 4 <= n; i += 4) _mm256_storeu_pd(d + i, _mm256_cvtps_pd(_mm_loadu_ps(s + i)));
		for (; i < n; i++) d[i] = s[i];
		break;
	}
	case convF64F32: {
		const double *s = src;
		float *d = dst;
		for (; i + 4 <= n; i += 4) _mm_storeu_ps(d + i, _mm256_cvtpd_ps(_mm256_loadu_pd(s + i)));
		for (; i < n; i++) d[i] = (float)s[i];
		break;
	}
	case convI32F32: {
		const int32_t *s = src;
		float *d = dst;
		for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(s + i))));
		for (; i < n; i++) d[i] = (float)s[i];
		break;
	}
	case convI32F64: {
		const int32_t *s = src;
		double *d = dst;
		for (; i + 4 <= n; i += 4) _mm256_storeu_pd(d + i, _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(s + i))));
		for (; i < n; i++) d[i] = s[i];
		break;
	}
	case convF32I32: {
		const float *s = src;
		int32_t *d = dst;
		for (; i + 8 <= n; i += 8) _mm256_storeu_si256((__m256i *)(d + i), _mm256_cvttps_epi32(_mm256_loadu_ps(s + i)));
		for (; i < n; i++) d[i] = _mm_cvttss_si32(_mm_set_ss(s[i]));
		break;
	}
	case convF64I32: {
		const double *s = src;
		int32_t *d = dst;
		for (; i + 4 <= n; i += 4) _mm_storeu_si128((__m128i *)(d + i), _mm256_cvttpd_epi32(_mm256_loadu_pd(s + i)));
		for (; i < n; i++) d[i] = _mm_cvttsd_si32(_mm_set_sd(s[i]));
		break;
	}
	}
}

// ---- 16-bit elementwise ops ----

// lathe_half_map runs a float32 elementwise kernel on 16-bit floats (bf:
// bfloat16): the operands widened halfBlock values at a time into the
// stack, the float32 row kernel run there, its results rounded into dst, all
// while the block is in L1. The results are the float32 kernel's rounded
// once, as narrow.go's blocks of registerElementwise give, without those
// blocks' three passes through L2. q NULL: the arithmetic takes s. The ops
// are numbered as narrow_fused.go's halfOp; dst may be p or q.
enum { halfBlock = 512 };
enum { halfAdd, halfSub, halfMul, halfDiv, halfReLU, halfReLUBackward, halfGELUBackward, halfGELUTanhBackward, halfSiLUBackward };

// half_widen is lathe_widen16 for lathe_half_map, where a bfloat16 NaN
// need not be quieted on the way in: every kernel there gives a NaN
// argument's bits or the machine's quiet NaN, and narrow_bf16 quiets what
// it rounds, so the bits are those of the quieted path.
F16C static inline void half_widen(float *dst, const unsigned short *src, ptrdiff_t n, int bf) {
	if (!bf) {
		widen_loop(dst, src, n, 0);
		return;
	}
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) {
		v8us h;
		memcpy(&h, src + i, sizeof h);
		v8u b = __builtin_convertvector(h, v8u) << 16;
		memcpy(dst + i, &b, sizeof b);
	}
	for (; i < n; i++) {
		uint32_t b = (uint32_t)src[i] << 16;
		memcpy(dst + i, &b, sizeof b);
	}
}

F16C void lathe_half_map(int op, int bf, unsigned short *dst, const unsigned short *p, const unsigned short *q, float s, ptrdiff_t n) {
	float a[halfBlock] __attribute__((aligned(32))), b[halfBlock] __attribute__((aligned(32))), d[halfBlock] __attribute__((aligned(32)));
	for (ptrdiff_t i = 0; i < n; i += halfBlock) {
		ptrdiff_t m = n - i < halfBlock ? n - i : halfBlock;
		half_widen(a, p + i, m, bf);
		if (q) half_widen(b, q + i, m, bf);
		switch (op) {
		case halfReLU: lathe_relu_f32(d, a, m); break;
		case halfReLUBackward: lathe_relu_backward_f32(d, a, b, m); break;
		case halfGELUBackward:
		case halfGELUTanhBackward:
		case halfSiLUBackward: lathe_act_backward_f32(op - halfGELUBackward, d, a, b, m, 0); break;
		default: lathe_arith_f32(op, d, a, q ? b : NULL, s, m);
		}
		lathe_narrow16(dst + i, d, m, bf);
	}
}

// lathe_half_rows is lathe_half_map's arithmetic over rows of cols values
// against one 16-bit value per row, b[(first + r) mod period] for row r: a
// channel's bias on an NCHW batch (period C), or a value per row (period
// rows).
F16C void lathe_half_rows(int op, int bf, unsigned short *dst, const unsigned short *p, const unsigned short *b, ptrdiff_t first,
	ptrdiff_t period, ptrdiff_t rows, ptrdiff_t cols) {
	for (ptrdiff_t r = 0; r < rows; r++) {
		float s = widen8((v8us){b[(first + r) % period]}, bf)[0];
		lathe_half_map(op, bf, dst + r * cols, p + r * cols, NULL, s, cols);
	}
}

// lathe_unary_f32's ops (erf32.go's unaryOp), which vec_unary.h's loops take.
enum { unaryNeg, unaryAbs, unarySquare, unaryReciprocal, unaryRsqrt, unaryFloor, unaryCeil, unaryRound, unarySign, unaryClamp,
	unaryLeakyReLU, unarySigmoid, unarySiLU, unaryTanh, unaryGELUTanh };

// GELU and its gradient in float32 lanes. Φ(x) comes from the normal tail
// Q(a) = e^(-a²/2)·N(a), a = |x|: Φ = 1 - Q for x ≥ 0 and Q below, so that
// no value of Φ is a difference that cancels (torch's float32 kernel takes
// 1 + erf(x/√2) with an erf good to 1.5e-7 absolute, hundreds of ulps of
// GELU in the left tail). N is a degree-10 polynomial in t = 2/(2 + a)
// (build/gelu32/fit.py fits it and says why); a²/2 is split so that e^(-a²/2)
// keeps float32's precision at large a. Eight lanes with no table lookup:
// about a third of the work per value of erf4d's float64 pieces. Within a
// few float32 ulps of float64's GELU and gradient (cpu's TestGelu32 states
// the bound). vec_unary.h has the code, for each width.
static const float gelu_n[11] = {-3.15896955e-06f, 0.199587435f, 0.197628289f, 0.166149423f, -0.0432686545f, 0.27972272f,
                                 -0.931249917f, 1.17704916f, -0.778404772f, 0.27344653f, -0.0406570733f};

// The exponential, the softmax row and the direct convolution in eight
// lanes (vec_exp.h, vec_conv.h; sixteen below).
#define W 8
#define RMAX 6
#define VF v8f
#define VI v8i
#define VEC AVX2
#define LOADW load8
#define STOREW store8
#define SPLATW splat8
#define PICKW pick
#define HSUMW hsum8
#define FMSW __builtin_ia32_vfmsubps256
#include "vec_exp.h"
#include "vec_unary.h"
#include "vec_conv.h"
#include "vec_undef.h"

// The same in AVX-512's sixteen lanes, where the cpu has them.
typedef float v16f __attribute__((vector_size(64)));
typedef int v16i __attribute__((vector_size(64)));

#define AVX512 __attribute__((target("avx512f,avx512dq,avx2,fma")))

int lathe_has_avx512(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && lathe_has_avx2();
}

AVX512 static inline v16f load16(const float *p) { v16f v; memcpy(&v, p, sizeof v); return v; }
AVX512 static inline void store16(float *p, v16f v) { memcpy(p, &v, sizeof v); }
AVX512 static inline v16f pick16(v16i mask, v16f a, v16f b) {
	v16i ia, ib, r;
	memcpy(&ia, &a, sizeof ia);
	memcpy(&ib, &b, sizeof ib);
	r = (mask & ia) | (~mask & ib);
	v16f out;
	memcpy(&out, &r, sizeof out);
	return out;
}
AVX512 static inline v16f splat16(float s) { return (v16f){s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s}; }
// fmsub16 is a·b - c rounded once, as __builtin_ia32_vfmsubps256 in eight.
AVX512 static inline v16f fmsub16(v16f a, v16f b, v16f c) { return (v16f)_mm512_fmsub_ps((__m512)a, (__m512)b, (__m512)c); }
AVX512 static inline float hsum16(v16f v) {
	return hsum8(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
}

#define W 16
#define RMAX 12
#define VF v16f
#define VI v16i
#define VEC AVX512
#define LOADW load16
#define STOREW store16
#define SPLATW splat16
#define PICKW pick16
#define HSUMW hsum16
#define FMSW fmsub16
#include "vec_exp.h"
#include "vec_unary.h"
#include "vec_conv.h"
#include "vec_undef.h"

// expf8 is e^x for every x: +Inf past float32's largest e^x (x > 88.72),
// 0 below -104, NaN for NaN.
AVX2 static inline v8f expf8(v8f x) {
	v8i over = x > 88.7228394f, under = x < -104.0f;
	v8f c = pick(under | over, splat8(0.0f), x); // NaN: 0 here, the NaN below; e^0 keeps under's lanes off subnormals (exp8)
	v8f kf = __builtin_ia32_roundps256(c * 1.44269504088896341f, 0); // to nearest
	v8f e = pick(under, splat8(0.0f), pick(over, splat8(__builtin_inff()), exp_kr8(c, kf)));
	return pick(x != x, x, e);
}

// lathe_sum_cols_f32 writes to dst[j] the sum over i < rows of
// x[i·stride + j], for j < cols: a sum over the leading dim of a row-major
// matrix (a bias's gradient). Columns go 64 at a time in eight float32
// lanes each, walking the rows in memory order; each block of colBlock
// rows is added to float64 sums, so that a term sees at most colBlock
// float32 roundings (as lathe_sum_f32's cascade bounds its own).
enum { colBlock = 64 };

AVX2 static void sum_cols64(double *acc, const float *x, ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t stride) {
	v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
	for (ptrdiff_t i = i0; i < i1; i++) {
		const float *r = x + i * stride;
		a0 += load8(r), a1 += load8(r + 8), a2 += load8(r + 16), a3 += load8(r + 24);
		a4 += load8(r + 32), a5 += load8(r + 40), a6 += load8(r + 48), a7 += load8(r + 56);
	}
	v8f a[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
	for (int v = 0; v < 8; v++)
		for (int l = 0; l < 8; l++) acc[8 * v + l] += a[v][l];
}

AVX2 void lathe_sum_cols_f32(float *dst, const float *x, ptrdiff_t rows, ptrdiff_t stride, ptrdiff_t cols) {
	ptrdiff_t j0 = 0;
	for (; j0 + 64 <= cols; j0 += 64) {
		double acc[64] = {0};
		for (ptrdiff_t i0 = 0; i0 < rows; i0 += colBlock) sum_cols64(acc, x + j0, i0, i0 + colBlock < rows ? i0 + colBlock : rows, stride);
		for (int j = 0; j < 64; j++) dst[j0 + j] = (float)acc[j];
	}
	if (j0 < cols) { // the last columns, one at a time within each block
		ptrdiff_t w = cols - j0;
		double acc[64] = {0};
		for (ptrdiff_t i0 = 0; i0 < rows; i0 += colBlock) {
			float part[64] = {0};
			ptrdiff_t i1 = i0 + colBlock < rows ? i0 + colBlock : rows;
			for (ptrdiff_t i = i0; i < i1; i++)
				for (ptrdiff_t j = 0; j < w; j++) part[j] += x[i * stride + j0 + j];
			for (ptrdiff_t j = 0; j < w; j++) acc[j] += part[j];
		}
		for (ptrdiff_t j = 0; j < w; j++) dst[j0 + j] = (float)acc[j];
	}
}

// lathe_extreme_cols_f32 writes to dst[j] the largest (more) or smallest
// of x[i·stride + j] over i < rows, for j < cols, as reduce.go's
// extremeColumns: the first NaN of a column, else its first extreme (of ±0
// too). maxps(v, a) is v > a ? v : a, which keeps a for a tie and for a
// NaN v, so a NaN v is taken apart, and a NaN a kept. Columns go 64 at a
// time in eight vectors, walking the rows in memory order.
#define EXTREME_COL(a, v, F) pick((a) != (a), (a), pick((v) != (v), (v), F((v), (a))))

AVX2 void lathe_extreme_cols_f32(float *dst, const float *x, ptrdiff_t rows, ptrdiff_t stride, ptrdiff_t cols, int more) {
	ptrdiff_t j0 = 0;
	for (; j0 + 64 <= cols; j0 += 64) {
		v8f a[8];
		for (int v = 0; v < 8; v++) a[v] = load8(x + j0 + 8 * v);
		for (ptrdiff_t i = 1; i < rows; i++) {
			const float *r = x + i * stride + j0;
			if (more)
				for (int v = 0; v < 8; v++) a[v] = EXTREME_COL(a[v], load8(r + 8 * v), __builtin_ia32_maxps256);
			else
				for (int v = 0; v < 8; v++) a[v] = EXTREME_COL(a[v], load8(r + 8 * v), __builtin_ia32_minps256);
		}
		for (int v = 0; v < 8; v++) store8(dst + j0 + 8 * v, a[v]);
	}
	for (ptrdiff_t j = j0; j < cols; j++) { // the last columns, one at a time
		float a = x[j];
		for (ptrdiff_t i = 1; i < rows && a == a; i++) {
			float v = x[i * stride + j];
			if (v != v || (more ? v > a : v < a)) a = v;
		}
		dst[j] = a;
	}
}

#undef EXTREME_COL

// lathe_transpose32 writes dst[r·ldd + c] = src[c·lds + r] for r < rows
// and c < cols: a copy of 4-byte elements whose last dim is read across
// src's rows (copy.go's transposeCopy). It goes by 8 × 8 tiles, eight
// loads of eight neighbouring elements transposed in registers (two
// rounds of unpacks and shuffles, then the 128-bit halves exchanged) and
// eight stores, where an element at a time read a cache line per element;
// the edges go one element at a time. Shuffles move bits, so NaNs keep
// theirs.
AVX2 static inline void transpose8x8(uint32_t *dst, ptrdiff_t ldd, const uint32_t *src, ptrdiff_t lds) {
	__m256 r[8], t[8], u[8];
	for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps((const float *)(src + i * lds));
	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
	}
	for (int i = 0; i < 8; i += 4) {
		u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
		u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
		u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
		u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
	}
	for (int i = 0; i < 4; i++) {
		_mm256_storeu_ps((float *)(dst + i * ldd), _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
		_mm256_storeu_ps((float *)(dst + (i + 4) * ldd), _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
	}
}

AVX2 void lathe_transpose32(uint32_t *dst, const uint32_t *src, ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t ldd, ptrdiff_t lds) {
	ptrdiff_t r0 = 0;
	for (; r0 + 8 <= rows; r0 += 8) {
		ptrdiff_t c0 = 0;
		for (; c0 + 8 <= cols; c0 += 8) transpose8x8(dst + r0 * ldd + c0, ldd, src + c0 * lds + r0, lds);
		for (; c0 < cols; c0++)
			for (ptrdiff_t r = r0; r < r0 + 8; r++) dst[r * ldd + c0] = src[c0 * lds + r];
	}
	for (; r0 < rows; r0++)
		for (ptrdiff_t c = 0; c < cols; c++) dst[r0 * ldd + c] = src[c * lds + r0];
}

// lathe_compare32 writes op(p[i], q[i]) (op(p[i], s) where q is NULL) as
// a Go bool (one byte, 0 or 1) for i < n, of float32s or (isint) int32s,
// op numbered as rows.go's cmpOp: ==, !=, <, <=, >, >=, with Go's answers
// for NaN (only != holds). Eight lanes compare at once and their masks
// pack to eight bytes, where Go's loop took a compare and a byte store per
// element.
AVX2 static inline __m256i compare8(int op, __m256i a, __m256i b, int isint) {
	if (isint) {
		__m256i eq = _mm256_cmpeq_epi32(a, b), ones = _mm256_set1_epi32(-1);
		switch (op) {
		case 0: return eq;
		case 1: return _mm256_xor_si256(eq, ones);
		case 2: return _mm256_cmpgt_epi32(b, a);
		case 3: return _mm256_xor_si256(_mm256_cmpgt_epi32(a, b), ones);
		case 4: return _mm256_cmpgt_epi32(a, b);
		default: return _mm256_xor_si256(_mm256_cmpgt_epi32(b, a), ones);
		}
	}
	__m256 x = _mm256_castsi256_ps(a), y = _mm256_castsi256_ps(b);
	switch (op) {
	case 0: return _mm256_castps_si256(_mm256_cmp_ps(x, y, _CMP_EQ_OQ));
	case 1: return _mm256_castps_si256(_mm256_cmp_ps(x, y, _CMP_NEQ_UQ));
	case 2: return _mm256_castps_si256(_mm256_cmp_ps(x, y, _CMP_LT_OQ));
	case 3: return _mm256_castps_si256(_mm256_cmp_ps(x, y, _CMP_LE_OQ));
	case 4: return _mm256_castps_si256(_mm256_cmp_ps(x, y, _CMP_GT_OQ));
	default: return _mm256_castps_si256(_mm256_cmp_ps(x, y, _CMP_GE_OQ));
	}
}

// COMPARE_LOOP is lathe_compare32's loop for one op and kind, constants in
// each use so that each loop is its own.
#define COMPARE_LOOP(OP, ISINT)                                                                                     \
	do {                                                                                                        \
		for (; i + 8 <= n; i += 8) {                                                                        \
			__m256i a = _mm256_loadu_si256((const __m256i *)(p + i));                                   \
			__m256i b = q ? _mm256_loadu_si256((const __m256i *)(q + i)) : sv;                          \
			__m256i m = compare8(OP, a, b, ISINT);                                                      \
			__m128i w = _mm_packs_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));     \
			_mm_storel_epi64((__m128i *)(dst + i), _mm_and_si128(_mm_packs_epi16(w, w), _mm_set1_epi8(1))); \
		}                                                                                                   \
	} while (0)

AVX2 void lathe_compare32(int op, uint8_t *dst, const uint32_t *p, const uint32_t *q, uint32_t s, ptrdiff_t n, int isint) {
	ptrdiff_t i = 0;
	const __m256i sv = _mm256_set1_epi32((int)s);
	switch (op * 2 + (isint != 0)) {
	case 0: COMPARE_LOOP(0, 0); break;
	case 1: COMPARE_LOOP(0, 1); break;
	case 2: COMPARE_LOOP(1, 0); break;
	case 3: COMPARE_LOOP(1, 1); break;
	case 4: COMPARE_LOOP(2, 0); break;
	case 5: COMPARE_LOOP(2, 1); break;
	case 6: COMPARE_LOOP(3, 0); break;
	case 7: COMPARE_LOOP(3, 1); break;
	case 8: COMPARE_LOOP(4, 0); break;
	case 9: COMPARE_LOOP(4, 1); break;
	case 10: COMPARE_LOOP(5, 0); break;
	case 11: COMPARE_LOOP(5, 1); break;
	}
	// The tail: the same lanes over a padded copy.
	if (i < n) {
		uint32_t pt[8] = {0}, qt[8] = {0};
		uint8_t rt[16];
		memcpy(pt, p + i, (size_t)(n - i) * sizeof *p);
		if (q) memcpy(qt, q + i, (size_t)(n - i) * sizeof *q);
		__m256i a = _mm256_loadu_si256((const __m256i *)pt), b = q ? _mm256_loadu_si256((const __m256i *)qt) : sv;
		__m256i m = compare8(op, a, b, isint);
		__m128i w = _mm_packs_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
		_mm_storeu_si128((__m128i *)rt, _mm_and_si128(_mm_packs_epi16(w, w), _mm_set1_epi8(1)));
		memcpy(dst + i, rt, (size_t)(n - i));
	}
}

#undef COMPARE_LOOP

// lathe_where32 and lathe_where64 write c[i] ? a[i] : b[i] for i < n, of
// 4- and 8-byte elements moved as bits (rows.go's where): a (or b) NULL
// takes the one value as (bs) for every i, the layouts that masks and
// gradient rules make. Eight (four) bools widen to a lane mask at a time
// and one blend picks, where Go's loop took a mask and two ands per
// element (tril of [1024, 1024] took ten times torch's time, most of it
// in where). A Go bool is one byte holding 0 or 1.
AVX2 void lathe_where32(uint32_t *dst, const uint8_t *c, const uint32_t *a, const uint32_t *b, uint32_t as, uint32_t bs, ptrdiff_t n) {
	ptrdiff_t i = 0;
	const __m256i sa = _mm256_set1_epi32((int)as), sb = _mm256_set1_epi32((int)bs), zero = _mm256_setzero_si256();
	for (; i + 8 <= n; i += 8) {
		__m256i m = _mm256_cmpgt_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(c + i))), zero);
		__m256i va = a ? _mm256_loadu_si256((const __m256i *)(a + i)) : sa;
		__m256i vb = b ? _mm256_loadu_si256((const __m256i *)(b + i)) : sb;
		_mm256_storeu_si256((__m256i *)(dst + i), _mm256_blendv_epi8(vb, va, m));
	}
	for (; i < n; i++) dst[i] = c[i] ? (a ? a[i] : as) : (b ? b[i] : bs);
}

AVX2 void lathe_where64(uint64_t *dst, const uint8_t *c, const uint64_t *a, const uint64_t *b, uint64_t as, uint64_t bs, ptrdiff_t n) {
	ptrdiff_t i = 0;
	const __m256i sa = _mm256_set1_epi64x((long long)as), sb = _mm256_set1_epi64x((long long)bs), zero = _mm256_setzero_si256();
	for (; i + 4 <= n; i += 4) {
		int32_t four;
		memcpy(&four, c + i, sizeof four);
		__m256i m = _mm256_cmpgt_epi64(_mm256_cvtepu8_epi64(_mm_cvtsi32_si128(four)), zero);
		__m256i va = a ? _mm256_loadu_si256((const __m256i *)(a + i)) : sa;
		__m256i vb = b ? _mm256_loadu_si256((const __m256i *)(b + i)) : sb;
		_mm256_storeu_si256((__m256i *)(dst + i), _mm256_blendv_epi8(vb, va, m));
	}
	for (; i < n; i++) dst[i] = c[i] ? (a ? a[i] : as) : (b ? b[i] : bs);
}

// lathe_sqrt_f32 writes the square roots of the n values at src to dst:
// vsqrtps rounds correctly, so these are float64's square roots rounded
// to float32, bit for bit.
AVX2 void lathe_sqrt_f32(float *dst, const float *src, ptrdiff_t n) {
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) store8(dst + i, __builtin_ia32_sqrtps256(load8(src + i)));
	for (; i < n; i++) dst[i] = __builtin_sqrtf(src[i]);
}

// lathe_exp_rows_f32 writes e^x of the n values at src to dst.
AVX2 void lathe_exp_rows_f32(float *dst, const float *src, ptrdiff_t n) {
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) store8(dst + i, expf8(load8(src + i)));
	if (i < n) { // the tail through the same lanes, so every length gives the same values
		float xt[8] = {0}, rt[8];
		memcpy(xt, src + i, (n - i) * sizeof *src);
		store8(rt, expf8(load8(xt)));
		memcpy(dst + i, rt, (n - i) * sizeof *dst);
	}
}

// ---- float32 unary ops ----

// lathe_unary_f32 writes op(x) of the n values at src to dst, in eight
// lanes: the ops that elementwise.go's map1 ran through a call per element
// and float64 math (30 times torch's time for neg, 20 for sigmoid). The
// ops are numbered as erf32.go's unaryOp; a and b are clamp's bounds and
// leaky_relu's slope. The tail goes through the same lanes, so every
// length gives the same values. Exact where float32 arithmetic is (neg,
// abs, square, the roundings, sign, clamp, leaky_relu; reciprocal and
// rsqrt as torch's float32 division and square root); sigmoid, silu and
// tanh within the few ulps that unary_test.go states.

#define UNARY_LOOP(expr)                                                                                                         \
	do {                                                                                                                     \
		ptrdiff_t i = 0;                                                                                                 \
		for (; i + 8 <= n; i += 8) {                                                                                     \
			v8f x = load8(src + i);                                                                                  \
			store8(dst + i, (expr));                                                                                 \
		}                                                                                                                \
		if (i < n) {                                                                                                     \
			float xt[8] = {0}, rt[8];                                                                                \
			memcpy(xt, src + i, (n - i) * sizeof *src);                                                              \
			v8f x = load8(xt);                                                                                       \
			store8(rt, (expr));                                                                                      \
			memcpy(dst + i, rt, (n - i) * sizeof *dst);                                                              \
		}                                                                                                                \
	} while (0)

AVX2 void lathe_unary_f32(int op, float *dst, const float *src, ptrdiff_t n, float a, float b, int wide) {
	const v8f zero = splat8(0.0f), one = splat8(1.0f), lo = splat8(a), hi = splat8(b);
	switch (op) {
	case unaryNeg: UNARY_LOOP(-x); break;
	case unaryAbs: UNARY_LOOP(abs8(x)); break;
	case unarySquare: UNARY_LOOP(x * x); break;
	case unaryReciprocal: UNARY_LOOP(one / x); break;
	case unaryRsqrt: UNARY_LOOP(one / __builtin_ia32_sqrtps256(x)); break;
	// roundps modes: 1 down, 2 up, 0 to nearest even; 8 keeps the
	// inexact exception quiet.
	case unaryFloor: UNARY_LOOP(__builtin_ia32_roundps256(x, 9)); break;
	case unaryCeil: UNARY_LOOP(__builtin_ia32_roundps256(x, 10)); break;
	case unaryRound: UNARY_LOOP(__builtin_ia32_roundps256(x, 8)); break;
	case unarySign: UNARY_LOOP(pick(x > zero, one, pick(x < zero, -one, zero))); break; // 0 for ±0 and NaN, as torch.sign
	case unaryClamp: UNARY_LOOP(pick(x != x, x, __builtin_ia32_minps256(__builtin_ia32_maxps256(x, lo), hi))); break;
	case unaryLeakyReLU: UNARY_LOOP(pick(x > zero, x, x * lo)); break;
	case unarySigmoid:
	case unarySiLU:
	case unaryTanh:
	case unaryGELUTanh:
		if (wide)
			unary_exp_rows16(op, dst, src, n);
		else
			unary_exp_rows8(op, dst, src, n);
		break;
	}
}

// lathe_binary_f32 writes op(p[i], q[i]) to dst[i] for i < n (op(p[i],
// s) where q is NULL), for the binary ops that binary.go ran through a call
// per element (torch.maximum and minimum took 40 times torch's time):
// maximum and minimum in float32 lanes, the Go functions' values bit for
// bit, a NaN in either operand propagating as that operand, and a tie (±0)
// giving q; fmod, remainder (torch's: the fmod moved into the divisor's
// sign, r + b where r is not 0 and its sign is not b's), pow and atan2 in
// float64 lanes (binary64.h). The ops are numbered as binary.go's
// binaryOp; the tail goes through the same lanes. It is defined after
// binary64.h, whose functions need the float64 lanes' helpers.
enum { binaryMaximum, binaryMinimum, binaryFMod, binaryRemainder, binaryPow, binaryAtan2 };

#define BINARY_LOOP(expr)                                                                                                        \
	do {                                                                                                                     \
		ptrdiff_t i = 0;                                                                                                 \
		const v8f sv = splat8(s);                                                                                        \
		for (; i + 8 <= n; i += 8) {                                                                                     \
			v8f a = load8(p + i), b = q ? load8(q + i) : sv;                                                         \
			store8(dst + i, (expr));                                                                                 \
		}                                                                                                                \
		if (i < n) {                                                                                                     \
			float at[8] = {0}, bt[8] = {0}, rt[8];                                                                   \
			memcpy(at, p + i, (n - i) * sizeof *p);                                                                  \
			if (q) memcpy(bt, q + i, (n - i) * sizeof *q);                                                           \
			v8f a = load8(at), b = q ? load8(bt) : sv;                                                               \
			store8(rt, (expr));                                                                                      \
			memcpy(dst + i, rt, (n - i) * sizeof *dst);                                                              \
		}                                                                                                                \
	} while (0)

// lathe_extreme_f32 is the largest (more) or the smallest of the n ≥ 8
// floats at x, or a NaN where any is NaN: four vectors of running extremes
// and a mask of the NaNs seen, combined at the end. Which NaN, and which
// of two zeros, is reduce.go's to find.
#define EXTREME_LOOP(F, CMP)                                                                                                     \
	do {                                                                                                                     \
		for (; i + 32 <= n; i += 32) {                                                                                   \
			v8f v0 = load8(x + i), v1 = load8(x + i + 8), v2 = load8(x + i + 16), v3 = load8(x + i + 24);            \
			nan |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);                                               \
			a0 = F(a0, v0), a1 = F(a1, v1), a2 = F(a2, v2), a3 = F(a3, v3);                                          \
		}                                                                                                                \
		for (; i + 8 <= n; i += 8) {                                                                                     \
			v8f v = load8(x + i);                                                                                    \
			nan |= v != v;                                                                                           \
			a0 = F(a0, v);                                                                                           \
		}                                                                                                                \
		a0 = F(F(a0, a1), F(a2, a3));                                                                                    \
		for (int l = 0; l < 8; l++) best = a0[l] CMP best ? a0[l] : best;                                               \
		for (; i < n; i++) {                                                                                             \
			if (x[i] != x[i]) return x[i];                                                                           \
			best = x[i] CMP best ? x[i] : best;                                                                      \
		}                                                                                                                \
	} while (0)

AVX2 float lathe_extreme_f32(const float *x, ptrdiff_t n, int more) {
	v8f a0 = load8(x), a1 = a0, a2 = a0, a3 = a0;
	v8i nan = a0 != a0;
	float best = x[0];
	ptrdiff_t i = 8;
	if (more)
		EXTREME_LOOP(__builtin_ia32_maxps256, >);
	else
		EXTREME_LOOP(__builtin_ia32_minps256, <);
	for (int l = 0; l < 8; l++)
		if (nan[l]) return __builtin_nanf("");
	return best;
}

// sort_key_f32 is sort.go's sortKeyF32: a float's bits as an unsigned key
// in torch's order (negative values complemented, the others with the top
// bit set; -0 as +0, every NaN the largest key).
static inline unsigned sort_key_f32(float v) {
	unsigned b;
	if (v != v) return 0xffffffffu;
	if (v == 0) v = 0;
	memcpy(&b, &v, sizeof b);
	return b ^ ((unsigned)((int)b >> 31) | 0x80000000u);
}

// lathe_below_f32 is top-k's scan, where a heap's threshold rejects nearly
// every element: it writes to found, in order, the packed keys
// (sort_key_f32(x[i]) ^ flip) << 32 | (base + i) of the x[i], i < n, whose
// key is below top, eight keys to a compare and one mask test. It stops
// at n or when found holds cap of them (cap >= 8), and returns how many it
// wrote; *end is where it stopped.
AVX2 ptrdiff_t lathe_below_f32(const float *x, ptrdiff_t n, unsigned top, unsigned flip, ptrdiff_t base,
                               unsigned long long *found, ptrdiff_t cap, ptrdiff_t *end) {
	const v8u t = {top, top, top, top, top, top, top, top};
	const v8u f = {flip, flip, flip, flip, flip, flip, flip, flip};
	const v8u sign = {0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u};
	const v8f zero = {0};
	ptrdiff_t i = 0, c = 0;
	for (; i + 8 <= n; i += 8) {
		if (c + 8 > cap) break;
		v8f v = load8(x + i);
		v8u b = (v8u)v & ~(v8u)(v == zero);
		v8u k = ((b ^ ((v8u)((v8i)b >> 31) | sign)) | (v8u)(v != v)) ^ f;
		for (int below = __builtin_ia32_movmskps256((v8f)(k < t)); below; below &= below - 1) {
			int l = __builtin_ctz(below);
			found[c++] = (unsigned long long)k[l] << 32 | (unsigned long long)(base + i + l);
		}
	}
	for (; i < n && i + 8 > n && c < cap; i++) { // the tail of fewer than eight
		unsigned k = sort_key_f32(x[i]) ^ flip;
		if (k < top) found[c++] = (unsigned long long)k << 32 | (unsigned long long)(base + i);
	}
	*end = i;
	return c;
}

// lathe_sum_exp_f32 is Σ e^(x - shift) over the n floats at x: expf8's
// float32 exponentials (x - shift ≤ 0) added in float64 lanes, the tail
// through the same lanes (padded with -Inf, whose exponential is 0).
AVX2 double lathe_sum_exp_f32(const float *x, ptrdiff_t n, float shift) {
	v4d s0 = {0}, s1 = {0};
	const v8f sh = splat8(shift);
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) add_wide(expf8(load8(x + i) - sh), &s0, &s1);
	if (i < n) {
		float xt[8];
		for (int l = 0; l < 8; l++) xt[l] = -__builtin_inff();
		memcpy(xt, x + i, (n - i) * sizeof *x);
		add_wide(expf8(load8(xt) - sh), &s0, &s1);
	}
	return hsum(s0 + s1);
}

// lathe_softmax_cols_f32 is softmax (or log_softmax) along the rows of an
// n × inner block (src and dst its start) for the columns [c0, c1), which
// a softmax over a dim that is not the last has: eight columns to a
// vector, so that each pass reads rows of contiguous values, where the
// per-column loop strode through memory one value at a time. c1 - c0 is a
// multiple of 8. As softmax.go's loops: the max first, then e^(x - max)
// summed in float64, then the scale (or x - max - log of the sum) in
// float64, rounded once. A NaN anywhere in a column makes its sum, and so
// all of it, NaN (whatever the max made of it), as does +Inf (Inf - Inf).
AVX2 void lathe_softmax_cols_f32(float *dst, const float *src, ptrdiff_t n, ptrdiff_t inner, ptrdiff_t c0, ptrdiff_t c1, int log_) {
	enum { V = 8 }; // vectors a pass takes: each row's 64 columns are one run of memory
	for (ptrdiff_t c = c0; c < c1; c += 8 * V) {
		int nv = (int)((c1 - c) / 8 < V ? (c1 - c) / 8 : V);
		v8f m[V];
		v4d s[2 * V];
		for (int v = 0; v < nv; v++) m[v] = load8(src + c + 8 * v), s[2 * v] = s[2 * v + 1] = (v4d){0};
		for (ptrdiff_t j = 1; j < n; j++)
			for (int v = 0; v < nv; v++) m[v] = __builtin_ia32_maxps256(m[v], load8(src + j * inner + c + 8 * v));
		for (ptrdiff_t j = 0; j < n; j++)
			for (int v = 0; v < nv; v++) {
				v8f e = expf8(load8(src + j * inner + c + 8 * v) - m[v]);
				add_wide(e, &s[2 * v], &s[2 * v + 1]);
				if (!log_) store8(dst + j * inner + c + 8 * v, e);
			}
		if (log_) // s becomes log s
			for (int v = 0; v < 2 * nv; v++)
				for (int k = 0; k < 4; k++) s[v][k] = log(s[v][k]);
		for (ptrdiff_t j = 0; j < n; j++)
			for (int v = 0; v < nv; v++) {
				float *p = dst + j * inner + c + 8 * v;
				v8f d = log_ ? load8(src + j * inner + c + 8 * v) - m[v] : load8(p);
				v4f lo = __builtin_shufflevector(d, d, 0, 1, 2, 3), hi = __builtin_shufflevector(d, d, 4, 5, 6, 7);
				v4d wl = __builtin_convertvector(lo, v4d), wh = __builtin_convertvector(hi, v4d);
				wl = log_ ? wl - s[2 * v] : wl / s[2 * v];
				wh = log_ ? wh - s[2 * v + 1] : wh / s[2 * v + 1];
				store8(p, __builtin_shufflevector(__builtin_convertvector(wl, v4f), __builtin_convertvector(wh, v4f), 0, 1, 2, 3, 4, 5, 6, 7));
			}
	}
}

// lathe_exp_f32 replaces each of the n values x at row by e^(x - shift)
// (exp_row, in AVX-512's lanes where wide), for x - shift ≤ 0, and returns
// their sum.
AVX2 double lathe_exp_f32(float *row, ptrdiff_t n, float shift, int wide) {
	return wide ? exp_row16(row, n, shift) : exp_row8(row, n, shift);
}

// Attention's blocks (attention.go), float32: a block is bq rows of bk
// scores at row stride ld, and row r may see keys [0, lim): bk, or under
// causal masking diag + r + 1 clamped to [0, bk], diag being the block's
// first query less its first key. One call per block rather than per row,
// since a row of a short sequence (64 scores) costs less than the call.

static inline ptrdiff_t attn_lim(int causal, ptrdiff_t diag, ptrdiff_t r, ptrdiff_t bk) {
	if (!causal) return bk;
	ptrdiff_t lim = diag + r + 1;
	return lim < 0 ? 0 : lim > bk ? bk : lim;
}

// lathe_attn_probs_f32 recomputes the backward's probabilities: each row's
// seen scores x become e^(x - shift[r·shift_stride]) (its logsumexp), the
// rest 0.
AVX2 void lathe_attn_probs_f32(float *s, ptrdiff_t ld, ptrdiff_t bq, ptrdiff_t bk, const float *shift, ptrdiff_t shift_stride,
                               int causal, ptrdiff_t diag, int wide) {
	for (ptrdiff_t r = 0; r < bq; r++) {
		float *row = s + r * ld;
		ptrdiff_t lim = attn_lim(causal, diag, r, bk);
		lathe_exp_f32(row, lim, shift[r * shift_stride], wide);
		memset(row + lim, 0, (bk - lim) * sizeof *row);
	}
}

// lathe_attn_online_f32 is one key block of the forward's online softmax:
// per row, the running max m[r] takes the block's seen scores, they become
// e^(x - m[r]), the rest 0, the running sum l[r] and the row's accumulated
// output acc[r·ev…] are rescaled by e^(m_old - m_new) where the max moved,
// and l[r] gains the block's sum. NaN scores never raise the max, as the Go
// loop's comparison.
AVX2 void lathe_attn_online_f32(float *s, ptrdiff_t ld, ptrdiff_t bq, ptrdiff_t bk, int causal, ptrdiff_t diag, double *m,
                                double *l, float *acc, ptrdiff_t ev, int wide) {
	for (ptrdiff_t r = 0; r < bq; r++) {
		float *row = s + r * ld;
		ptrdiff_t lim = attn_lim(causal, diag, r, bk);
		double mx = m[r];
		float rm = wide ? row_max16(row, lim) : row_max8(row, lim);
		if ((double)rm > mx) mx = rm;
		double corr = mx != m[r] ? exp(m[r] - mx) : 1; // 0 for the first block a row sees
		double sum = lathe_exp_f32(row, lim, (float)mx, wide);
		memset(row + lim, 0, (bk - lim) * sizeof *row);
		l[r] = l[r] * corr + sum;
		m[r] = mx;
		if (corr != 1) {
			float *ar = acc + r * ev;
			for (ptrdiff_t e = 0; e < ev; e++) ar[e] *= (float)corr;
		}
	}
}

// lathe_attn_ds_f32 turns the backward's dP (dp) into dS = P∘(dP - D[r])
// in place, in float64 and rounded once, as the Go loop; under dropout
// (pm, the dropped P∘M, not NULL) into dS = P∘(dP∘M - D[r]), which is
// (P∘M)∘dP - P·D[r].
AVX2 void lathe_attn_ds_f32(float *dp, const float *p, const float *pm, ptrdiff_t ld, ptrdiff_t bq, ptrdiff_t bk, const double *d) {
	for (ptrdiff_t r = 0; r < bq; r++) {
		float *dr = dp + r * ld;
		const float *pr = p + r * ld, *mr = pm ? pm + r * ld : NULL;
		v4d dv = (v4d){0} + d[r];
		ptrdiff_t c = 0;
		for (; c + 4 <= bk; c += 4) {
			v4f pv, qv, mv;
			memcpy(&pv, pr + c, sizeof pv);
			memcpy(&qv, dr + c, sizeof qv);
			v4d p4 = __builtin_convertvector(pv, v4d), q4 = __builtin_convertvector(qv, v4d);
			v4f out;
			if (mr) {
				memcpy(&mv, mr + c, sizeof mv);
				out = __builtin_convertvector(__builtin_convertvector(mv, v4d) * q4 - p4 * dv, v4f);
			} else {
				out = __builtin_convertvector(p4 * (q4 - dv), v4f);
			}
			memcpy(dr + c, &out, sizeof out);
		}
		for (; c < bk; c++)
			dr[c] = mr ? (float)((double)mr[c] * dr[c] - (double)pr[c] * d[r]) : (float)((double)pr[c] * ((double)dr[c] - d[r]));
	}
}


// lathe_softmax_f32 runs softmax_row (of sixteen lanes where wide and the
// rows are as long, else eight) over rows consecutive rows of n values, one cgo call for many
// rows, and returns how many it wrote before the first that it left to the
// caller (rows when it wrote them all).
AVX2 ptrdiff_t lathe_softmax_f32(float *dst, const float *src, ptrdiff_t rows, ptrdiff_t n, int log, int wide) {
	for (ptrdiff_t r = 0; r < rows; r++) {
		int done = wide && n >= 16 ? softmax_row16(dst + r * n, src + r * n, n, log) : softmax_row8(dst + r * n, src + r * n, n, log);
		if (!done) return r;
	}
	return rows;
}

// ---- batch norm (batchnorm.go) ----

// Widens the two halves of v to float64 and subtracts shift from each.
AVX2 static inline void widen_shift(v8f v, v4d shift, v4d *lo, v4d *hi) {
	*lo = __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), v4d) - shift;
	*hi = __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), v4d) - shift;
}

// The batch norm sums, written once for float32 planes and for 16-bit
// ones (bf: bfloat16), which are widened eight at a time in registers, so
// that a 16-bit plane is read once as 16 bits and sums exactly as its
// float32 copy would: LOAD(p, i) is the eight values from p[i] as floats,
// ONE(p, i) the value at p[i].
#define LOAD_F32(p, i) load8((p) + (i))
#define ONE_F32(p, i) ((p)[i])
#define LOAD_BF16(p, i) bf16_to_f32(load8us((p) + (i)))
#define ONE_BF16(p, i) bf16_to_f32((v8us){(p)[i]})[0]
#define LOAD_F16(p, i) widen8(load8us((p) + (i)), 0)
#define ONE_F16(p, i) widen8((v8us){(p)[i]}, 0)[0]

// bf16_to_f32 is eight bfloat16s as floats, their bits shifted up: a NaN
// stays a signalling one, which a sum does not mind.
F16C static inline v8f bf16_to_f32(v8us h) {
	v8u b = __builtin_convertvector(h, v8u) << 16;
	v8f f;
	memcpy(&f, &b, sizeof f);
	return f;
}

// BN_MOMENTS returns Σ(x - shift) and Σ(x - shift)² over the n values at
// x, every value widened to float64 and the sums kept in float64 lanes, as
// batchnorm.go's Go loops.
#define BN_MOMENTS(LOAD, ONE)                                                      \
	v4d sh = (v4d){0} + shift, s0 = {0}, s1 = {0}, q0 = {0}, q1 = {0};        \
	ptrdiff_t i = 0;                                                           \
	for (; i + 8 <= n; i += 8) {                                               \
		v4d lo, hi;                                                        \
		widen_shift(LOAD(x, i), sh, &lo, &hi);                             \
		s0 += lo;                                                          \
		s1 += hi;                                                          \
		q0 += lo * lo;                                                     \
		q1 += hi * hi;                                                     \
	}                                                                          \
	double s = hsum(s0 + s1), q = hsum(q0 + q1);                               \
	for (; i < n; i++) {                                                       \
		double d = (double)ONE(x, i) - shift;                              \
		s += d;                                                            \
		q += d * d;                                                        \
	}                                                                          \
	return (lathe_sums){s, q}

// BN_SUMPROD returns Σg and Σg·(x - shift) over the n values at g and x,
// in float64 lanes.
#define BN_SUMPROD(LOAD, ONE)                                                      \
	v4d sh = (v4d){0} + shift, zero = {0}, s0 = {0}, s1 = {0}, p0 = {0}, p1 = {0}; \
	ptrdiff_t i = 0;                                                           \
	for (; i + 8 <= n; i += 8) {                                               \
		v4d glo, ghi, xlo, xhi;                                            \
		widen_shift(LOAD(g, i), zero, &glo, &ghi);                         \
		widen_shift(LOAD(x, i), sh, &xlo, &xhi);                           \
		s0 += glo;                                                         \
		s1 += ghi;                                                         \
		p0 += glo * xlo;                                                   \
		p1 += ghi * xhi;                                                   \
	}                                                                          \
	double s = hsum(s0 + s1), p = hsum(p0 + p1);                               \
	for (; i < n; i++) {                                                       \
		s += ONE(g, i);                                                    \
		p += (double)ONE(g, i) * ((double)ONE(x, i) - shift);              \
	}                                                                          \
	return (lathe_sums){s, p}

AVX2 static inline lathe_sums moments_f32(const float *x, ptrdiff_t n, double shift) { BN_MOMENTS(LOAD_F32, ONE_F32); }

AVX2 static inline lathe_sums sumprod_f32(const float *g, const float *x, ptrdiff_t n, double shift) { BN_SUMPROD(LOAD_F32, ONE_F32); }

// CHANNEL adds PLANE's two sums over a channel's planes planes, stride
// apart, in order: batchnorm.go adds the planes' sums so, one plane at a
// time, where the C loops do not run, and a call per plane cost about as
// much as summing a plane of a thousand values.
#define CHANNEL(PLANE)                                   \
	lathe_sums t = {0, 0};                           \
	for (ptrdiff_t p = 0; p < planes; p++) {         \
		lathe_sums s = PLANE;                    \
		t.a += s.a;                              \
		t.b += s.b;                              \
	}                                                \
	return t

AVX2 lathe_sums lathe_bn_moments_f32(const float *x, ptrdiff_t planes, ptrdiff_t stride, ptrdiff_t n, double shift) {
	CHANNEL(moments_f32(x + p * stride, n, shift));
}

AVX2 lathe_sums lathe_bn_sumprod_f32(const float *g, const float *x, ptrdiff_t planes, ptrdiff_t stride, ptrdiff_t n, double shift) {
	CHANNEL(sumprod_f32(g + p * stride, x + p * stride, n, shift));
}

// lathe_bn_apply_f32 writes x·a + b of the n values at src to dst, in
// float32 lanes as the Go loop.
AVX2 void lathe_bn_apply_f32(float *dst, const float *src, ptrdiff_t n, float a, float b) {
	v8f av = (v8f){0} + a, bv = (v8f){0} + b;
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) store8(dst + i, load8(src + i) * av + bv);
	for (; i < n; i++) dst[i] = src[i] * a + b;
}

// lathe_bn_grad_f32 writes a·g + k·(x - mean) + d of the n values at g and
// x to dst, in float32 lanes as the Go loop.
AVX2 void lathe_bn_grad_f32(float *dst, const float *g, const float *x, ptrdiff_t n, float a, float k, float mean, float d) {
	v8f av = (v8f){0} + a, kv = (v8f){0} + k, mv = (v8f){0} + mean, dv = (v8f){0} + d;
	ptrdiff_t i = 0;
	for (; i + 8 <= n; i += 8) store8(dst + i, load8(g + i) * av + kv * (load8(x + i) - mv) + dv);
	for (; i < n; i++) dst[i] = a * g[i] + k * (x[i] - mean) + d;
}

// ---- batch norm on 16-bit planes ----

// lathe_bn_*_h16 are the loops above on 16-bit floats (bf: bfloat16), so
// that a plane is read once, as 16 bits, where widening it first wrote
// and read it again as float32: the sums from BN_MOMENTS and BN_SUMPROD,
// and apply and grad as lathe_half_map runs the elementwise kernels,
// halfBlock values at a time widened into the stack and the float32 loop
// run there. Each gives its float32 loop's results on the widened plane,
// bit for bit.
F16C static inline lathe_sums moments_bf16(const unsigned short *x, ptrdiff_t n, double shift) { BN_MOMENTS(LOAD_BF16, ONE_BF16); }

F16C static inline lathe_sums moments_f16(const unsigned short *x, ptrdiff_t n, double shift) { BN_MOMENTS(LOAD_F16, ONE_F16); }

F16C static inline lathe_sums sumprod_bf16(const unsigned short *g, const unsigned short *x, ptrdiff_t n, double shift) {
	BN_SUMPROD(LOAD_BF16, ONE_BF16);
}

F16C static inline lathe_sums sumprod_f16(const unsigned short *g, const unsigned short *x, ptrdiff_t n, double shift) {
	BN_SUMPROD(LOAD_F16, ONE_F16);
}

F16C lathe_sums lathe_bn_moments_h16(const unsigned short *x, ptrdiff_t planes, ptrdiff_t stride, ptrdiff_t n, double shift, int bf) {
	if (bf) {
		CHANNEL(moments_bf16(x + p * stride, n, shift));
	}
	CHANNEL(moments_f16(x + p * stride, n, shift));
}

F16C lathe_sums lathe_bn_sumprod_h16(const unsigned short *g, const unsigned short *x, ptrdiff_t planes, ptrdiff_t stride, ptrdiff_t n,
	double shift, int bf) {
	if (bf) {
		CHANNEL(sumprod_bf16(g + p * stride, x + p * stride, n, shift));
	}
	CHANNEL(sumprod_f16(g + p * stride, x + p * stride, n, shift));
}

// lathe_bn_apply_h16 rounds each result once into dst, 16 bits as src.
F16C void lathe_bn_apply_h16(unsigned short *dst, const unsigned short *src, ptrdiff_t n, float a, float b, int bf) {
	float v[halfBlock] __attribute__((aligned(32)));
	for (ptrdiff_t i = 0; i < n; i += halfBlock) {
		ptrdiff_t m = n - i < halfBlock ? n - i : halfBlock;
		half_widen(v, src + i, m, bf);
		lathe_bn_apply_f32(v, v, m, a, b);
		lathe_narrow16(dst + i, v, m, bf);
	}
}

// lathe_bn_grad_h16 writes float32 results, as the statistics' dtype.
F16C void lathe_bn_grad_h16(float *dst, const unsigned short *g, const unsigned short *x, ptrdiff_t n, float a, float k, float mean,
	float d, int bf) {
	float u[halfBlock] __attribute__((aligned(32))), v[halfBlock] __attribute__((aligned(32)));
	for (ptrdiff_t i = 0; i < n; i += halfBlock) {
		ptrdiff_t m = n - i < halfBlock ? n - i : halfBlock;
		half_widen(u, g + i, m, bf);
		half_widen(v, x + i, m, bf);
		lathe_bn_grad_f32(dst + i, u, v, m, a, k, mean, d);
	}
}

// ---- erf, gelu and the activations' backward ops, float32 in float64 lanes ----

// erf and gelu (erf32.go), and gelu_backward, gelu_tanh_backward and
// silu_backward (activation_backward.go gives the formulas), four values at
// a time, computed in float64 and rounded once, as the Go functions compute
// them; exp and erf are polynomials here rather than calls, so that the
// loops have none.
typedef long long v4l __attribute__((vector_size(32)));
typedef int v4i __attribute__((vector_size(16)));

AVX2 static inline v4d pick4d(v4l mask, v4d a, v4d b) {
	v4l ia, ib, r;
	memcpy(&ia, &a, sizeof ia);
	memcpy(&ib, &b, sizeof ib);
	r = (mask & ia) | (~mask & ib);
	v4d out;
	memcpy(&out, &r, sizeof out);
	return out;
}

AVX2 static inline v4d splat4d(double v) { return (v4d){v, v, v, v}; }

AVX2 static inline v4l bits4d(v4d x) {
	v4l b;
	memcpy(&b, &x, sizeof b);
	return b;
}

AVX2 static inline v4d from_bits4d(v4l b) {
	v4d x;
	memcpy(&x, &b, sizeof x);
	return x;
}

// expd4 is e^y within an ulp for every y: y = k·ln2 + r with |r| ≤ ln2/2
// (ln2 split as fdlibm's, so that k·hi is exact), e^r by its series to r¹³
// (truncation below 2e-17), times 2^k as two powers of two, since k runs
// from -1075 to 1024, past what one exponent field holds: the first
// product is exact and the second rounds once, a subnormal result too.
// +Inf above 709.78 and 0 below -745.13, where math.Exp's are.
AVX2 static inline v4d expd4(v4d y) {
	v4d c = pick4d(y < -746.0, splat4d(-746.0), pick4d(y > 710.0, splat4d(710.0), y));
	v4d k = __builtin_ia32_roundpd256(c * 1.4426950408889634, 8); // to nearest
	v4d r = (c - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
	v4d p = splat4d(1.0 / 6227020800);
	p = p * r + 1.0 / 479001600;
	p = p * r + 1.0 / 39916800;
	p = p * r + 1.0 / 3628800;
	p = p * r + 1.0 / 362880;
	p = p * r + 1.0 / 40320;
	p = p * r + 1.0 / 5040;
	p = p * r + 1.0 / 720;
	p = p * r + 1.0 / 120;
	p = p * r + 1.0 / 24;
	p = p * r + 1.0 / 6;
	p = p * r + 0.5;
	p = p * r + 1.0;
	p = p * r + 1.0;
	v4l kb = __builtin_convertvector(__builtin_convertvector(k, v4i), v4l);
	v4l k1 = kb >> 1, k2 = kb - k1;
	v4d e = p * from_bits4d((k1 + 1023) << 52) * from_bits4d((k2 + 1023) << 52);
	e = pick4d(y > 7.09782712893383973096e+02, splat4d(__builtin_inf()), pick4d(y < -7.45133219101941108420e+02, splat4d(0), e));
	return pick4d(y != y, y, e);
}

// erf4d is erf from the polynomials of erf32.go on four lanes: the same
// float64 arithmetic as erf64Poly, with FMA. tab[j] holds coefficient j
// (mid, then c[0..10]) of the four pieces (erf32.go's table: one erfPiece
// of 12 doubles per [i, i+1)), one per lane of a vector, and each lane
// takes its piece's with one vpermd (the piece index doubled, for the two
// 32-bit halves of a double) instead of a load by index: a third faster
// than a scalar loop over the table.
typedef int v8i_ __attribute__((vector_size(32)));

AVX2 static inline v4d erf4d(v4d z, const v4d *tab, double saturate) {
	v4l signbit = (v4l){0} + (long long)0x8000000000000000ULL;
	v4l zb;
	memcpy(&zb, &z, sizeof zb);
	v4l ab = zb & ~signbit;
	v4d a;
	memcpy(&a, &ab, sizeof a);
	v4l inside = a < saturate; // false for NaN
	v4d ac = pick4d(inside, a, splat4d(0));
	// Lane k's 64 bits are the dwords 2i and 2i + 1, i its piece.
	v4l idx = __builtin_convertvector(__builtin_convertvector(ac, v4i), v4l);
	v4l pl = idx * 0x200000002LL + 0x100000000LL;
	v8i_ perm;
	memcpy(&perm, &pl, sizeof perm);
	v4d c[12];
	for (int j = 0; j < 12; j++) {
		v8i_ tj, cj;
		memcpy(&tj, &tab[j], sizeof tj);
		cj = __builtin_ia32_permvarsi256(tj, perm);
		memcpy(&c[j], &cj, sizeof cj);
	}
	v4d t = ac - c[0], t2 = t * t, t4 = t2 * t2;
	v4d lo = (c[1] + c[2] * t) + (c[3] + c[4] * t) * t2 + ((c[5] + c[6] * t) + (c[7] + c[8] * t) * t2) * t4;
	v4d hi = (c[9] + c[10] * t) + c[11] * t2;
	v4d poly = z * (lo + hi * (t4 * t4));
	// Saturated: ±1 with z's sign; NaN: z.
	v4l oneb = (zb & signbit) | 0x3ff0000000000000LL;
	v4d one;
	memcpy(&one, &oneb, sizeof one);
	return pick4d(inside, poly, pick4d(z != z, z, one));
}

// act_backward4 is op's g·f'(x) on four lanes, for gelu_tanh and silu (op
// numbered as activation_backward.go's actOp; gelu's is gelu_grad8).
AVX2 static inline v4d act_backward4(int op, v4d g, v4d x) {
	// gelu_tanh and silu: p = sigmoid(w) and q = sigmoid(-w), from e = e^-|w|,
	// for w = 2u and w = x.
	v4d x2 = x * x, w = x;
	if (op == 1) w = 2 * 0.79788456080286535588 * (x + 0.044715 * x2 * x);
	v4l wb, signbit = (v4l){0} + (long long)0x8000000000000000ULL;
	memcpy(&wb, &w, sizeof wb);
	v4l nab = wb | signbit; // -|w|, NaN stays NaN
	v4d na;
	memcpy(&na, &nab, sizeof na);
	v4d e = expd4(na);
	v4d big = 1 / (1 + e), small = e / (1 + e);
	v4l neg = w < 0;
	v4d p = pick4d(neg, small, big), q = pick4d(neg, big, small);
	if (op == 1) {
		// p q is 0 where |x| is large or infinite: the term is then 0, not
		// 0 inf (activation_backward.go's geluTanhBackward).
		v4d pq = p * q;
		return g * pick4d(pq == 0, p, p + 2 * x * pq * 0.79788456080286535588 * (1 + 3 * 0.044715 * x2));
	}
	return g * p * (1 + x * q);
}

// widen4 is four floats as doubles, by one vcvtps2pd: GCC lowers
// __builtin_convertvector from v4f to v4d to two 128-bit halves, which made
// the layer norm loops, bound by conversions, twice as slow.
AVX2 static inline v4d widen4(const float *p) {
	v4f v;
	memcpy(&v, p, sizeof v);
	return __builtin_ia32_cvtps2pd256(v);
}

// erf_table transposes erf32.go's pieces into erf4d's tab.
AVX2 static inline void erf_table(v4d tab[12], const double *pieces) {
	for (int j = 0; j < 12; j++) tab[j] = (v4d){pieces[j], pieces[12 + j], pieces[24 + j], pieces[36 + j]};
}

// erf_rows is lathe_erf_f32's erf; the tail goes through the same lanes,
// so that every length gives the same values.
AVX2 static inline void erf_rows(float *dst, const float *src, ptrdiff_t n, const v4d *tab, double saturate) {
	ptrdiff_t i = 0;
	for (; i + 4 <= n; i += 4) {
		v4f r = __builtin_convertvector(erf4d(widen4(src + i), tab, saturate), v4f);
		memcpy(dst + i, &r, sizeof r);
	}
	if (i < n) {
		float st[4] = {0}, rt[4];
		memcpy(st, src + i, (n - i) * sizeof *src);
		v4f r = __builtin_convertvector(erf4d(widen4(st), tab, saturate), v4f);
		memcpy(rt, &r, sizeof r);
		memcpy(dst + i, rt, (n - i) * sizeof *dst);
	}
}

AVX2 void lathe_erf_f32(float *dst, const float *src, ptrdiff_t n, const double *pieces, double saturate, int gelu, int wide) {
	if (gelu) {
		if (wide)
			gelu_rows16(dst, src, n);
		else
			gelu_rows8(dst, src, n);
		return;
	}
	v4d tab[12];
	erf_table(tab, pieces);
	erf_rows(dst, src, n, tab, saturate);
}

// act_backward_rows is lathe_act_backward_f32 for gelu_tanh or silu, so
// that the op's test leaves the loop.
AVX2 static inline void act_backward_rows(int op, float *dst, const float *g, const float *x, ptrdiff_t n) {
	ptrdiff_t i = 0;
	for (; i + 4 <= n; i += 4) {
		v4f r = __builtin_convertvector(act_backward4(op, widen4(g + i), widen4(x + i)), v4f);
		memcpy(dst + i, &r, sizeof r);
	}
	if (i < n) { // the tail through the same lanes, so every length gives the same values
		float gt[4] = {0}, xt[4] = {0}, rt[4];
		memcpy(gt, g + i, (n - i) * sizeof *g);
		memcpy(xt, x + i, (n - i) * sizeof *x);
		v4f r = __builtin_convertvector(act_backward4(op, widen4(gt), widen4(xt)), v4f);
		memcpy(rt, &r, sizeof r);
		memcpy(dst + i, rt, (n - i) * sizeof *dst);
	}
}

AVX2 void lathe_act_backward_f32(int op, float *dst, const float *g, const float *x, ptrdiff_t n, int wide) {
	switch (op) {
	case 0:
		if (wide)
			gelu_grad_rows16(dst, g, x, n);
		else
			gelu_grad_rows8(dst, g, x, n);
		break;
	case 1: act_backward_rows(1, dst, g, x, n); break;
	case 2: act_backward_rows(2, dst, g, x, n); break;
	}
}

// Layer norm over consecutive float32 rows of d values (layernorm.go has
// the formulas). The loops are bound by conversions between float32 and
// float64 (one vcvtps2pd or vcvtpd2ps per four values, at one a cycle), so
// float64 is kept where it buys accuracy and no further: a row's mean and
// variance are float64 sums, and x - mean is taken in float64 and rounded
// once, so that a row far from zero loses nothing to cancellation; the
// products after that are float32's, as torch's float kernel computes them.
// The backward's row sums Σ dx̂ and Σ dx̂·x̂ are float32 lanes over blocks
// of sumBlock values, the blocks added in float64 (lathe_sum_f32's
// cascade: at most sumBlock/8 + 3 float32 roundings per term), and its dw
// and db partials are float64.

AVX2 static inline v4d widen_lo(v8f v) { return __builtin_ia32_cvtps2pd256(__builtin_shufflevector(v, v, 0, 1, 2, 3)); }
AVX2 static inline v4d widen_hi(v8f v) { return __builtin_ia32_cvtps2pd256(__builtin_shufflevector(v, v, 4, 5, 6, 7)); }

AVX2 static inline void narrow4(float *p, v4d v) {
	v4f f = __builtin_ia32_cvtpd2ps256(v);
	memcpy(p, &f, sizeof f);
}

AVX2 static inline v4d load4d(const double *p) { v4d v; memcpy(&v, p, sizeof v); return v; }
AVX2 static inline void store4d(double *p, v4d v) { memcpy(p, &v, sizeof v); }

// rounded returns v as it is, but the compiler may not fuse the product
// that made it into a later add: dx̂ = g·w must be the same rounded float
// in the row's sum Σ dx̂ and in dx̂ - mean(dx̂), or a row of one value,
// whose gradient is 0, gets rstd times a product's rounding error.
AVX2 static inline v8f rounded8(v8f v) {
	__asm__("" : "+x"(v));
	return v;
}

AVX2 static inline float rounded1(float v) {
	__asm__("" : "+x"(v));
	return v;
}

// ln_center writes x - mean (float64, rounded once) of a row to c and
// returns 1/√(var + eps), var the biased variance: two passes, the second
// over x - mean, which does not cancel as Σx² - (Σx)²/d would.
AVX2 static inline double ln_center(const float *x, float *c, ptrdiff_t d, double eps) {
	v4d a0 = {0}, a1 = {0};
	ptrdiff_t j = 0;
	for (; j + 8 <= d; j += 8) {
		a0 += widen4(x + j);
		a1 += widen4(x + j + 4);
	}
	double s = hsum(a0 + a1);
	for (; j < d; j++) s += x[j];
	double m = s / d;
	a0 = (v4d){0}, a1 = (v4d){0};
	for (j = 0; j + 8 <= d; j += 8) {
		v4d c0 = widen4(x + j) - m, c1 = widen4(x + j + 4) - m;
		a0 += c0 * c0;
		a1 += c1 * c1;
		narrow4(c + j, c0);
		narrow4(c + j + 4, c1);
	}
	double q = hsum(a0 + a1);
	for (; j < d; j++) {
		double cj = x[j] - m;
		q += cj * cj;
		c[j] = (float)cj;
	}
	return 1 / __builtin_sqrt(q / d + eps);
}

AVX2 void lathe_layer_norm_f32(float *y, const float *x, const float *w, const float *b, ptrdiff_t rows, ptrdiff_t d, double eps) {
	for (ptrdiff_t r = 0; r < rows; r++, x += d, y += d) {
		float rs = (float)ln_center(x, y, d, eps);
		ptrdiff_t j = 0;
		for (; j + 8 <= d; j += 8) store8(y + j, load8(y + j) * rs * load8(w + j) + load8(b + j));
		for (; j < d; j++) y[j] = y[j] * rs * w[j] + b[j];
	}
}

AVX2 void lathe_layer_norm_backward_f32(float *dx, double *pw, double *pb, const float *x, const float *w, const float *g,
                                        ptrdiff_t rows, ptrdiff_t d, double eps) {
	for (ptrdiff_t r = 0; r < rows; r++, x += d, g += d, dx += d) {
		// dx holds x - mean, then x̂, then the gradient.
		float rs = (float)ln_center(x, dx, d, eps);
		double t1 = 0, t2 = 0; // Σ dx̂, Σ dx̂·x̂
		ptrdiff_t j = 0;
		while (j + 8 <= d) {
			v8f a1 = {0}, a2 = {0};
			ptrdiff_t end = j + sumBlock < d ? j + sumBlock : d;
			for (; j + 8 <= end; j += 8) {
				v8f xh = load8(dx + j) * rs, gv = load8(g + j), dxh = rounded8(gv * load8(w + j)), gx = gv * xh;
				store8(dx + j, xh);
				a1 += dxh;
				a2 += dxh * xh;
				store4d(pw + j, load4d(pw + j) + widen_lo(gx));
				store4d(pw + j + 4, load4d(pw + j + 4) + widen_hi(gx));
				store4d(pb + j, load4d(pb + j) + widen_lo(gv));
				store4d(pb + j + 4, load4d(pb + j + 4) + widen_hi(gv));
			}
			t1 += hsum8(a1);
			t2 += hsum8(a2);
		}
		for (; j < d; j++) {
			float xh = dx[j] * rs, dxh = rounded1(g[j] * w[j]);
			dx[j] = xh;
			t1 += dxh;
			t2 += dxh * xh;
			pw[j] += g[j] * xh;
			pb[j] += g[j];
		}
		float m1 = (float)(t1 / d), m2 = (float)(t2 / d);
		for (j = 0; j + 8 <= d; j += 8) store8(dx + j, (rounded8(load8(g + j) * load8(w + j)) - m1 - load8(dx + j) * m2) * rs);
		for (; j < d; j++) dx[j] = (rounded1(g[j] * w[j]) - m1 - dx[j] * m2) * rs;
	}
}

// ---- log, log1p, expm1, sin, cos, tan, the hyperbolic functions and softplus, float32 in float64 lanes ----

// lathe_unary64_f32 writes op(x) of the n floats at src to dst, each
// widened to float64, computed there to within a few float64 ulps and
// rounded once: the values of elementwise.go's float32(math.F(float64(x)))
// but where a float64 result lies within a few float64 ulps of a float32
// rounding boundary (one in millions), where the two can differ by one
// float32 ulp. Those functions took a call per element (15-30 times
// torch's time). Every float32 is a normal float64 (or 0), so no input is
// subnormal here. The ops are numbered as unary32.go's unary64Op; a and b
// are softplus's beta and threshold. The tail goes through the same lanes.
enum {
	unary64Log,
	unary64Log1p,
	unary64Expm1,
	unary64Sin,
	unary64Cos,
	unary64Softplus,
	unary64Tan,
	unary64Sinh,
	unary64Cosh,
	unary64Asinh,
	unary64Acosh,
	unary64Atanh,
	unary64Atan,
	unary64Asin,
	unary64Acos,
	unary64Lgamma,
	unary64Digamma,
	unary64Trigamma,
	unary64Erfc
};


// fma4d is a·b + c rounded once.
AVX2 static inline v4d fma4d(v4d a, v4d b, v4d c) { return __builtin_ia32_vfmaddpd256(a, b, c); }

// Natural log. x = m·2^e with m in [√½, √2); log m = 2·atanh(s), s =
// (m - 1)/(m + 1), |s| ≤ 0.1716, by the series 2s(1 + s²/3 + s⁴/5 + ...) to
// s¹⁹ (truncation below 3e-17); e·ln2 with ln2 split so that e·hi is exact.
AVX2 static inline v4d log4d(v4d x) {
	v4l b = bits4d(x);
	v4l e = ((b >> 52) & 0x7ff) - 1023;
	v4d m = from_bits4d((b & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);
	v4l big = m > 1.4142135623730951;
	m = pick4d(big, m * 0.5, m);
	e -= big; // big is -1 where true
	v4d f = m - 1.0, s = f / (f + 2.0), z = s * s;
	v4d p = splat4d(1.0 / 19);
	p = p * z + 1.0 / 17;
	p = p * z + 1.0 / 15;
	p = p * z + 1.0 / 13;
	p = p * z + 1.0 / 11;
	p = p * z + 1.0 / 9;
	p = p * z + 1.0 / 7;
	p = p * z + 1.0 / 5;
	p = p * z + 1.0 / 3;
	v4d logm = 2.0 * s + 2.0 * s * z * p;
	v4d ed = __builtin_convertvector(__builtin_convertvector(e, v4i), v4d);
	v4d r = ed * 6.93147180369123816490e-01 + (ed * 1.90821492927058770002e-10 + logm);
	// 0 → -Inf, below 0 → NaN, +Inf → +Inf, NaN → itself.
	r = pick4d(x == 0.0, splat4d(-__builtin_inf()), r);
	r = pick4d(x < 0.0, splat4d(__builtin_nan("")), r);
	r = pick4d(x == __builtin_inf(), x, r);
	return pick4d(x != x, x, r);
}

// log1p(x) = log(u)·x/(u - 1) with u = 1 + x rounded: the quotient corrects
// u's rounding to first order (Goldberg's form), and u = 1 gives x.
AVX2 static inline v4d log1p4d(v4d x) {
	v4d u = 1.0 + x, d = u - 1.0;
	v4d r = log4d(u) * (x / d);
	r = pick4d(d == 0.0, x, r); // ±0 keep their sign
	return pick4d(x == __builtin_inf(), x, r);
}

// e^x - 1: below ln2/2 in size its series to x¹⁴ (truncation below 1e-17
// of the result, and no cancellation), else e^x - 1, which cancels by at
// most two bits there.
AVX2 static inline v4d expm14d(v4d x) {
	v4d p = splat4d(1.0 / 87178291200);
	p = p * x + 1.0 / 6227020800;
	p = p * x + 1.0 / 479001600;
	p = p * x + 1.0 / 39916800;
	p = p * x + 1.0 / 3628800;
	p = p * x + 1.0 / 362880;
	p = p * x + 1.0 / 40320;
	p = p * x + 1.0 / 5040;
	p = p * x + 1.0 / 720;
	p = p * x + 1.0 / 120;
	p = p * x + 1.0 / 24;
	p = p * x + 1.0 / 6;
	p = p * x + 0.5;
	v4d small = x + x * x * p;
	v4l near = (x < 0.34657359027997264) & (x > -0.34657359027997264);
	v4d r = pick4d(near, small, expd4(x) - 1.0);
	return pick4d(x == 0.0, x, r); // -0 stays -0
}

// sincos4d is sin (cosine: cos) for |x| ≤ 2^30, of float64s and (rounded
// once) of float32s alike: x = n·π/2 + r, |r| ≤
// π/4, with π/2 in three parts by FMA. x - n·p1 is exact (both are
// multiples of 2^-52 and the difference is below 2), and the other two
// steps round once each, so r keeps its relative accuracy however near x
// lies to a multiple of π/2 (the first neglected part, n·2^-160, is far
// below). Then sin r by its series to r¹⁹ and cos r to r²⁰ (truncation
// below 1e-19), cos as fdlibm's __kernel_cos adds 1 - r²/2 back with the
// rounding of 1 - r²/2 recovered; n mod 4 picks the function and the sign.
// ±0 are themselves under sin; larger |x|, infinities and NaN are the
// caller's (libm's per lane).
AVX2 static inline v4d sincos4d(v4d x, int cosine) {
	v4d n = __builtin_ia32_roundpd256(x * 0.63661977236758134308, 8);
	v4d r = fma4d(-n, splat4d(0x1.921fb54442d18p+0), x);
	r = fma4d(-n, splat4d(0x1.1a62633145c07p-54), r);
	r = fma4d(-n, splat4d(-0x1.f1976b7ed8fbcp-110), r);
	v4l q = bits4d(n + 0x1.8p52) + cosine; // n's low bits, two's complement
	v4d z = r * r;
	v4d sp = splat4d(-1.0 / 121645100408832000);
	sp = sp * z + 1.0 / 355687428096000;
	sp = sp * z - 1.0 / 1307674368000;
	sp = sp * z + 1.0 / 6227020800;
	sp = sp * z - 1.0 / 39916800;
	sp = sp * z + 1.0 / 362880;
	sp = sp * z - 1.0 / 5040;
	sp = sp * z + 1.0 / 120;
	v4d sinr = r + r * z * (-1.0 / 6 + z * sp);
	v4d cp = splat4d(1.0 / 2432902008176640000);
	cp = cp * z - 1.0 / 6402373705728000;
	cp = cp * z + 1.0 / 20922789888000;
	cp = cp * z - 1.0 / 87178291200;
	cp = cp * z + 1.0 / 479001600;
	cp = cp * z - 1.0 / 3628800;
	cp = cp * z + 1.0 / 40320;
	cp = cp * z - 1.0 / 720;
	cp = cp * z + 1.0 / 24;
	v4d hz = 0.5 * z, w = 1.0 - hz;
	v4d cosr = w + (((1.0 - w) - hz) + z * z * cp);
	v4l odd = -(q & 1), neg = (q & 2) << 62;
	v4d v = pick4d(odd, cosr, sinr);
	v = from_bits4d(bits4d(v) ^ neg);
	if (!cosine) v = pick4d(x == 0.0, x, v);
	return v;
}

// softplus(x; beta, threshold) = log1p(e^(beta·x))/beta, and x where
// beta·x > threshold, as elementwise.go's.
AVX2 static inline v4d softplus4d(v4d x, double beta, double threshold) {
	v4d y = x * beta;
	return pick4d(y > threshold, x, log1p4d(expd4(y)) / beta);
}

// copysign4d is |v| with the sign of s.
AVX2 static inline v4d copysign4d(v4d v, v4d s) {
	v4l sign = (v4l){0} + (long long)0x8000000000000000ULL;
	return from_bits4d((bits4d(v) & ~sign) | (bits4d(s) & sign));
}

AVX2 static inline v4d abs4d(v4d x) { return from_bits4d(bits4d(x) & 0x7fffffffffffffffLL); }

// sinh from e = e^|x| - 1 (expm1, no cancellation): e^a - e^-a = e +
// e/(e + 1); past |x| = 20, e^a/2 (e^-2a is below float64's ulp there);
// x's sign put back, so that -0 stays -0.
AVX2 static inline v4d sinh4d(v4d x) {
	v4d a = abs4d(x), e = expm14d(a);
	v4d r = pick4d(a > 20.0, 0.5 * expd4(a), 0.5 * (e + e / (e + 1.0)));
	return pick4d(x != x, x, copysign4d(r, x));
}

// cosh is (e^|x| + e^-|x|)/2.
AVX2 static inline v4d cosh4d(v4d x) {
	v4d e = expd4(abs4d(x));
	return pick4d(x != x, x, 0.5 * (e + 1.0 / e));
}

// asinh(x) = sign(x)·log1p(a + a²/(1 + √(1 + a²))), a = |x|: no
// cancellation at any a, and a² stays finite for every float32.
AVX2 static inline v4d asinh4d(v4d x) {
	v4d a = abs4d(x), a2 = a * a;
	v4d r = log1p4d(a + a2 / (1.0 + __builtin_ia32_sqrtpd256(1.0 + a2)));
	r = pick4d(a == __builtin_inf(), a, r); // not Inf/Inf
	return pick4d(x != x, x, copysign4d(r, x));
}

// acosh(x) = log1p((x - 1) + √((x - 1)(x + 1))): x - 1 is exact for a
// float32, so that x near 1 keeps its digits. Below 1 it is NaN (below -1
// the product under the root is positive, so that is said apart).
AVX2 static inline v4d acosh4d(v4d x) {
	v4d d = x - 1.0;
	v4d r = log1p4d(d + __builtin_ia32_sqrtpd256(d * (x + 1.0)));
	return pick4d(x < 1.0, splat4d(__builtin_nan("")), r);
}

// atanh(x) = log1p(2x/(1 - x))/2: ±1 give ±Inf, beyond them NaN.
AVX2 static inline v4d atanh4d(v4d x) { return 0.5 * log1p4d(2.0 * x / (1.0 - x)); }

// atan: |x| > 1 as π/2 - atan(1/|x|); then two halvings, atan(t) =
// 2·atan(t/(1 + √(1 + t²))), bring |t| to tan(π/16) ≈ 0.199, where the
// series t - t³/3 + ... to t²³ truncates below 1e-17; x's sign put back.
AVX2 static inline v4d atan4d(v4d x) {
	v4d a = abs4d(x);
	v4l big = a > 1.0;
	v4d t = pick4d(big, 1.0 / a, a);
	t = t / (1.0 + __builtin_ia32_sqrtpd256(1.0 + t * t));
	t = t / (1.0 + __builtin_ia32_sqrtpd256(1.0 + t * t));
	v4d z = t * t, p = splat4d(-1.0 / 23);
	for (int k = 21; k >= 3; k -= 2) p = p * z + (((k - 1) / 2) % 2 ? -1.0 : 1.0) / k;
	v4d r = 4.0 * (t + t * z * p);
	r = pick4d(big, 1.5707963267948966 - r, r);
	return pick4d(x != x, x, copysign4d(r, x));
}

// asin(x) = atan(x/√((1 - x)(1 + x))): the factors are exact for a float32
// x, so x near ±1 keeps its digits; ±1 give ±π/2 and |x| > 1 NaN.
AVX2 static inline v4d asin4d(v4d x) { return atan4d(x / __builtin_ia32_sqrtpd256((1.0 - x) * (1.0 + x))); }

// acos(x) = 2·atan(√((1 - x)/(1 + x))): -1 gives π, |x| > 1 NaN.
AVX2 static inline v4d acos4d(v4d x) {
	v4d r = 2.0 * atan4d(__builtin_ia32_sqrtpd256((1.0 - x) / (1.0 + x)));
	return pick4d(x != x, x, r);
}

#include "gamma_f32.h"
#include "erfc_f32.h"

AVX2 static inline v4d unary64(int op, v4d x, double a, double b) {
	switch (op) {
	case unary64Log: return log4d(x);
	case unary64Log1p: return log1p4d(x);
	case unary64Expm1: return expm14d(x);
	case unary64Sin: return sincos4d(x, 0);
	case unary64Cos: return sincos4d(x, 1);
	case unary64Tan: return sincos4d(x, 0) / sincos4d(x, 1);
	case unary64Sinh: return sinh4d(x);
	case unary64Cosh: return cosh4d(x);
	case unary64Asinh: return asinh4d(x);
	case unary64Acosh: return acosh4d(x);
	case unary64Atanh: return atanh4d(x);
	case unary64Atan: return atan4d(x);
	case unary64Asin: return asin4d(x);
	case unary64Acos: return acos4d(x);
	case unary64Lgamma: return lgamma4d(x);
	case unary64Digamma: return digamma4d(x);
	case unary64Trigamma: return trigamma4d(x);
	case unary64Erfc: return erfc4d(x);
	default: return softplus4d(x, a, b);
	}
}

// unary64_lanes is op of four floats, rounded back: lanes of sin, cos and
// tan past 2^30 in size (and ±Inf) take libm's.
AVX2 static inline v4f unary64_lanes(int op, v4d x, double a, double b) {
	v4d y = unary64(op, x, a, b);
	if (op == unary64Sin || op == unary64Cos || op == unary64Tan) {
		v4l far = ~(abs4d(x) <= 0x1p30); // NaN and ±Inf too
		if (__builtin_ia32_movmskpd256(from_bits4d(far)))
			for (int l = 0; l < 4; l++)
				if (far[l]) y[l] = op == unary64Sin ? sin(x[l]) : op == unary64Cos ? cos(x[l]) : tan(x[l]);
	}
	return __builtin_convertvector(y, v4f);
}

// UNARY64_LOOP runs op over the n floats four at a time, the tail padded
// with 1 (inside every op's domain); op is a constant in each use, so that
// each loop is its own.
#define UNARY64_LOOP(OP)                                                                                                         \
	do {                                                                                                                     \
		ptrdiff_t i = 0;                                                                                                 \
		for (; i + 4 <= n; i += 4) {                                                                                     \
			v4f r = unary64_lanes(OP, widen4(src + i), a, b);                                                        \
			memcpy(dst + i, &r, sizeof r);                                                                           \
		}                                                                                                                \
		if (i < n) {                                                                                                     \
			float st[4] = {1, 1, 1, 1}, rt[4];                                                                       \
			memcpy(st, src + i, (n - i) * sizeof *src);                                                              \
			v4f r = unary64_lanes(OP, widen4(st), a, b);                                                             \
			memcpy(rt, &r, sizeof r);                                                                                \
			memcpy(dst + i, rt, (n - i) * sizeof *dst);                                                              \
		}                                                                                                                \
	} while (0)

AVX2 void lathe_unary64_f32(int op, float *dst, const float *src, ptrdiff_t n, double a, double b) {
	switch (op) {
	case unary64Log: UNARY64_LOOP(unary64Log); break;
	case unary64Log1p: UNARY64_LOOP(unary64Log1p); break;
	case unary64Expm1: UNARY64_LOOP(unary64Expm1); break;
	case unary64Sin: UNARY64_LOOP(unary64Sin); break;
	case unary64Cos: UNARY64_LOOP(unary64Cos); break;
	case unary64Softplus: UNARY64_LOOP(unary64Softplus); break;
	case unary64Tan: UNARY64_LOOP(unary64Tan); break;
	case unary64Sinh: UNARY64_LOOP(unary64Sinh); break;
	case unary64Cosh: UNARY64_LOOP(unary64Cosh); break;
	case unary64Asinh: UNARY64_LOOP(unary64Asinh); break;
	case unary64Acosh: UNARY64_LOOP(unary64Acosh); break;
	case unary64Atanh: UNARY64_LOOP(unary64Atanh); break;
	case unary64Atan: UNARY64_LOOP(unary64Atan); break;
	case unary64Asin: UNARY64_LOOP(unary64Asin); break;
	case unary64Acos: UNARY64_LOOP(unary64Acos); break;
	case unary64Lgamma: UNARY64_LOOP(unary64Lgamma); break;
	case unary64Digamma: UNARY64_LOOP(unary64Digamma); break;
	case unary64Trigamma: UNARY64_LOOP(unary64Trigamma); break;
	case unary64Erfc: UNARY64_LOOP(unary64Erfc); break;
	}
}

// ---- exp, log, tanh, sigmoid and silu of float64s ----

#include "unary_f64.h"

// ---- pow, atan2, fmod and remainder of float32s in float64 lanes ----

#include "binary64.h"

AVX2 void lathe_binary_f32(int op, float *dst, const float *p, const float *q, float s, ptrdiff_t n) {
	switch (op) {
	// maxps(a, b) is a > b ? a : b, which gives b for a NaN b and for a
	// tie; a NaN a is taken apart.
	case binaryMaximum: BINARY_LOOP(pick(a != a, a, __builtin_ia32_maxps256(a, b))); break;
	case binaryMinimum: BINARY_LOOP(pick(a != a, a, __builtin_ia32_minps256(a, b))); break;
	case binaryFMod: BINARY64_LOOP(binary64FMod); break;
	case binaryRemainder: BINARY64_LOOP(binary64Remainder); break;
	case binaryPow: BINARY64_LOOP(binary64Pow); break;
	case binaryAtan2: BINARY64_LOOP(binary64Atan2); break;
	}
}

#undef BINARY64_LOOP

// ---- direct convolution (conv_direct.go) ----

// The kernels are vec_conv.h's, in AVX2's eight lanes and AVX-512's
// sixteen (instantiated above); the exported calls pick by wide (only
// where lathe_has_avx512).

// lathe_conv_f32 is one image's (and group's) convolution at stride 1:
// y[o][oy][ox] = Σ w[k][o]·x[ci][oy + i·dh][ox + j·dw] over k = (ci·kh + i)·kw
// + j, where x is the input already padded (c planes of hp × wp, with 32
// floats readable after the last) and y is o planes of oh × ow.
AVX2 void lathe_conv_f32(float *y, const float *x, const float *w, ptrdiff_t c, ptrdiff_t o, ptrdiff_t hp, ptrdiff_t wp,
	ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dw, int wide) {
	if (wide)
		conv_rows16(y, x, w, c, o, hp, wp, oh, ow, kh, kw, dh, dw);
	else
		conv_rows8(y, x, w, c, o, hp, wp, oh, ow, kh, kw, dh, dw);
}

// lathe_conv_wgrad_f32 adds one image's (and group's) weight gradient at
// stride 1 to dw [o][k], k = (ci·kh + i)·kw + j: the sum over the output
// positions of dy[o][oy][ox]·x[ci][oy + i·dh][ox + j·dw], x the padded
// input (c planes of hp × wp) and dy o planes of oh × ow.
AVX2 void lathe_conv_wgrad_f32(float *dw, const float *dy, const float *x, ptrdiff_t c, ptrdiff_t o, ptrdiff_t hp,
	ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dwid, int wide) {
	if (wide)
		wgrad16(dw, dy, x, c, o, hp, wp, oh, ow, kh, kw, dh, dwid);
	else
		wgrad8(dw, dy, x, c, o, hp, wp, oh, ow, kh, kw, dh, dwid);
}
