// grid.cu: grid_sampler (torch.nn.functional.grid_sample) over 2 or 3
// spatial dims, as lathe's cpu computes it (backends/cpu/grid.go:
// gridUnnormalize, gridPad, reflect, nearestPoint, linearPoint, and their notes on torch
// 1.13's NaN, far and tied coordinates; cubicPoint for bicubic), in the
// dtype's arithmetic. The
// coordinate arithmetic uses round-to-nearest intrinsics so that the
// compiler does not contract it into fused multiply-adds, which would move
// a coordinate across a pixel boundary where the cpu's does not.
//
// grid_sample_<dtype>(F *dst, const F *x, const F *grid, i64 total, i64 C,
//     i64 P, i32 k, i64 size0, i64 size1, i64 size2, i32 mode, i32 padding,
//     i32 align):
//   dst is (N, C, P) contiguous, total = N*C*P elements; x is (N, C, S...)
//   contiguous; grid is (N, P, k) contiguous. size_j is the size of the dim
//   that grid component j indexes (j = 0 is W, the last; size2 is unused
//   in 2-d). mode 0 bilinear, 1 nearest, 2 bicubic (2-d only); padding 0 zeros, 1 border,
//   2 reflection; align 0 or 1.
//   Launch contract: 1-D grid of 1-D blocks of any size, one thread per
//   element of dst in a grid-stride loop; each reads its point's grid
//   vector and the 2^k (or 1) pixels it needs.
#include "lathe.cuh"

__device__ __forceinline__ float gs_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double gs_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float gs_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double gs_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float gs_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double gs_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float gs_trunc(float a) { return truncf(a); }
__device__ __forceinline__ double gs_trunc(double a) { return trunc(a); }
__device__ __forceinline__ float gs_round(float a) { return roundf(a); }
__device__ __forceinline__ double gs_round(double a) { return round(a); }

// grid_unnormalize maps the normalised g to pixels along a dim of the
// given size (gridUnnormalize).
template <typename T> __device__ T grid_unnormalize(T g, i64 size, i32 align) {
	T n = (T)size;
	return align ? gs_mul(gs_add(g, (T)1), (n - 1) / 2) : gs_sub(gs_mul(gs_add(g, (T)1), n / 2), (T)0.5);
}

// grid_pad applies the padding mode to the pixel coordinate c (gridPad);
// with zeros padding a NaN stays NaN.
template <typename T> __device__ T grid_pad(T c, i64 size, i32 k, i32 padding, i32 align) {
	T n = (T)size;
	if (padding == 0) return c;
	if (padding == 2) {
		T low = align ? (T)0 : (T)-0.5;
		T period = align ? 2 * (n - 1) : 2 * n;
		if (period == 0) {
			c = 0;
		} else {
			T dist = m_abs(gs_sub(c, low));
			T extra = gs_sub(dist, gs_mul(gs_trunc(dist / period), period));
			T rest = gs_sub(period, extra);
			c = gs_add(rest < extra ? rest : extra, low); // NaN stays NaN
		}
	}
	if (is_nan(c)) return k == 2 ? (T)0 : n - 1;
	if (c <= 0) return 0;
	if (c >= n - 1) return n - 1;
	return c;
}

// grid_cubic is the weights of the taps at -1, 0, 1, 2 pixels from the
// floor for a fraction t (cubicWeights, A = -0.75).
template <typename T> __device__ void grid_cubic(T t, T w[4]) {
	const T a = (T)-0.75;
	T x0 = gs_add(t, (T)1), x2 = gs_sub((T)1, t), x3 = gs_add(x2, (T)1);
	w[0] = gs_sub(gs_mul(gs_add(gs_mul(gs_sub(gs_mul(a, x0), 5 * a), x0), 8 * a), x0), 4 * a);
	w[1] = gs_add(gs_mul(gs_mul(gs_sub(gs_mul(a + 2, t), a + 3), t), t), (T)1);
	w[2] = gs_add(gs_mul(gs_mul(gs_sub(gs_mul(a + 2, x2), a + 3), x2), x2), (T)1);
	w[3] = gs_sub(gs_mul(gs_add(gs_mul(gs_sub(gs_mul(a, x3), 5 * a), x3), 8 * a), x3), 4 * a);
}

