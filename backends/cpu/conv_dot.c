//go:build cgo

// The direct convolution (conv_direct.go) of bfloat16 images with
// AVX512-BF16's dot products, where vec_conv.h's kernels widen every value
// to float32 first. VDPBF16PS adds to each of sixteen float32 lanes the
// exact products of a pair of bfloat16s with another pair: here a pair of
// neighbouring input channels at one position, against the same two
// channels' weights broadcast. So the padded input is laid out with the
// channels' pairs interleaved (lathe_pad_pairs_bf16: one 32-bit word per
// position holds channels 2c and 2c + 1), and sixteen neighbouring
// positions are one 512-bit load. Products are exact, summed in float32 a
// pair at a time, subnormal operands and results flushed to zero: what
// amx.c's dot products and oneDNN's AVX512-BF16 kernels (PyTorch's on such
// a CPU) give.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cdecl.h"
#include "conv_tiles.h"

#define CONV_DOT __attribute__((target("avx512bf16,avx512f,avx512bw")))

// pairBlock is the output positions of a block, one per lane; dotRows the
// most output channels a block keeps in registers (sixteen of the 32).
enum { pairBlock = 16, dotRows = 16 };

// lathe_pad_pairs_bf16 lays an image of in channels of h × w bfloat16s
// out as (in + 1)/2 planes of (h + 2ph) × (w + 2pw) 32-bit words, channel
// 2c in the low half of plane c's words and 2c + 1 in the high half (zero
// for a last odd channel and on the border), and clears the pairBlock
// words after them, which the kernel may read.
void lathe_pad_pairs_bf16(uint32_t *dst, const uint16_t *x, ptrdiff_t in, ptrdiff_t h, ptrdiff_t w, ptrdiff_t ph, ptrdiff_t pw) {
	ptrdiff_t hp = h + 2 * ph, wp = w + 2 * pw, pairs = (in + 1) / 2;
	memset(dst, 0, (size_t)(pairs * hp * wp + pairBlock) * sizeof *dst);
	for (ptrdiff_t c = 0; c < in; c++) {
		const uint16_t *plane = x + c * h * w;
		uint32_t *out = dst + (c / 2) * hp * wp + ph * wp + pw;
		int shift = 16 * (c % 2);
		for (ptrdiff_t r = 0; r < h; r++)
			for (ptrdiff_t j = 0; j < w; j++) out[r * wp + j] |= (uint32_t)plane[r * w + j] << shift;
	}
}

// dot_block computes R output channels (o0 on) by up to sixteen output
// positions (x0 on, n of them stored) of output row row: for every pair of
// input channels and window position, one load of sixteen neighbouring
// input pairs and R dot products against the pair's weights broadcast.
// Inlined with R a constant, so that the sums stay in registers.
CONV_DOT static inline __attribute__((always_inline)) void dot_block(float *y, const uint32_t *x, const uint32_t *wt,
	ptrdiff_t pairs, ptrdiff_t o, ptrdiff_t hp, ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw,
	ptrdiff_t dh, ptrdiff_t dw, const int R, ptrdiff_t o0, ptrdiff_t row, ptrdiff_t x0, ptrdiff_t n) {
	__m512 acc[dotRows];
#pragma GCC unroll 16
	for (int q = 0; q < R; q++) acc[q] = _mm512_setzero_ps();
	const uint32_t *wk = wt + o0;
	for (ptrdiff_t c = 0; c < pairs; c++) {
		const uint32_t *plane = x + c * hp * wp + row * wp + x0;
		for (ptrdiff_t i = 0; i < kh; i++) {
			const uint32_t *r = plane + i * dh * wp;
			for (ptrdiff_t j = 0; j < kw; j++, wk += o) {
				__m512bh b = (__m512bh)_mm512_loadu_si512(r + j * dw);
#pragma GCC unroll 16
				for (int q = 0; q < R; q++) acc[q] = _mm512_dpbf16_ps(acc[q], (__m512bh)_mm512_set1_epi32((int)wk[q]), b);
			}
		}
	}
	__mmask16 keep = n == pairBlock ? 0xffff : (__mmask16)((1u << n) - 1);
#pragma GCC unroll 16
	for (int q = 0; q < R; q++) _mm512_mask_storeu_ps(y + (o0 + q) * oh * ow + row * ow + x0, keep, acc[q]);
}

