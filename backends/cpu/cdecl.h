// Every C declaration of lathe's cpu backend: the functions of shim.c that
// cgo.go calls. No OpenBLAS or vector header is needed to build.
#ifndef LATHE_CPU_CDECL_H
#define LATHE_CPU_CDECL_H

#include <stddef.h>
#include <stdint.h>

// lathe_blas_open opens the OpenBLAS library at path and looks up
// cblas_sgemm and cblas_dgemm, setting OpenBLAS to one thread; it returns
// NULL, or dlerror's text or the missing symbol.
const char *lathe_blas_open(const char *path);
// lathe_blas_config is OpenBLAS's build description, or "unknown".
const char *lathe_blas_config(void);
// lathe_blas_threads sets OpenBLAS's thread count (openblas_set_num_threads)
// and returns 1, or returns 0 where the library has no such function. Only
// the benchmark that compares OpenBLAS's threads with lathe's split calls it.
int lathe_blas_threads(int n);
// lathe_sgemm and lathe_dgemm are cblas_sgemm and cblas_dgemm on row-major
// matrices; ta and tb are CblasNoTrans (111) or CblasTrans (112).
void lathe_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
void lathe_dgemm(int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                 const double *b, int ldb, double beta, double *c, int ldc);

// lathe_has_avx2 reports whether the CPU has AVX2 and FMA: the two loops
// below may be called only where it does.
int lathe_has_avx2(void);
// lathe_sum_f32 is the sum of the n values at x: float32 lanes over
// blocks, the blocks' sums added in float64.
double lathe_sum_f32(const float *x, ptrdiff_t n);
// lathe_softmax_f32 writes the softmax (log != 0: log-softmax) of rows
// consecutive rows of n values at src to dst, in AVX-512's lanes where
// wide (only where lathe_has_avx512), and returns how many rows it wrote
// before the first it left unwritten: a row of fewer than 8 values, with
// a NaN, or with an infinite max.
ptrdiff_t lathe_softmax_f32(float *dst, const float *src, ptrdiff_t rows, ptrdiff_t n, int log, int wide);

// lathe_has_avx512 reports whether the cpu and the OS run AVX-512 (F and DQ).
int lathe_has_avx512(void);
// lathe_exp_f32 replaces each of the n values x at row by e^(x - shift),
// for x - shift ≤ 0, and returns their sum (zeros and 0 for a shift of
// -Inf); in AVX-512's lanes where wide, as the attention blocks below.
double lathe_exp_f32(float *row, ptrdiff_t n, float shift, int wide);

// Attention's blocks, float32 (shim.c says what each does).
void lathe_attn_probs_f32(float *s, ptrdiff_t ld, ptrdiff_t bq, ptrdiff_t bk, const float *shift, ptrdiff_t shift_stride,
                          int causal, ptrdiff_t diag, int wide);
void lathe_attn_online_f32(float *s, ptrdiff_t ld, ptrdiff_t bq, ptrdiff_t bk, int causal, ptrdiff_t diag, double *m,
                           double *l, float *acc, ptrdiff_t ev, int wide);
void lathe_attn_ds_f32(float *dp, const float *p, const float *pm, ptrdiff_t ld, ptrdiff_t bq, ptrdiff_t bk, const double *d);
// lathe_arith_f32 writes op(p[i], q[i]) (op(p[i], s) where q is NULL) to
// dst for i < n, op numbered as arith.go's arithOp (add, sub, mul, div).
void lathe_arith_f32(int op, float *dst, const float *p, const float *q, float s, ptrdiff_t n);
// lathe_arith_bcast_f32 is lathe_arith_f32 with one operand broadcast: a row
// repeated over rows runs of cols values, or one value per run.
void lathe_arith_bcast_f32(int op, float *dst, const float *full, const float *b, ptrdiff_t rows, ptrdiff_t cols, int per_row, int b_left);
// lathe_relu_f32 writes max(x, 0) of the n values at src to dst.
// lathe_relu_backward_f32 writes g[i] where x[i] > 0, else 0, to dst.
void lathe_relu_backward_f32(float *dst, const float *g, const float *x, ptrdiff_t n);
void lathe_relu_f32(float *dst, const float *src, ptrdiff_t n);
// lathe_has_f16c reports whether the CPU has AVX2 and F16C, which the two
// conversions below need.
int lathe_has_f16c(void);
// lathe_widen16 writes the float32 values of n float16s (bf: bfloat16s) at
// src to dst; lathe_narrow16 rounds n float32s to them, to nearest even.
void lathe_widen16(float *dst, const unsigned short *src, ptrdiff_t n, int bf);
void lathe_narrow16(unsigned short *dst, const float *src, ptrdiff_t n, int bf);
// lathe_half_map writes op(p[i], q[i]) (op(p[i], s) where q is NULL, op(p[i])
// for relu) of n 16-bit floats (bf: bfloat16) to dst, computed in float32
// and rounded once.
void lathe_half_map(int op, int bf, unsigned short *dst, const unsigned short *p, const unsigned short *q, float s, ptrdiff_t n);
// lathe_half_rows writes op(p[r][j], b[(first + r) mod period]) for rows
// of cols values, as lathe_half_map (op one of its arithmetic ops).
void lathe_half_rows(int op, int bf, unsigned short *dst, const unsigned short *p, const unsigned short *b, ptrdiff_t first,
	ptrdiff_t period, ptrdiff_t rows, ptrdiff_t cols);
