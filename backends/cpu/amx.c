//go:build cgo

// bfloat16 matrix products on Intel's AMX tiles (Sapphire Rapids and
// later), or, on a CPU without them, with AVX512-BF16's dot products over
// the same packed tiles (dot_block, below). AMX has eight tile registers of 16 rows × 64 bytes, and TDPBF16PS, which
// adds to a 16×16 float32 tile the products of a 16×32 bfloat16 tile of A
// with a 32×16 one of B, the latter stored with pairs of B's rows
// interleaved ("VNNI" order: row r of the tile holds B[2r][j], B[2r+1][j]
// for j = 0..15). Products are exact and summed in float32, denormal
// inputs and outputs flushed to zero, as PyTorch's oneDNN kernels on the
// same instructions do.
//
// The product is blocked 32×32 (gemm_blocks): two row tiles of A and two
// column tiles of B make four accumulator tiles, all eight registers. A and B are first
// copied into zero-padded tiles (B once for all rows, A per 32 rows), so
// any strides and any sizes take the same inner loop.
//
// A thread may execute tile instructions only after the process has asked
// Linux for the tile state (arch_prctl), which lathe_amx_open does once;
// each call loads the tile configuration and releases the tiles itself,
// since Go may run the next call on another thread.
#include <cpuid.h>
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cdecl.h"

#define AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw")))

// Linux's arch_prctl codes for the dynamically enabled tile state, and
// the state's bit (linux/arch/x86/include/uapi/asm/prctl.h).
#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

int lathe_amx_open(void) {
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
	int tile = (d >> 24) & 1, bf16 = (d >> 22) & 1;
	if (!tile || !bf16) return 0;
	if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return 0;
	unsigned long perm = 0;
	if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &perm) != 0) return 0;
	return (perm >> XFEATURE_XTILEDATA) & 1;
}

// A tile holds 16 rows of 32 bfloat16s.
enum { TILE_ROWS = 16, TILE_K = 32, TILE = TILE_ROWS * TILE_K };

