// unfold.cu: unfold (im2col) and fold (col2im), PyTorch's F.unfold and
// F.fold, over 1 to 3 spatial dims. The semantics are lathe's cpu kernels'
// (backends/cpu/conv.go): unfold maps (N, C, spatial...) to (N, C*K, L),
// row c*K + k (k row-major over the kernel's taps) and column l (row-major
// over the window positions) holding the input at position l's tap k, or
// 0 where the tap falls in the padding; fold is its adjoint, summing where
// windows overlap in the cpu's order (k ascending), so it matches bit for
// bit.
//
// Both take (F *out, const F *in, i64 n, PoolGeom G) with G.in the image's
// spatial size, G.out the grid of window positions (L = G.out_plane), and
// G.kernel, stride, padding, dilation the window's (adaptive 0); tensors
// row-major (the host copies a strided input first). Launch contract: a 1-D
// grid of 1-D blocks of any size, one thread per output element in a
// grid-stride loop; n is planes * K * L for unfold, planes * G.in_plane for
// fold, planes being N * C.
#include "window.cuh"

// taps is K, the window's number of taps.
__device__ __forceinline__ i64 taps(const PoolGeom &G) {
	i64 k = 1;
	for (int d = 0; d < (int)G.dims; d++) k *= G.kernel[d];
	return k;
}

template <typename F>
__device__ void unfold(F *out, const F *x, i64 n, const PoolGeom &G) {
	i64 K = taps(G), L = G.out_plane;
	LATHE_FOR(i, n) {
		i64 t = i / L, l = i - t * L;
		i64 plane = t / K, k = t - plane * K;
		// The place read: per dim (last first), position l's start plus
		// tap k's dilated offset.
		i64 off = 0, scale = 1;
		bool inside = true;
		for (int d = (int)G.dims - 1; d >= 0; d--) {
			i64 ql = l / G.out[d], qk = k / G.kernel[d];
			i64 at = (l - ql * G.out[d]) * G.stride[d] - G.padding[d] + (k - qk * G.kernel[d]) * G.dilation[d];
			inside = inside && at >= 0 && at < G.in[d];
			off += at * scale;
			scale *= G.in[d];
			l = ql;
			k = qk;
		}
		out[i] = inside ? x[plane * G.in_plane + off] : (F)0;
	}
}

template <typename F>
__device__ void fold(F *out, const F *col, i64 n, const PoolGeom &G) {
	i64 K = taps(G), L = G.out_plane;
	LATHE_FOR(i, n) {
		i64 plane = i / G.in_plane, rem = i - plane * G.in_plane;
		i64 idx[LATHE_POOL_DIMS] = {0, 0, 0};
		for (int d = (int)G.dims - 1; d >= 0; d--) {
			i64 q = rem / G.in[d];
			idx[d] = rem - q * G.in[d];
			rem = q;
		}
		const F *c = col + plane * K * L;
		F sum = 0;
		for (i64 k = 0; k < K; k++) {
			// Tap k of the window at position o reads idx where
			// o * stride - padding + tap * dilation == idx, per dim.
			i64 kk = k, l = 0, lscale = 1;
			bool hit = true;
			for (int d = (int)G.dims - 1; d >= 0 && hit; d--) {
				i64 q = kk / G.kernel[d], tap = kk - q * G.kernel[d];
				kk = q;
				i64 num = idx[d] + G.padding[d] - tap * G.dilation[d];
				hit = num >= 0 && num % G.stride[d] == 0 && num / G.stride[d] < G.out[d];
				l += (num / G.stride[d]) * lscale;
				lscale *= G.out[d];
			}
			if (hit) sum += c[k * L + l];
		}
		out[i] = sum;
	}
}

#define LATHE_UNFOLD(F, sfx)                                                                                  \
	extern "C" __global__ void unfold_##sfx(F *out, const F *x, i64 n, PoolGeom G) { unfold<F>(out, x, n, G); } \
	extern "C" __global__ void fold_##sfx(F *out, const F *col, i64 n, PoolGeom G) { fold<F>(out, col, n, G); }
LATHE_FLOATS(LATHE_UNFOLD)

// unfold_h16 is unfold of float16 and bfloat16 alike: a copy of 16-bit
// words, and 0 (+0 in both formats) in the padding, so that a 16-bit
// convolution's product reads its columns in their storage dtype, half the
// bytes of float32 columns and no conversion (backends/cuda/ops_conv.go).
// fold adds, so it has no such form.
extern "C" __global__ void unfold_h16(u16 *out, const u16 *x, i64 n, PoolGeom G) { unfold<u16>(out, x, n, G); }
