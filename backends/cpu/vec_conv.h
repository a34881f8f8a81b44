// vec_conv.h: the direct convolution's kernels (conv_direct.go) for one
// vector width. shim.c includes it once per width, with these defined: W
// (the lanes: 8 or 16), RMAX (the output channels a forward block holds:
// 2·RMAX sums in registers, of the 16 or 32 the width has), VF (the float
// vector type), VEC (the target attribute) and the width's LOADW, STOREW,
// SPLATW and HSUMW. It defines conv_rows<W> and wgrad<W>. A forward block
// is 2·W output positions; the input may be read up to 2·W - 1 floats past
// its end (conv_direct.go leaves 32 readable).

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define PB (2 * W)

// conv_block<W> computes R output channels (o0 on) by PB output positions
// (x0 on, n of them kept) of output row row: a sum over the window of
// every input channel, each step two vectors of neighbouring inputs times
// R broadcast weights, the 2·R sums held in registers. Inlined with R a
// constant, so that the sums stay in registers.
VEC static inline __attribute__((always_inline)) void CAT(conv_block, W)(float *y, const float *x, const float *w,
	ptrdiff_t c, ptrdiff_t o, ptrdiff_t hp, ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw,
	ptrdiff_t dh, ptrdiff_t dw, const int R, ptrdiff_t o0, ptrdiff_t row, ptrdiff_t x0, ptrdiff_t n) {
	VF acc[RMAX][2];
#pragma GCC unroll 12
	for (int q = 0; q < R; q++) acc[q][0] = acc[q][1] = (VF){0};
	const float *wk = w + o0;
	for (ptrdiff_t ci = 0; ci < c; ci++) {
		const float *plane = x + ci * hp * wp + row * wp + x0;
		for (ptrdiff_t i = 0; i < kh; i++) {
			const float *r = plane + i * dh * wp;
			for (ptrdiff_t j = 0; j < kw; j++, wk += o) {
				VF b0 = LOADW(r + j * dw), b1 = LOADW(r + j * dw + W);
#pragma GCC unroll 12
				for (int q = 0; q < R; q++) {
					VF a = SPLATW(wk[q]);
					acc[q][0] += a * b0;
					acc[q][1] += a * b1;
				}
			}
		}
	}
#pragma GCC unroll 12
	for (int q = 0; q < R; q++) {
		float *dst = y + (o0 + q) * oh * ow + row * ow + x0;
		if (n == PB) {
			STOREW(dst, acc[q][0]);
			STOREW(dst + W, acc[q][1]);
			continue;
		}
		float tmp[PB];
		STOREW(tmp, acc[q][0]);
		STOREW(tmp + W, acc[q][1]);
		memcpy(dst, tmp, n * sizeof(float));
	}
}