// The tile configuration (palette 1): every register 16 rows of 64 bytes.
struct tile_config {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

AMX static void configure(void) {
	struct tile_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	for (int i = 0; i < 8; i++) {
		cfg.colsb[i] = 64;
		cfg.rows[i] = TILE_ROWS;
	}
	_tile_loadconfig(&cfg);
}

ptrdiff_t lathe_amx_packed_b(ptrdiff_t k, ptrdiff_t n) {
	ptrdiff_t kb = (k + TILE_K - 1) / TILE_K, nb = (n + 31) / 32 * 2;
	return kb * nb * TILE;
}

typedef uint16_t v16w __attribute__((vector_size(32)));
#define PICK(...) __VA_ARGS__
typedef uint16_t v32w __attribute__((vector_size(64)));
typedef uint32_t v16d __attribute__((vector_size(64)));

#define AVX512 __attribute__((target("avx512f,avx512bw")))

// transpose16 transposes 16 vectors of 16 words in place, as four rounds
// that swap the off-diagonal blocks of 8, 4, 2 and 1 words.
AVX512 static inline void transpose16(v16d v[16]) {
#define SWAP(b, lo, hi)                                                \
	for (int i = 0; i < 16; i++) {                                     \
		if (i & b) continue;                                           \
		v16d x = v[i], y = v[i + b];                                   \
		v[i] = __builtin_shufflevector(x, y, lo);                      \
		v[i + b] = __builtin_shufflevector(x, y, hi);                  \
	}
	SWAP(8, PICK(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23), PICK(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31))
	SWAP(4, PICK(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27), PICK(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31))
	SWAP(2, PICK(0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29), PICK(2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31))
	SWAP(1, PICK(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30), PICK(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31))
#undef SWAP
}

// pack_b_tile copies the 32×16 block of b at row p0, column j0 into the
// tile t, pairs of rows interleaved, zeros past b's edges. A block of
// whole columns that is row-major interleaves two rows at a time, and one
// that is column-major finds each pair in one 32-bit word; only a block
// past b's last column goes value by value.
AVX512 static void pack_b_tile(uint16_t *t, const uint16_t *b, ptrdiff_t k, ptrdiff_t n, ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t p0,
                               ptrdiff_t j0) {
	ptrdiff_t rows = k - p0 < TILE_K ? k - p0 : TILE_K; // of b's, in this block
	if (j0 + 16 <= n && cs == 1) {
		for (int r = 0; r < TILE_ROWS; r++) {
			v16w x = {0}, y = {0};
			if (2 * r < rows) memcpy(&x, b + (p0 + 2 * r) * rs + j0, sizeof x);
			if (2 * r + 1 < rows) memcpy(&y, b + (p0 + 2 * r + 1) * rs + j0, sizeof y);
			v32w xy = __builtin_shufflevector(x, y, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8, 24, 9, 25, 10,
			                                  26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
			memcpy(t + r * TILE_K, &xy, sizeof xy);
		}
		return;
	}
	if (j0 + 16 <= n && rs == 1 && rows == TILE_K) {
		// Each column's 32 values are 16 pairs, 16 32-bit words: the tile
		// is the 16×16 transpose of those words.
		v16d v[16];
		for (int c = 0; c < 16; c++) memcpy(&v[c], b + (j0 + c) * cs + p0, sizeof v[c]);
		transpose16(v);
		memcpy(t, v, sizeof v);
		return;
	}
	if (j0 + 16 <= n && rs == 1) {
		for (int c = 0; c < 16; c++) {
			const uint16_t *col = b + (j0 + c) * cs + p0;
			for (int r = 0; r < TILE_ROWS; r++) {
				uint16_t *d = t + r * TILE_K + 2 * c;
				if (2 * r + 1 < rows) {
					memcpy(d, col + 2 * r, 4);
				} else {
					d[0] = 2 * r < rows ? col[2 * r] : 0;
					d[1] = 0;
				}
			}
		}
		return;
	}
	for (int r = 0; r < TILE_ROWS; r++) {
		for (int e = 0; e < 2; e++) {
			ptrdiff_t p = p0 + 2 * r + e;
			for (int c = 0; c < 16; c++) {
				ptrdiff_t j = j0 + c;
				t[r * TILE_K + 2 * c + e] = p < k && j < n ? b[p * rs + j * cs] : 0;
			}
		}
	}
}

AVX512 void lathe_amx_pack_b(unsigned short *dst, const unsigned short *b, ptrdiff_t k, ptrdiff_t n, ptrdiff_t rs, ptrdiff_t cs) {
	ptrdiff_t kb = (k + TILE_K - 1) / TILE_K, nb = (n + 31) / 32 * 2;
	for (ptrdiff_t jb = 0; jb < nb; jb++) {
		for (ptrdiff_t pb = 0; pb < kb; pb++) pack_b_tile(dst + (jb * kb + pb) * TILE, b, k, n, rs, cs, pb * TILE_K, jb * 16);
	}
}

// pack_a_tile copies the 16×32 block of a at row i0, column p0 into the
// tile t, zeros past a's edges: a block of whole rows that is row-major
// row by row, one that is column-major column by column; only a block
// past a's last row goes value by value.
static void pack_a_tile(uint16_t *t, const uint16_t *a, ptrdiff_t m, ptrdiff_t k, ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t i0,
                        ptrdiff_t p0) {
	ptrdiff_t np = k - p0 < TILE_K ? k - p0 : TILE_K; // columns of a's, in this block
	if (i0 + TILE_ROWS <= m && cs == 1) {
		for (int r = 0; r < TILE_ROWS; r++) {
			memcpy(t + r * TILE_K, a + (i0 + r) * rs + p0, np * sizeof *t);
			memset(t + r * TILE_K + np, 0, (TILE_K - np) * sizeof *t);
		}
		return;
	}
	if (i0 + TILE_ROWS <= m && rs == 1) {
		for (int q = 0; q < TILE_K; q++) {
			const uint16_t *col = a + (p0 + q) * cs + i0;
			for (int r = 0; r < TILE_ROWS; r++) t[r * TILE_K + q] = q < np ? col[r] : 0;
		}
		return;
	}
	for (int r = 0; r < TILE_ROWS; r++) {
		ptrdiff_t i = i0 + r;
		for (int q = 0; q < TILE_K; q++) {
			ptrdiff_t p = p0 + q;
			t[r * TILE_K + q] = i < m && p < k ? a[i * rs + p * cs] : 0;
		}
	}
}

// pack_a copies rows i0 .. i0+31 of the m×k matrix a into two columns of
// kb tiles at dst.
static void pack_a(uint16_t *dst, const uint16_t *a, ptrdiff_t m, ptrdiff_t k, ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t i0, ptrdiff_t kb) {
	for (int half = 0; half < 2 && i0 + half * TILE_ROWS < m; half++) { // lathe_amx_gemm skips a half past a's rows
		for (ptrdiff_t pb = 0; pb < kb; pb++) pack_a_tile(dst + (half * kb + pb) * TILE, a, m, k, rs, cs, i0 + half * TILE_ROWS, pb * TILE_K);
	}
}

typedef float v16f __attribute__((vector_size(64)));

// put writes the part of a 16×16 float32 tile that falls inside the m×n
// product there, the tile's corner at row i, column j: into cf in float32,
// added to it where acc, or else into c rounded to bfloat16 (to nearest
// even, a NaN kept a quiet NaN with its top bits: shim.c's narrow_bf16 in
// sixteen lanes). Whole rows of the tile move in vector registers: a call
// into shim.c's loop, or to memcpy, per row made a product several times
// slower.
AVX512 static void put(uint16_t *c, float *cf, int acc, ptrdiff_t ldc, ptrdiff_t m, ptrdiff_t n, ptrdiff_t i, ptrdiff_t j,
                       const float *tile) {
	ptrdiff_t rows = m - i < 16 ? m - i : 16, cols = n - j < 16 ? n - j : 16;
	if (cols <= 0) return; // a tile wholly past the last column
	for (ptrdiff_t r = 0; r < rows; r++) {
		const float *t = tile + r * 16;
		if (cf) {
			float *d = cf + (i + r) * ldc + j;
			if (cols < 16) {
				for (ptrdiff_t q = 0; q < cols; q++) d[q] = acc ? d[q] + t[q] : t[q];
				continue;
			}
			v16f v, w;
			memcpy(&v, t, sizeof v);
			if (acc) {
				memcpy(&w, d, sizeof w);
				v += w;
			}
			memcpy(d, &v, sizeof v);
			continue;
		}
		v16d b;
		memcpy(&b, t, sizeof b);
		v16d nan = (b & 0x7fffffff) > 0x7f800000;
		v16d rounded = (b + 0x7fff + ((b >> 16) & 1)) >> 16;
		v16w h = __builtin_convertvector((nan & ((b >> 16) | 0x0040)) | (~nan & rounded), v16w);
		uint16_t *d = c + (i + r) * ldc + j;
		if (cols == 16) {
			memcpy(d, &h, sizeof h);
		} else {
			for (ptrdiff_t q = 0; q < cols; q++) d[q] = h[q];
		}
	}
}

// A block_fn computes the 32×32 block of the product whose rows are the
// packed row tiles a0 and a1 and whose columns are the packed column tiles
// b0 and b1, each kb tiles deep, into out (four 16×16 float32 tiles: rows
// 0-15 by columns 0-15, 0-15 by 16-31, 16-31 by 0-15, 16-31 by 16-31);
// rows2 and cols2 say whether a1 and b1 hold any of the product, and the
// tiles of out that they would fill are left as they are where not.
typedef void block_fn(float out[4][TILE_ROWS * 16], const uint16_t *a0, const uint16_t *a1, const uint16_t *b0,
                      const uint16_t *b1, ptrdiff_t kb, int rows2, int cols2);

// gemm_blocks writes rows lo to hi of the product a block of 32×32 at a
// time with block, packing 32 rows of a at a time; either kernel below.
AVX512 static int gemm_blocks(block_fn *block, unsigned short *c, float *cf, int acc, ptrdiff_t ldc, const unsigned short *a,
                              ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t m, ptrdiff_t k, ptrdiff_t n, const unsigned short *packed_b,
                              ptrdiff_t lo, ptrdiff_t hi) {
	ptrdiff_t kb = (k + TILE_K - 1) / TILE_K, nb = (n + 31) / 32 * 2;
	float out[4][TILE_ROWS * 16] __attribute__((aligned(64)));
	uint16_t *scratch = aligned_alloc(64, 2 * kb * TILE * sizeof *scratch);
	if (!scratch) return 0;
	for (ptrdiff_t i0 = lo; i0 < hi; i0 += 32) {
		pack_a(scratch, a, m, k, rs, cs, i0, kb);
		const uint16_t *a0 = scratch, *a1 = scratch + kb * TILE;
		for (ptrdiff_t jb = 0; jb < nb; jb += 2) {
			const uint16_t *b0 = packed_b + jb * kb * TILE, *b1 = b0 + kb * TILE;
			// A block's second row or column of tiles is skipped where it
			// lies wholly past the product (16 output channels, say).
			ptrdiff_t j0 = jb * 16;
			int rows2 = i0 + 16 < m, cols2 = j0 + 16 < n;
			block(out, a0, a1, b0, b1, kb, rows2, cols2);
			put(c, cf, acc, ldc, m, n, i0, j0, out[0]);
			put(c, cf, acc, ldc, m, n, i0, j0 + 16, out[1]);
			put(c, cf, acc, ldc, m, n, i0 + 16, j0, out[2]);
			put(c, cf, acc, ldc, m, n, i0 + 16, j0 + 16, out[3]);
		}
	}
	free(scratch);
	return 1;
}

// amx_block: the four tiles of out are four accumulator registers, and
// each step of 32 along k is a TDPBF16PS per pair of a row and a column
// tile.
AMX static void amx_block(float out[4][TILE_ROWS * 16], const uint16_t *a0, const uint16_t *a1, const uint16_t *b0,
                          const uint16_t *b1, ptrdiff_t kb, int rows2, int cols2) {
	_tile_zero(0);
	_tile_zero(1);
	_tile_zero(2);
	_tile_zero(3);
	for (ptrdiff_t pb = 0; pb < kb; pb++) {
		_tile_loadd(4, a0 + pb * TILE, 64);
		_tile_loadd(6, b0 + pb * TILE, 64);
		_tile_dpbf16ps(0, 4, 6);
		if (cols2) {
			_tile_loadd(7, b1 + pb * TILE, 64);
			_tile_dpbf16ps(1, 4, 7);
		}
		if (rows2) {
			_tile_loadd(5, a1 + pb * TILE, 64);
			_tile_dpbf16ps(2, 5, 6);
			if (cols2) _tile_dpbf16ps(3, 5, 7);
		}
	}
	_tile_stored(0, out[0], 64);
	_tile_stored(1, out[1], 64);
	_tile_stored(2, out[2], 64);
	_tile_stored(3, out[3], 64);
}

AMX int lathe_amx_gemm(unsigned short *c, float *cf, int acc, ptrdiff_t ldc, const unsigned short *a, ptrdiff_t rs, ptrdiff_t cs,
                       ptrdiff_t m, ptrdiff_t k, ptrdiff_t n, const unsigned short *packed_b, ptrdiff_t lo, ptrdiff_t hi) {
	configure();
	int ok = gemm_blocks(amx_block, c, cf, acc, ldc, a, rs, cs, m, k, n, packed_b, lo, hi);
	_tile_release();
	return ok;
}

// The same products without tiles: AVX512-BF16's VDPBF16PS adds to each
// of sixteen float32 lanes the exact products of a pair of bfloat16s,
// which is what a row of a packed B tile holds for its sixteen columns
// (the pairs of k interleaved), against one pair of an A row broadcast to
// every lane. Products are exact, summed in float32, subnormal operands
// and results flushed to zero, as on the tiles (and as oneDNN's
// AVX512-BF16 kernels, PyTorch's on such a CPU, give), in pairs along k.
// AMD's Zen 4 and later and Intel's Cooper Lake have it without AMX.
#define DOT __attribute__((target("avx512bf16,avx512f,avx512bw")))

int lathe_dot_bf16_open(void) { return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw"); }

// dot_rows accumulates 8 rows of the row tile a (from row r0) against the
// column tiles b0 and, where both, b1: sixteen accumulators, each row's
// pair of k broadcast once for both columns tiles, the two B rows loaded
// once for eight rows. both is a constant in each call, so the loop is
// compiled twice, without a branch.
DOT static inline __attribute__((always_inline)) void dot_rows(float *out0, float *out1, const uint16_t *a, const uint16_t *b0,
                                                               const uint16_t *b1, ptrdiff_t kb, int r0, const int both) {
	__m512 c0[8], c1[8];
	for (int r = 0; r < 8; r++) c0[r] = c1[r] = _mm512_setzero_ps();
	for (ptrdiff_t pb = 0; pb < kb; pb++) {
		const uint16_t *at = a + pb * TILE + r0 * TILE_K, *t0 = b0 + pb * TILE, *t1 = b1 + pb * TILE;
		for (int q = 0; q < TILE_ROWS; q++) {
			__m512bh w0 = (__m512bh)_mm512_loadu_si512(t0 + q * TILE_K), w1 = w0;
			if (both) w1 = (__m512bh)_mm512_loadu_si512(t1 + q * TILE_K);
#pragma GCC unroll 8
			for (int r = 0; r < 8; r++) {
				int32_t pair;
				memcpy(&pair, at + r * TILE_K + 2 * q, sizeof pair);
				__m512bh v = (__m512bh)_mm512_set1_epi32(pair);
				c0[r] = _mm512_dpbf16_ps(c0[r], v, w0);
				if (both) c1[r] = _mm512_dpbf16_ps(c1[r], v, w1);
			}
		}
	}
	for (int r = 0; r < 8; r++) {
		_mm512_store_ps(out0 + (r0 + r) * 16, c0[r]);
		if (both) _mm512_store_ps(out1 + (r0 + r) * 16, c1[r]);
	}
}

DOT static void dot_block(float out[4][TILE_ROWS * 16], const uint16_t *a0, const uint16_t *a1, const uint16_t *b0,
                          const uint16_t *b1, ptrdiff_t kb, int rows2, int cols2) {
	for (int h = 0; h < 1 + rows2; h++) {
		const uint16_t *a = h ? a1 : a0;
		for (int r0 = 0; r0 < TILE_ROWS; r0 += 8) {
			if (cols2) {
				dot_rows(out[2 * h], out[2 * h + 1], a, b0, b1, kb, r0, 1);
			} else {
				dot_rows(out[2 * h], out[2 * h + 1], a, b0, b1, kb, r0, 0);
			}
		}
	}
}

AVX512 int lathe_dot_bf16_gemm(unsigned short *c, float *cf, int acc, ptrdiff_t ldc, const unsigned short *a, ptrdiff_t rs,
                               ptrdiff_t cs, ptrdiff_t m, ptrdiff_t k, ptrdiff_t n, const unsigned short *packed_b, ptrdiff_t lo,
                               ptrdiff_t hi) {
	return gemm_blocks(dot_block, c, cf, acc, ldc, a, rs, cs, m, k, n, packed_b, lo, hi);
}
