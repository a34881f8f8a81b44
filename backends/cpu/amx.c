//go:build cgo

// bfloat16 matrix products on Intel's AMX tiles (Sapphire Rapids and
// later): eight tile registers of 16 rows × 64 bytes, and TDPBF16PS, which
// adds to a 16×16 float32 tile the products of a 16×32 bfloat16 tile of A
// with a 32×16 one of B, the latter stored with pairs of B's rows
// interleaved ("VNNI" order: row r of the tile holds B[2r][j], B[2r+1][j]
// for j = 0..15). Products are exact and summed in float32, denormal
// inputs and outputs flushed to zero, as PyTorch's oneDNN kernels on the
// same instructions do.
//
// The product is blocked 32×32: two row tiles of A and two column tiles of
// B make four accumulator tiles, all eight registers. A and B are first
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
typedef uint16_t v32w __attribute__((vector_size(64)));
typedef uint32_t v16d __attribute__((vector_size(64)));

#define AVX512 __attribute__((target("avx512f,avx512bw")))

// pack_b_tile copies the 32×16 block of b at row p0, column j0 into the
// tile t, pairs of rows interleaved, zeros past b's edges. A block inside b
// that is row-major interleaves two rows at a time, and one that is
// column-major finds each pair in one 32-bit word.
AVX512 static void pack_b_tile(uint16_t *t, const uint16_t *b, ptrdiff_t k, ptrdiff_t n, ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t p0,
                               ptrdiff_t j0) {
	if (p0 + TILE_K <= k && j0 + 16 <= n && cs == 1) {
		for (int r = 0; r < TILE_ROWS; r++) {
			v16w x, y;
			memcpy(&x, b + (p0 + 2 * r) * rs + j0, sizeof x);
			memcpy(&y, b + (p0 + 2 * r + 1) * rs + j0, sizeof y);
			v32w xy = __builtin_shufflevector(x, y, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8, 24, 9, 25, 10,
			                                  26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
			memcpy(t + r * TILE_K, &xy, sizeof xy);
		}
		return;
	}
	if (p0 + TILE_K <= k && j0 + 16 <= n && rs == 1) {
		for (int c = 0; c < 16; c++) {
			const uint16_t *col = b + (j0 + c) * cs + p0;
			for (int r = 0; r < TILE_ROWS; r++) memcpy(t + r * TILE_K + 2 * c, col + 2 * r, 4);
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
// tile t, zeros past a's edges: a row-major block row by row, a
// column-major one column by column.
static void pack_a_tile(uint16_t *t, const uint16_t *a, ptrdiff_t m, ptrdiff_t k, ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t i0,
                        ptrdiff_t p0) {
	if (i0 + TILE_ROWS <= m && p0 + TILE_K <= k) {
		if (cs == 1) {
			for (int r = 0; r < TILE_ROWS; r++) memcpy(t + r * TILE_K, a + (i0 + r) * rs + p0, TILE_K * sizeof *t);
			return;
		}
		if (rs == 1) {
			for (int q = 0; q < TILE_K; q++) {
				const uint16_t *col = a + (p0 + q) * cs + i0;
				for (int r = 0; r < TILE_ROWS; r++) t[r * TILE_K + q] = col[r];
			}
			return;
		}
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
	for (int half = 0; half < 2; half++) {
		for (ptrdiff_t pb = 0; pb < kb; pb++) pack_a_tile(dst + (half * kb + pb) * TILE, a, m, k, rs, cs, i0 + half * TILE_ROWS, pb * TILE_K);
	}
}

// put rounds the part of a 16×16 float32 tile that falls inside the m×n
// matrix c to c, the tile's corner at row i, column j: to nearest even, a
// NaN kept a quiet NaN with its top bits, shim.c's narrow_bf16 in sixteen
// lanes (inline here: a call into shim.c's AVX2 loop per row made a 256³
// product 20% slower).
AVX512 static void put(uint16_t *c, ptrdiff_t ldc, ptrdiff_t m, ptrdiff_t n, ptrdiff_t i, ptrdiff_t j, const float *tile) {
	ptrdiff_t rows = m - i < 16 ? m - i : 16, cols = n - j < 16 ? n - j : 16;
	if (cols <= 0) return; // a tile wholly past c's last column
	for (ptrdiff_t r = 0; r < rows; r++) {
		v16d b;
		memcpy(&b, tile + r * 16, sizeof b);
		v16d nan = (b & 0x7fffffff) > 0x7f800000;
		v16d rounded = (b + 0x7fff + ((b >> 16) & 1)) >> 16;
		v16w h = __builtin_convertvector((nan & ((b >> 16) | 0x0040)) | (~nan & rounded), v16w);
		memcpy(c + (i + r) * ldc + j, &h, cols * sizeof *c);
	}
}

AMX int lathe_amx_gemm(unsigned short *c, ptrdiff_t ldc, const unsigned short *a, ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t m, ptrdiff_t k,
                       ptrdiff_t n, const unsigned short *packed_b, ptrdiff_t lo, ptrdiff_t hi) {
	ptrdiff_t kb = (k + TILE_K - 1) / TILE_K, nb = (n + 31) / 32 * 2;
	float out[4][TILE_ROWS * 16] __attribute__((aligned(64)));
	uint16_t *scratch = aligned_alloc(64, 2 * kb * TILE * sizeof *scratch);
	if (!scratch) return 0;
	configure();
	for (ptrdiff_t i0 = lo; i0 < hi; i0 += 32) {
		pack_a(scratch, a, m, k, rs, cs, i0, kb);
		const uint16_t *a0 = scratch, *a1 = scratch + kb * TILE;
		for (ptrdiff_t jb = 0; jb < nb; jb += 2) {
			const uint16_t *b0 = packed_b + jb * kb * TILE, *b1 = b0 + kb * TILE;
			_tile_zero(0);
			_tile_zero(1);
			_tile_zero(2);
			_tile_zero(3);
			for (ptrdiff_t pb = 0; pb < kb; pb++) {
				_tile_loadd(4, a0 + pb * TILE, 64);
				_tile_loadd(5, a1 + pb * TILE, 64);
				_tile_loadd(6, b0 + pb * TILE, 64);
				_tile_loadd(7, b1 + pb * TILE, 64);
				_tile_dpbf16ps(0, 4, 6);
				_tile_dpbf16ps(1, 4, 7);
				_tile_dpbf16ps(2, 5, 6);
				_tile_dpbf16ps(3, 5, 7);
			}
			_tile_stored(0, out[0], 64);
			_tile_stored(1, out[1], 64);
			_tile_stored(2, out[2], 64);
			_tile_stored(3, out[3], 64);
			ptrdiff_t j0 = jb * 16;
			put(c, ldc, m, n, i0, j0, out[0]);
			put(c, ldc, m, n, i0, j0 + 16, out[1]);
			put(c, ldc, m, n, i0 + 16, j0, out[2]);
			put(c, ldc, m, n, i0 + 16, j0 + 16, out[3]);
		}
	}
	_tile_release();
	free(scratch);
	return 1;
}