// conv_rows<W> is one image's (and group's) convolution at stride 1 (shim.c's
// lathe_conv_f32): the input read where it lies, with no column matrix,
// the PB outputs of a block reading PB neighbouring inputs at each window
// position. A block's lanes past the row's end read past it too (into the
// next row, or the slack after x), and are not stored.
VEC static void CAT(conv_rows, W)(float *y, const float *x, const float *w, ptrdiff_t c, ptrdiff_t o, ptrdiff_t hp,
	ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dw) {
#define BLOCK(R) CAT(conv_block, W)(y, x, w, c, o, hp, wp, oh, ow, kh, kw, dh, dw, R, o0, row, x0, n)
	for (ptrdiff_t row = 0; row < oh; row++) {
		for (ptrdiff_t x0 = 0; x0 < ow; x0 += PB) {
			ptrdiff_t n = ow - x0 < PB ? ow - x0 : PB;
			ptrdiff_t o0 = 0;
			for (; o0 + RMAX <= o; o0 += RMAX) BLOCK(RMAX);
			switch (o - o0) { // RMAX is 6 or 12
			case 11: BLOCK(11 % RMAX); break;
			case 10: BLOCK(10 % RMAX); break;
			case 9: BLOCK(9 % RMAX); break;
			case 8: BLOCK(8 % RMAX); break;
			case 7: BLOCK(7 % RMAX); break;
			case 6: BLOCK(6 % RMAX); break;
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

// wgrad_block<W> adds to dw the sums, over one image's output positions,
// of RO output channels' gradients (o0 on) times RK window elements'
// inputs (k0 on): each step one vector of W neighbouring positions of
// each, RO·RK sums in registers (RO ≤ 4, RK ≤ 3), added across their
// lanes at the end. Positions past a row's end (its last, short vector)
// are read through zeroed copies, so that they add nothing, not even an
// infinite input's NaN.
VEC static inline __attribute__((always_inline)) void CAT(wgrad_block, W)(float *dw, const float *dy, const float *x,
	ptrdiff_t nk, ptrdiff_t hp, ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh,
	ptrdiff_t dwid, const int RO, const int RK, ptrdiff_t o0, ptrdiff_t k0) {
	ptrdiff_t xoff[3];
#pragma GCC unroll 3
	for (int r = 0; r < RK; r++) xoff[r] = wgrad_offset(k0 + r, kh, kw, hp, wp, dh, dwid);
	VF acc[4][3];
#pragma GCC unroll 4
	for (int q = 0; q < RO; q++)
#pragma GCC unroll 3
		for (int r = 0; r < RK; r++) acc[q][r] = (VF){0};
	for (ptrdiff_t row = 0; row < oh; row++) {
		const float *g = dy + o0 * oh * ow + row * ow, *in = x + row * wp;
		ptrdiff_t x0 = 0;
		for (; x0 + W <= ow; x0 += W) {
			VF a[4], b[3];
#pragma GCC unroll 4
			for (int q = 0; q < RO; q++) a[q] = LOADW(g + q * oh * ow + x0);
#pragma GCC unroll 3
			for (int r = 0; r < RK; r++) b[r] = LOADW(in + xoff[r] + x0);
#pragma GCC unroll 4
			for (int q = 0; q < RO; q++)
#pragma GCC unroll 3
				for (int r = 0; r < RK; r++) acc[q][r] += a[q] * b[r];
		}
		if (x0 < ow) {
			ptrdiff_t n = ow - x0;
			float ta[4][W], tb[3][W];
			memset(ta, 0, sizeof ta);
			memset(tb, 0, sizeof tb);
			for (int q = 0; q < RO; q++) memcpy(ta[q], g + q * oh * ow + x0, n * sizeof(float));
			for (int r = 0; r < RK; r++) memcpy(tb[r], in + xoff[r] + x0, n * sizeof(float));
#pragma GCC unroll 4
			for (int q = 0; q < RO; q++)
#pragma GCC unroll 3
				for (int r = 0; r < RK; r++) acc[q][r] += LOADW(ta[q]) * LOADW(tb[r]);
		}
	}
#pragma GCC unroll 4
	for (int q = 0; q < RO; q++)
#pragma GCC unroll 3
		for (int r = 0; r < RK; r++) dw[(o0 + q) * nk + k0 + r] += HSUMW(acc[q][r]);
}

// wgrad<W> adds one image's (and group's) weight gradient at stride 1 to
// dw [o][k] (shim.c's lathe_conv_wgrad_f32), four output channels by three
// window elements at a time.
VEC static void CAT(wgrad, W)(float *dw, const float *dy, const float *x, ptrdiff_t c, ptrdiff_t o, ptrdiff_t hp,
	ptrdiff_t wp, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t dh, ptrdiff_t dwid) {
	ptrdiff_t nk = c * kh * kw;
#define WG(RO, RK) CAT(wgrad_block, W)(dw, dy, x, nk, hp, wp, oh, ow, kh, kw, dh, dwid, RO, RK, o0, k0)
	WGRAD_TILES(o, nk, WG)
#undef WG
}

#undef PB
#undef CAT
#undef CAT_