// lathe_convert writes n values at src converted to dst's type; kind
// names the two types.
enum { convF32F64, convF64F32, convI32F32, convI32F64, convF32I32, convF64I32 };
void lathe_convert(int kind, void *dst, const void *src, ptrdiff_t n);
// lathe_unary_f32 writes op(x) of the n float32s at src to dst, op one of
// shim.c's unary ops (erf32.go's unaryOp), a and b its parameters; wide:
// in AVX-512's lanes where the op has them.
void lathe_unary_f32(int op, float *dst, const float *src, ptrdiff_t n, float a, float b, int wide);
// lathe_binary_f32 writes op(p[i], q[i]) (op(p[i], s) where q is NULL)
// of n float32s to dst, op one of shim.c's binary ops (binary.go's
// binaryOp).
void lathe_binary_f32(int op, float *dst, const float *p, const float *q, float s, ptrdiff_t n);
// lathe_dropout_f32 and lathe_dropout_f64 (dropout.c) write dropout of n
// elements from src to dst, the first being element first of the tensor's
// row-major order: src[e]·scale where the element's Philox word under key
// is at least threshold, else src[e]·0.
void lathe_dropout_f32(float *dst, const float *src, ptrdiff_t n, uint64_t first, uint64_t key, uint32_t threshold, float scale);
void lathe_dropout_f64(double *dst, const double *src, ptrdiff_t n, uint64_t first, uint64_t key, uint32_t threshold, double scale);
// lathe_dropout_block_f32 and lathe_dropout_block_f64 are those rows over
// a block of rows at row stride ld (attention's probabilities): row r
// from element first + r·step, of cols elements, or of diag + r + 1 (0 to
// cols) under causal masking; where dst is not src, dst's elements past
// a row's are zeroed.
void lathe_dropout_block_f32(float *dst, const float *src, ptrdiff_t ld, ptrdiff_t rows, ptrdiff_t cols, int causal, ptrdiff_t diag,
			     uint64_t first, uint64_t step, uint64_t key, uint32_t threshold, float scale);
void lathe_dropout_block_f64(double *dst, const double *src, ptrdiff_t ld, ptrdiff_t rows, ptrdiff_t cols, int causal, ptrdiff_t diag,
			     uint64_t first, uint64_t step, uint64_t key, uint32_t threshold, double scale);
// lathe_add_scaled_f32 and lathe_add_scaled_f64 (add_scaled.c) write
// p[i] + alpha·q[i] (alpha·s where q is NULL), rounded once, for n
// elements.
void lathe_add_scaled_f32(float *dst, const float *p, const float *q, float s, float alpha, ptrdiff_t n);
void lathe_add_scaled_f64(double *dst, const double *p, const double *q, double s, double alpha, ptrdiff_t n);
// lathe_extreme_f32 is the largest (more != 0) or smallest of n ≥ 8
// float32s, or a NaN where any is NaN.
float lathe_extreme_f32(const float *x, ptrdiff_t n, int more);
// lathe_below_f32 writes to found (at most cap >= 8) the packed keys
// key << 32 | (base + i) of the x[i], i < n, whose sort key (sortKeyF32's)
// xor flip is below top, in order; it returns how many, and *end is the i
// where it stopped: top-k's scan.
ptrdiff_t lathe_below_f32(const float *x, ptrdiff_t n, unsigned top, unsigned flip, ptrdiff_t base,
                          unsigned long long *found, ptrdiff_t cap, ptrdiff_t *end);
