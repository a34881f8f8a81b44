// philox.cuh: Philox4x32-10, internal/philox's Block (the Go package holds
// the numbering and the reference; the tests hold this to it), and the
// dropout kernels that make their mask with it. The high word of a 32-bit
// product is taken from a 64-bit one, which the GPU does in one mul.wide
// and the host emulation in plain C++.
#pragma once
#include "dense.cuh"

struct Words4 {
	u32 w[4];
};

__device__ __forceinline__ Words4 philox(u64 block, u32 k0, u32 k1) {
	u32 c0 = (u32)block, c1 = (u32)(block >> 32), c2 = 0, c3 = 0;
#pragma unroll
	for (int r = 0; r < 10; r++) {
		if (r > 0) {
			k0 += 0x9E3779B9u;
			k1 += 0xBB67AE85u;
		}
		u64 p0 = (u64)0xD2511F53u * c0, p1 = (u64)0xCD9E8D57u * c2;
		u32 n0 = (u32)(p1 >> 32) ^ c1 ^ k0, n2 = (u32)(p0 >> 32) ^ c3 ^ k1;
		c1 = (u32)p1;
		c3 = (u32)p0;
		c0 = n0;
		c2 = n2;
	}
	return Words4{{c0, c1, c2, c3}};
}

// ---- dropout (ops.Dropout): out[i] = x[i] * (keep ? scale : 0), keep where
// word i % 4 of the block at counter i / 4 under (k0, k1) is at least
// threshold, computed in the compute type (half.cuh's Storage: float for
// the 16-bit floats) with scale rounded to it, and stored once.
// Launch contract: a 1-D grid of 1-D blocks, any shape; each thread takes
// whole blocks of four elements in a grid-stride loop over the
// ceil(n / 4) blocks. out contiguous. "dropout_<dtype>" reads x contiguous
// from its pointer (x may be out exactly: a thread reads its elements
// before it writes them), a block's four elements as one Vec where out and
// x are aligned to it (16 bytes of float32: a v4 access; kernels/ptx's
// tests check the PTX has them), else one by one;
// "dropout_strided_<dtype>" reads x through a Layout of out (operand 0)
// and x (operand 1) over out's shape. Pointers need only the dtype's
// natural alignment.

template <typename T> __device__ __forceinline__ T dropped(T v, u32 word, u32 threshold, typename Storage<T>::compute s) {
	typedef typename Storage<T>::compute C;
	return Storage<T>::store(Storage<T>::load(v) * (word >= threshold ? s : (C)0));
}

template <typename T>
__device__ void dropout_dense(T *out, const T *x, i64 n, u32 k0, u32 k1, u32 threshold, double scale) {
	const typename Storage<T>::compute s = (typename Storage<T>::compute)scale;
	i64 blocks = (n + 3) / 4, whole = aligned<T, 4>(out) && aligned<T, 4>(x) ? n / 4 : 0;
	for (i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += (i64)blockDim.x * gridDim.x) {
		Words4 r = philox((u64)b, k0, k1);
		if (b < whole) {
			Vec<T, 4> v = *reinterpret_cast<const Vec<T, 4> *>(x + 4 * b);
#pragma unroll
			for (int j = 0; j < 4; j++) v.v[j] = dropped(v.v[j], r.w[j], threshold, s);
			*reinterpret_cast<Vec<T, 4> *>(out + 4 * b) = v;
			continue;
		}
		for (int j = 0; j < 4 && 4 * b + j < n; j++) out[4 * b + j] = dropped(x[4 * b + j], r.w[j], threshold, s);
	}
}

template <typename T>
__device__ void dropout_strided(T *out, const T *x, i64 n, const Layout &L, u32 k0, u32 k1, u32 threshold, double scale) {
	const typename Storage<T>::compute s = (typename Storage<T>::compute)scale;
	i64 blocks = (n + 3) / 4;
	for (i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += (i64)blockDim.x * gridDim.x) {
		Words4 r = philox((u64)b, k0, k1);
		for (int j = 0; j < 4 && 4 * b + j < n; j++) {
			i64 off[2];
			offsets_of<2>(L, 4 * b + j, off);
			out[4 * b + j] = dropped(x[off[1]], r.w[j], threshold, s);
		}
	}
}

#define LATHE_DROPOUT(T, sfx)                                                                                    \
	extern "C" __global__ void dropout_##sfx(T *out, const T *x, i64 n, u32 k0, u32 k1, u32 threshold, double scale) { \
		dropout_dense<T>(out, x, n, k0, k1, threshold, scale);                                             \
	}                                                                                                        \
	extern "C" __global__ void dropout_strided_##sfx(T *out, const T *x, i64 n, Layout L, u32 k0, u32 k1,      \
	                                                 u32 threshold, double scale) {                          \
		dropout_strided<T>(out, x, n, L, k0, k1, threshold, scale);                                        \
	}