CONV_DOT void lathe_conv_dot_bf16(float *y, const uint32_t *x, const uint32_t *wt, ptrdiff_t pairs, ptrdiff_t o, ptrdiff_t hp,
	ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dw) {
#define BLOCK(R) dot_block(y, x, wt, pairs, o, hp, wp, oh, ow, kh, kw, dh, dw, R, o0, row, x0, n)
	for (ptrdiff_t row = 0; row < oh; row++) {
		for (ptrdiff_t x0 = 0; x0 < ow; x0 += pairBlock) {
			ptrdiff_t n = ow - x0 < pairBlock ? ow - x0 : pairBlock;
			ptrdiff_t o0 = 0;
			for (; o0 + dotRows <= o; o0 += dotRows) BLOCK(dotRows);
			switch (o - o0) {
			case 15: BLOCK(15); break;
			case 14: BLOCK(14); break;
			case 13: BLOCK(13); break;
			case 12: BLOCK(12); break;
			case 11: BLOCK(11); break;
			case 10: BLOCK(10); break;
			case 9: BLOCK(9); break;
			case 8: BLOCK(8); break;
			case 7: BLOCK(7); break;
			case 6: BLOCK(6); break;
			case 5: BLOCK(5); break;
			case 4: BLOCK(4); break;
			case 3: BLOCK(3); break;
			case 2: BLOCK(2); break;
			case 1: BLOCK(1); break;
			}
		}
	}
#undef BLOCK
}

// wgrad_dot_block adds to dw the sums, over one image's output positions,
// of RO output channels' gradients (o0 on) times RK window elements'
// inputs (k0 on): each step 32 neighbouring positions of each, loaded as
// sixteen pairs, RO·RK dot products into float32 lanes added across at
// the end. A row's last positions are read through a mask, zeros past it,
// so that they add nothing (not even an infinite input's NaN).
CONV_DOT static inline __attribute__((always_inline)) void wgrad_dot_block(float *dw, const uint16_t *dy, const uint16_t *x,
	ptrdiff_t nk, ptrdiff_t hp, ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh,
	ptrdiff_t dwid, const int RO, const int RK, ptrdiff_t o0, ptrdiff_t k0) {
	ptrdiff_t xoff[3];
#pragma GCC unroll 3
	for (int r = 0; r < RK; r++) xoff[r] = wgrad_offset(k0 + r, kh, kw, hp, wp, dh, dwid);
	__m512 acc[4][3];
#pragma GCC unroll 4
	for (int q = 0; q < RO; q++)
#pragma GCC unroll 3
		for (int r = 0; r < RK; r++) acc[q][r] = _mm512_setzero_ps();
	for (ptrdiff_t row = 0; row < oh; row++) {
		const uint16_t *g = dy + o0 * oh * ow + row * ow, *in = x + row * wp;
		for (ptrdiff_t x0 = 0; x0 < ow; x0 += 32) {
			ptrdiff_t n = ow - x0 < 32 ? ow - x0 : 32;
			__mmask32 keep = n == 32 ? 0xffffffffu : (__mmask32)((1u << n) - 1);
			__m512bh a[4], b[3];
#pragma GCC unroll 4
			for (int q = 0; q < RO; q++) a[q] = (__m512bh)_mm512_maskz_loadu_epi16(keep, g + q * oh * ow + x0);
#pragma GCC unroll 3
			for (int r = 0; r < RK; r++) b[r] = (__m512bh)_mm512_maskz_loadu_epi16(keep, in + xoff[r] + x0);
#pragma GCC unroll 4
			for (int q = 0; q < RO; q++)
#pragma GCC unroll 3
				for (int r = 0; r < RK; r++) acc[q][r] = _mm512_dpbf16_ps(acc[q][r], a[q], b[r]);
		}
	}
#pragma GCC unroll 4
	for (int q = 0; q < RO; q++)
#pragma GCC unroll 3
		for (int r = 0; r < RK; r++) dw[(o0 + q) * nk + k0 + r] += _mm512_reduce_add_ps(acc[q][r]);
}

// lathe_conv_wgrad_dot_bf16 adds one image's (and group's) weight gradient
// to dw [o][k] by wgrad_dot_block's tiles, as vec_conv.h's wgrad does in
// float32 lanes.
CONV_DOT void lathe_conv_wgrad_dot_bf16(float *dw, const uint16_t *dy, const uint16_t *x, ptrdiff_t c, ptrdiff_t o,
	ptrdiff_t hp, ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dwid) {
	ptrdiff_t nk = c * kh * kw;
#define WG(RO, RK) wgrad_dot_block(dw, dy, x, nk, hp, wp, oh, ow, kh, kw, dh, dwid, RO, RK, o0, k0)
	WGRAD_TILES(o, nk, WG)
#undef WG
}