// lathe_sum_exp_f32 is the float64 sum of e^(x - shift) over n float32s.
double lathe_sum_exp_f32(const float *x, ptrdiff_t n, float shift);
// lathe_softmax_cols_f32 writes softmax (log_: log_softmax) along the n
// rows of an n × inner float32 block for its columns [c0, c1), c1 - c0 a
// multiple of 8.
void lathe_softmax_cols_f32(float *dst, const float *src, ptrdiff_t n, ptrdiff_t inner, ptrdiff_t c0, ptrdiff_t c1, int log_);
// lathe_sum_cols_f32 writes to dst[j] the sum over i < rows of
// x[i·stride + j], for j < cols.
void lathe_sum_cols_f32(float *dst, const float *x, ptrdiff_t rows, ptrdiff_t stride, ptrdiff_t cols);
// lathe_extreme_cols_f32 writes to dst[j] the largest (more != 0) or
// smallest of x[i·stride + j] over i < rows, for j < cols: the first NaN,
// else the first extreme.
void lathe_extreme_cols_f32(float *dst, const float *x, ptrdiff_t rows, ptrdiff_t stride, ptrdiff_t cols, int more);
// lathe_prod_f32 is the product of the n values at x, in float64.
double lathe_prod_f32(const float *x, ptrdiff_t n);
// lathe_reduce_rows_f32 writes to dst[r], for r < rows, lathe_sum_f32 of
// the n >= 8 values from x + r·stride rounded to float (op 0),
// lathe_extreme_f32's largest (1) or smallest (2) of them, or
// lathe_prod_f32 rounded to float (3).
void lathe_reduce_rows_f32(int op, float *dst, const float *x, ptrdiff_t rows, ptrdiff_t n, ptrdiff_t stride);
// lathe_compare32 writes op(p[i], q[i]) (op(p[i], s) where q is NULL) as
// bytes of 0 or 1 for i < n, of float32s or (isint != 0) int32s; op is
// rows.go's cmpOp.
void lathe_compare32(int op, uint8_t *dst, const uint32_t *p, const uint32_t *q, uint32_t s, ptrdiff_t n, int isint);
// lathe_where32 and lathe_where64 write c[i] ? a[i] : b[i] for i < n, of
// 4- and 8-byte elements; a or b NULL takes as or bs for every i.
void lathe_where32(uint32_t *dst, const uint8_t *c, const uint32_t *a, const uint32_t *b, uint32_t as, uint32_t bs, ptrdiff_t n);
void lathe_where64(uint64_t *dst, const uint8_t *c, const uint64_t *a, const uint64_t *b, uint64_t as, uint64_t bs, ptrdiff_t n);
// lathe_transpose32 writes dst[r·ldd + c] = src[c·lds + r] for r < rows
// and c < cols, of 4-byte elements.
void lathe_transpose32(uint32_t *dst, const uint32_t *src, ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t ldd, ptrdiff_t lds);
// lathe_sqrt_f32 writes the square roots of the n values at src to dst.
void lathe_sqrt_f32(float *dst, const float *src, ptrdiff_t n);
// lathe_exp_rows_f32 writes e^x of the n values at src to dst.
void lathe_exp_rows_f32(float *dst, const float *src, ptrdiff_t n);
// lathe_erf_f32 writes erf of the n values at src to dst, from erf32.go's
// polynomial table (pieces) and saturation point; gelu != 0: gelu, in
// float32 lanes (shim.c says how; pieces is not read).
void lathe_erf_f32(float *dst, const float *src, ptrdiff_t n, const double *pieces, double saturate, int gelu, int wide);
// lathe_unary64_f32 writes op(x) of the n values at src to dst, computed in
// float64 lanes and rounded once: log (op 0), log1p, expm1, sin, cos,
// softplus (5, with beta a and threshold b), tan, sinh, cosh, asinh, acosh,
// atanh, atan, asin and acos (unary32.go's unary64Op).
void lathe_unary64_f32(int op, float *dst, const float *src, ptrdiff_t n, double a, double b);
// lathe_unary_f64 writes op(x) of the n doubles at src to dst, within an
// ulp or two of Go's math (unary_f64.h); op is unary64.go's float64Op.
void lathe_unary_f64(int op, double *dst, const double *src, ptrdiff_t n);
// lathe_sum_f64 is the sum of the n doubles at x, in sixteen lanes.
double lathe_sum_f64(const double *x, ptrdiff_t n);
// lathe_arith_f64 is lathe_arith_f32 for float64s.
void lathe_arith_f64(int op, double *dst, const double *p, const double *q, double s, ptrdiff_t n);
// lathe_softmax_f64 writes the softmax (log != 0: log-softmax) of rows
// consecutive rows of n ≥ 4 doubles and returns how many rows it wrote
// before one with a NaN or infinite max, which it leaves.
ptrdiff_t lathe_softmax_f64(double *dst, const double *src, ptrdiff_t rows, ptrdiff_t n, int log);
// lathe_act_backward_f32 writes g[i]·f'(x[i]) for i < n to dst, f gelu (op
// 0), gelu_tanh (1) or silu (2).
void lathe_act_backward_f32(int op, float *dst, const float *g, const float *x, ptrdiff_t n, int wide);

