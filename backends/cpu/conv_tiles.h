// conv_tiles.h: the weight gradients' walk over their register blocks,
// shared by vec_conv.h's float32 kernels and conv_dot.c's bfloat16 ones.
// WGRAD_TILES(o, nk, WG) runs WG(RO, RK) for o output channels four at a
// time by nk window elements three at a time, with o0 and k0 the block's
// first channel and element and RO and RK constants (the remainders'
// too), so that each block's sums stay in registers.
#ifndef LATHE_CONV_TILES_H
#define LATHE_CONV_TILES_H

#include <stddef.h>

// wgrad_offset is where window element k = (ci·kh + i)·kw + j of a
// weight gradient block reads the padded input (ci planes of hp × wp) at
// output position 0: both kernels' blocks take their RK elements' offsets
// from it. (A baseline function, which GCC inlines into the AVX ones.)
static inline ptrdiff_t wgrad_offset(ptrdiff_t k, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t hp, ptrdiff_t wp, ptrdiff_t dh,
	ptrdiff_t dwid) {
	ptrdiff_t j = k % kw, i = k / kw % kh, ci = k / (kw * kh);
	return ci * hp * wp + i * dh * wp + j * dwid;
}

#define WGRAD_TILES(o, nk, WG)                                                           \
	for (ptrdiff_t o0 = 0; o0 < (o); o0 += 4) {                                      \
		ptrdiff_t ro = (o) - o0 < 4 ? (o) - o0 : 4;                              \
		for (ptrdiff_t k0 = 0; k0 < (nk); k0 += 3) {                             \
			ptrdiff_t rk = (nk) - k0 < 3 ? (nk) - k0 : 3;                    \
			switch (ro * 4 + rk) {                                           \
			case 4 * 4 + 3: WG(4, 3); break;                                 \
			case 4 * 4 + 2: WG(4, 2); break;                                 \
			case 4 * 4 + 1: WG(4, 1); break;                                 \
			case 3 * 4 + 3: WG(3, 3); break;                                 \
			case 3 * 4 + 2: WG(3, 2); break;                                 \
			case 3 * 4 + 1: WG(3, 1); break;                                 \
			case 2 * 4 + 3: WG(2, 3); break;                                 \
			case 2 * 4 + 2: WG(2, 2); break;                                 \
			case 2 * 4 + 1: WG(2, 1); break;                                 \
			case 1 * 4 + 3: WG(1, 3); break;                                 \
			case 1 * 4 + 2: WG(1, 2); break;                                 \
			case 1 * 4 + 1: WG(1, 1); break;                                 \
			}                                                                \
		}                                                                        \
	}

#endif
