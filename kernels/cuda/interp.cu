// interp.cu: upsample_nearest, upsample_linear and upsample_bicubic and
// their backward ops, one separable pass per spatial dim. The semantics are
// lathe's cpu kernels' (backends/cpu/interp.go), which follow PyTorch's
// index and weight formulas (UpSample.h): each output index j of a dim
// reads k taps (1 nearest, 2 linear, 4 cubic) of the input at idx[t] with
// weight w[t], computed here per j in the dtype's arithmetic as the cpu
// computes them (nearest's source index in float32 for every dtype). The
// source coordinates use round-to-nearest intrinsics so that the compiler
// does not contract them into a fused multiply-add, which would move a
// coordinate across a pixel boundary where the cpu's does not.
//
// A pass maps (outer, n, inner) to (outer, m, inner) along its dim, both
// contiguous. Forward, interp_<dtype>: dst[o, j, i] = sum_t w[j,t] *
// src[o, idx[j,t], i], the taps in order. Backward, interp_backward_<dtype>:
// the transpose, dst[o, q, i] = sum over j, t with idx[j,t] == q of
// w[j,t] * src[o, j, i], in order of j then t from 0, as the cpu's scatter
// adds them. Both take
//   (F *dst, const F *src, i64 total, i64 outer, i64 inner, i64 in, i64 out,
//    i32 filter, double scale, i32 align, i32 exact)
// with in and out the forward op's sizes along the dim (the backward pass
// maps out to in), filter 0 nearest, 1 linear, 2 cubic, scale the caller's
// scale factor (0 for none), and total the elements of dst. Launch
// contract: 1-D grid of 1-D blocks of any size, one thread per element of
// dst in a grid-stride loop.
#include "lathe.cuh"

__device__ __forceinline__ float rn_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double rn_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float rn_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double rn_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float rn_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double rn_mul(double a, double b) { return __dmul_rn(a, b); }

// inverse_scale is the step in input pixels per output pixel: 1/scale when
// the caller gave a scale, else in/out (PyTorch's compute_scales_value).
template <typename T> __device__ __forceinline__ T inverse_scale(i64 in, i64 out, double scale) {
	return scale > 0 ? (T)(1 / scale) : (T)in / (T)out;
}

// area_scale is PyTorch's area_pixel_compute_scale.
template <typename T> __device__ __forceinline__ T area_scale(i64 in, i64 out, double scale, bool align) {
	if (align) return out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0;
	return inverse_scale<T>(in, out, scale);
}

// area_source is PyTorch's area_pixel_compute_source_index; linear clamps
// a negative coordinate to 0, cubic does not.
template <typename T> __device__ __forceinline__ T area_source(T s, i64 j, bool align, bool cubic) {
	if (align) return rn_mul(s, (T)j);
	T src = rn_sub(rn_mul(s, rn_add((T)j, (T)0.5)), (T)0.5);
	return (!cubic && src < 0) ? (T)0 : src;
}

template <typename T> __device__ __forceinline__ T cubic_near(T x) {
	const T a = (T)-0.75;
	return ((a + 2) * x - (a + 3)) * x * x + 1;
}
template <typename T> __device__ __forceinline__ T cubic_far(T x) {
	const T a = (T)-0.75;
	return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

// taps_of gives output index j's taps and returns how many there are.
template <typename T>
__device__ int taps_of(int filter, i64 in, i64 out, double scale, bool align, bool exact, i64 j, i64 (&idx)[4], T (&w)[4]) {
	if (filter == 0) {
		// Nearest is UpSample.h's nearest_idx, as layout's nearestTaps:
		// an output of the input's size copies it, one of twice its size
		// takes j/2, whatever scale gave that size; nearest-exact has no
		// such cases.
		i64 i;
		if (!exact && out == in) {
			i = j;
		} else if (!exact && out == 2 * in) {
			i = j / 2;
		} else {
			float s = inverse_scale<float>(in, out, scale);
			float src = exact ? (float)__dmul_rn((double)j + 0.5, (double)s) : __fmul_rn((float)j, s);
			i = (i64)floorf(src);
		}
		idx[0] = i < in - 1 ? i : in - 1;
		w[0] = 1;
		return 1;
	}
	T s = area_scale<T>(in, out, scale, align);
	if (filter == 1) {
		if (in == out) {
			idx[0] = idx[1] = j;
			w[0] = 1;
			w[1] = 0;
			return 2;
		}
		T src = area_source<T>(s, j, align, false);
		i64 i0 = (i64)src; // src >= 0: truncation is the floor
		idx[0] = i0;
		idx[1] = i0 < in - 1 ? i0 + 1 : i0;
		T l1 = src - (T)i0;
		l1 = l1 < 0 ? (T)0 : l1 > 1 ? (T)1 : l1;
		w[0] = 1 - l1;
		w[1] = l1;
		return 2;
	}
	T src = area_source<T>(s, j, align, true);
	T f = m_floor(src);
	T t = src - f;
	w[0] = cubic_far<T>(t + 1);
	w[1] = cubic_near<T>(t);
	w[2] = cubic_near<T>(1 - t);
	w[3] = cubic_far<T>(2 - t);
	for (int m = 0; m < 4; m++) {
		i64 i = (i64)f - 1 + m;
		idx[m] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
	}
	return 4;
}

template <typename T>
__device__ void interp(T *dst, const T *src, i64 total, i64 outer, i64 inner, i64 in, i64 out, i32 filter, double scale,
		       i32 align, i32 exact) {
	LATHE_FOR(e, total) {
		i64 r = e / inner, i = e - r * inner;
		i64 o = r / out, j = r - o * out;
		i64 idx[4];
		T w[4];
		int k = taps_of<T>(filter, in, out, scale, align != 0, exact != 0, j, idx, w);
		T acc = w[0] * src[(o * in + idx[0]) * inner + i];
		for (int t = 1; t < k; t++) acc += w[t] * src[(o * in + idx[t]) * inner + i];
		dst[e] = acc;
	}
}

template <typename T>
__device__ void interp_backward(T *dst, const T *src, i64 total, i64 outer, i64 inner, i64 in, i64 out, i32 filter,
				double scale, i32 align, i32 exact) {
	LATHE_FOR(e, total) {
		i64 r = e / inner, i = e - r * inner;
		i64 o = r / in, q = r - o * in;
		T acc = 0;
		// Every output index whose taps may read q; each tap checked.
		for (i64 j = 0; j < out; j++) {
			i64 idx[4];
			T w[4];
			int k = taps_of<T>(filter, in, out, scale, align != 0, exact != 0, j, idx, w);
			for (int t = 0; t < k; t++)
				if (idx[t] == q) acc += w[t] * src[(o * out + j) * inner + i];
		}
		dst[e] = acc;
	}
}

#define LATHE_INTERP(T, sfx)                                                                                     \
	extern "C" __global__ void interp_##sfx(T *dst, const T *src, i64 total, i64 outer, i64 inner, i64 in,    \
						i64 out, i32 filter, double scale, i32 align, i32 exact) {        \
		interp<T>(dst, src, total, outer, inner, in, out, filter, scale, align, exact);                   \
	}                                                                                                        \
	extern "C" __global__ void interp_backward_##sfx(T *dst, const T *src, i64 total, i64 outer, i64 inner,   \
							 i64 in, i64 out, i32 filter, double scale, i32 align,    \
							 i32 exact) {                                             \
		interp_backward<T>(dst, src, total, outer, inner, in, out, filter, scale, align, exact);          \
	}
LATHE_FLOATS(LATHE_INTERP)