// lathe_sums is two sums, returned by value: a result written through a
// pointer would make Go put it on the heap at every call.
typedef struct {
	double a, b;
} lathe_sums;
// lathe_bn_moments_f32 returns Σ(x - shift) and Σ(x - shift)² in float64
// over planes planes of n values, stride apart from x: each plane's sums,
// added in plane order.
lathe_sums lathe_bn_moments_f32(const float *x, ptrdiff_t planes, ptrdiff_t stride, ptrdiff_t n, double shift);
// lathe_bn_sumprod_f32 returns Σg and Σg·(x - shift) in float64 over
// planes planes of n values at g and x, stride apart, as moments.
lathe_sums lathe_bn_sumprod_f32(const float *g, const float *x, ptrdiff_t planes, ptrdiff_t stride, ptrdiff_t n, double shift);
// lathe_conv_f32 is one image's convolution at stride 1 from its padded
// input x (c planes of hp × wp, 32 floats readable after) and the weights
// w as [k][o], into y (o planes of oh × ow), in AVX-512's lanes where wide.
void lathe_conv_f32(float *y, const float *x, const float *w, ptrdiff_t c, ptrdiff_t o, ptrdiff_t hp, ptrdiff_t wp,
	ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dw, int wide);

// lathe_conv_wgrad_f32 adds one image's weight gradient at stride 1 to dw
// [o][k], from the output gradient dy (o planes of oh × ow) and the padded
// input x (c planes of hp × wp).
void lathe_conv_wgrad_f32(float *dw, const float *dy, const float *x, ptrdiff_t c, ptrdiff_t o, ptrdiff_t hp,
	ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dwid, int wide);

// lathe_bn_apply_f32 writes x·a + b of the n values at src to dst.
void lathe_bn_apply_f32(float *dst, const float *src, ptrdiff_t n, float a, float b);
// lathe_bn_grad_f32 writes a·g + k·(x - mean) + d of the n values at g and
// x to dst.
void lathe_bn_grad_f32(float *dst, const float *g, const float *x, ptrdiff_t n, float a, float k, float mean, float d);
// lathe_bn_moments_h16, lathe_bn_sumprod_h16, lathe_bn_apply_h16 and
// lathe_bn_grad_h16 are the four loops above on 16-bit floats (bf:
// bfloat16), widened in blocks in the stack; apply rounds its results into
// 16 bits, grad writes float32. The caller checks lathe_has_f16c.
lathe_sums lathe_bn_moments_h16(const unsigned short *x, ptrdiff_t planes, ptrdiff_t stride, ptrdiff_t n, double shift, int bf);
lathe_sums lathe_bn_sumprod_h16(const unsigned short *g, const unsigned short *x, ptrdiff_t planes, ptrdiff_t stride, ptrdiff_t n,
                                double shift, int bf);
void lathe_bn_apply_h16(unsigned short *dst, const unsigned short *src, ptrdiff_t n, float a, float b, int bf);
void lathe_bn_grad_h16(float *dst, const unsigned short *g, const unsigned short *x, ptrdiff_t n, float a, float k, float mean,
                       float d, int bf);