template <typename T>
__device__ void grid_sample(T *dst, const T *x, const T *grid, i64 total, i64 C, i64 P, i32 k, i64 size0,
			    i64 size1, i64 size2, i32 mode, i32 padding, i32 align) {
	const i64 size[3] = {size0, size1, size2};
	i64 plane = 1;
	for (int j = 0; j < k; j++) plane *= size[j];
	LATHE_FOR(e, total) {
		i64 q = e % P, bc = e / P, b = bc / C;
		const T *img = x + bc * plane;
		const T *g = grid + (b * P + q) * k;
		if (mode == 2) {
			// Bicubic (2-d): 4x4 taps, each padded by itself (cubicPoint).
			T ix = grid_unnormalize<T>(g[0], size0, align), iy = grid_unnormalize<T>(g[1], size1, align);
			T fx = m_floor(ix), fy = m_floor(iy);
			T wx[4], wy[4];
			grid_cubic<T>(gs_sub(ix, fx), wx);
			grid_cubic<T>(gs_sub(iy, fy), wy);
			T acc = 0;
			for (int r = 0; r < 4; r++) {
				T y = grid_pad<T>(gs_add(fy, (T)(r - 1)), size1, 2, padding, align);
				T row = 0;
				for (int i = 0; i < 4; i++) {
					T x = grid_pad<T>(gs_add(fx, (T)(i - 1)), size0, 2, padding, align);
					T v = 0;
					if (x >= 0 && x < (T)size0 && y >= 0 && y < (T)size1) v = img[(i64)y * size0 + (i64)x];
					row = gs_add(row, gs_mul(v, wx[i]));
				}
				acc = gs_add(acc, gs_mul(row, wy[r]));
			}
			dst[e] = acc;
			continue;
		}
		T s[3];
		for (int j = 0; j < k; j++)
			s[j] = grid_pad<T>(grid_unnormalize<T>(g[j], size[j], align), size[j], k, padding, align);
		if (mode == 1) {
			// Nearest: ties to even in 2-d, away from zero in 3-d.
			i64 at = 0, stride = 1;
			bool ok = true;
			for (int j = 0; j < k; j++) {
				T r = k == 3 ? gs_round(s[j]) : m_rint(s[j]);
				ok = ok && r >= 0 && r < (T)size[j];
				if (ok) at += (i64)r * stride;
				stride *= size[j];
			}
			dst[e] = ok ? img[at] : (T)0;
			continue;
		}
		i64 base[3];
		T frac[3];
		bool lowIn[3], highIn[3], finite = true;
		for (int j = 0; j < k; j++) {
			T f = m_floor(s[j]);
			frac[j] = gs_sub(s[j], f);
			finite = finite && !is_nan(frac[j]);
			lowIn[j] = f >= 0 && f < (T)size[j];
			highIn[j] = f + 1 >= 0 && f + 1 < (T)size[j];
			base[j] = (lowIn[j] || highIn[j]) ? (i64)f : 0;
		}
		if (!finite) {
			// NaN in 2-d with zeros padding (the weights are NaN), else 0.
			T zero = 0;
			dst[e] = (k == 2 && padding == 0) ? zero / zero : zero;
			continue;
		}
		T acc = 0;
		for (int corner = 0; corner < (1 << k); corner++) {
			T w = 1;
			i64 at = 0, stride = 1;
			bool ok = true;
			for (int j = 0; j < k; j++) {
				if ((corner >> j) & 1) {
					w = gs_mul(w, frac[j]);
					ok = ok && highIn[j];
					at += (base[j] + 1) * stride;
				} else {
					w = gs_mul(w, gs_sub((T)1, frac[j]));
					ok = ok && lowIn[j];
					at += base[j] * stride;
				}
				stride *= size[j];
			}
			if (ok) acc = gs_add(acc, gs_mul(w, img[at]));
		}
		dst[e] = acc;
	}
}

#define LATHE_GRID(T, sfx)                                                                                     \
	extern "C" __global__ void grid_sample_##sfx(T *dst, const T *x, const T *grid, i64 total, i64 C, i64 P, \
						     i32 k, i64 size0, i64 size1, i64 size2, i32 mode,          \
						     i32 padding, i32 align) {                                  \
		grid_sample<T>(dst, x, grid, total, C, P, k, size0, size1, size2, mode, padding, align);        \
	}
LATHE_FLOATS(LATHE_GRID)