// lathe_layer_norm_f32 writes the layer norm of rows consecutive rows of d
// values at x to y: (x - mean)·rstd·w + b, with w and b of d values.
void lathe_layer_norm_f32(float *y, const float *x, const float *w, const float *b, ptrdiff_t rows, ptrdiff_t d, double eps);
// lathe_layer_norm_backward_f32 writes the gradient of x of rows
// consecutive rows (d values each, g the result's gradient) to dx, and
// adds each row's g·x̂ to pw and g to pb (d float64s each).
void lathe_layer_norm_backward_f32(float *dx, double *pw, double *pb, const float *x, const float *w, const float *g,
                                   ptrdiff_t rows, ptrdiff_t d, double eps);

// amx.c: bfloat16 products on AMX tiles, or with AVX512-BF16's dot
// products on the same packed tiles. lathe_amx_open asks Linux for the
// tile state and returns 1 where the CPU has AMX-TILE and AMX-BF16 and the
// kernel granted it; lathe_amx_gemm may be called only after it has. The
// packing needs AVX512BW, which every CPU with either kernel has.
int lathe_amx_open(void);
// lathe_amx_packed_b is the number of bfloat16s that lathe_amx_pack_b
// writes for a k×n matrix.
ptrdiff_t lathe_amx_packed_b(ptrdiff_t k, ptrdiff_t n);
// lathe_amx_pack_b copies the k×n matrix b, element (p, j) at
// b[p·rs + j·cs], into zero-padded tiles at dst in the order
// lathe_amx_gemm reads.
void lathe_amx_pack_b(unsigned short *dst, const unsigned short *b, ptrdiff_t k, ptrdiff_t n, ptrdiff_t rs, ptrdiff_t cs);
// lathe_amx_gemm writes rows lo to hi (lo a multiple of 32; hi one too, or
// m) of the m×n product of a (element (i, p) at a[i·rs + p·cs]) and the
// packed k×n matrix, row stride ldc: in float32 to cf where it is not
// NULL (added to cf's values where acc), else rounded to bfloat16 into c.
// It returns 1; or 0, the output untouched, where it cannot allocate the
// 4·⌈k/32⌉ KiB it packs 32 rows of a into.
int lathe_amx_gemm(unsigned short *c, float *cf, int acc, ptrdiff_t ldc, const unsigned short *a, ptrdiff_t rs, ptrdiff_t cs,
                   ptrdiff_t m, ptrdiff_t k, ptrdiff_t n, const unsigned short *packed_b, ptrdiff_t lo, ptrdiff_t hi);
// lathe_dot_bf16_open returns 1 where the CPU has AVX512-BF16 (and
// AVX512BW), which lathe_dot_bf16_gemm needs; that is lathe_amx_gemm's
// product without tiles, on the same packed b, with the same contract.
int lathe_dot_bf16_open(void);
// lathe_pad_pairs_bf16 writes an image of in channels of h × w bfloat16s,
// padded by ph and pw, as (in + 1)/2 planes of 32-bit words that each hold
// two channels' values at one position, and clears 16 words after them
// (conv_dot.c); lathe_conv_dot_bf16 convolves such an image at stride 1
// with weights laid out as [pairs][kh][kw][o] pairs, into o float32
// planes of oh × ow, by AVX512-BF16's dot products (only where
// lathe_dot_bf16_open says the CPU has them).
void lathe_pad_pairs_bf16(uint32_t *dst, const uint16_t *x, ptrdiff_t in, ptrdiff_t h, ptrdiff_t w, ptrdiff_t ph, ptrdiff_t pw);
void lathe_conv_dot_bf16(float *y, const uint32_t *x, const uint32_t *wt, ptrdiff_t pairs, ptrdiff_t o, ptrdiff_t hp,
	ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dw);
// lathe_conv_wgrad_dot_bf16 is lathe_conv_wgrad_f32 for bfloat16 dy and
// padded x, by the same dot products, adding into the float32 dw.
void lathe_conv_wgrad_dot_bf16(float *dw, const uint16_t *dy, const uint16_t *x, ptrdiff_t c, ptrdiff_t o, ptrdiff_t hp,
	ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dwid);
int lathe_dot_bf16_gemm(unsigned short *c, float *cf, int acc, ptrdiff_t ldc, const unsigned short *a, ptrdiff_t rs,
                        ptrdiff_t cs, ptrdiff_t m, ptrdiff_t k, ptrdiff_t n, const unsigned short *packed_b, ptrdiff_t lo,
                        ptrdiff_t hi);

#endif
