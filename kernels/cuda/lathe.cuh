// lathe.cuh: what every kernel family shares. NVRTC compiles these sources
// without any CUDA header (none is installed where lathe builds), so the
// integer types, the float constants and the per-dtype math overloads are
// declared here.
//
// Conventions of every kernel in kernels/cuda:
//   - Element counts, indices, strides and offsets are int64 ("i64") and in
//     elements, never bytes, so tensors past 2^31 elements are walked right.
//   - Pointers are to element 0 of the tensor's view (the host adds the
//     view's offset); a layout's offset[] is a further element offset on top,
//     which may be negative (lathe's host passes 0: for the aliases that
//     flip, concat and pad read and write through, it moves the pointer).
//   - Elementwise loops are grid-stride loops: any grid covers any n, so the
//     host may cap the grid (backends/cuda/geometry.go).
//   - bool is stored as one byte, 0 or 1 (uint8), as lathe's cpu backend and
//     PyTorch store it; kernels read any nonzero byte as true.
#pragma once

typedef long long i64;
typedef unsigned long long u64;
typedef int i32;
typedef unsigned int u32;
typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;

// The largest rank a layout describes; the host refuses higher ranks.
#define LATHE_MAX_RANK 8
// The most operands (output first, then inputs) one layout walks.
#define LATHE_MAX_OPERANDS 4

// Layout walks up to four operands over one shape: operand k's element at
// multi-index (i_0, ..., i_{rank-1}) is at element
//   offset[k] + sum_d i_d * stride[k][d]
// of its pointer. Operand 0 is the output. A rank of 0 is one element.
// Broadcast dims have stride 0. The host (backends/cuda/layout.go, type
// cLayout) writes the same bytes; every field is 8 bytes, so there is no
// padding. Byte offsets, which layout_test.go checks:
//   rank    0
//   shape   8    (8 x i64)
//   stride  72   (4 x 8 x i64, operand-major)
//   offset  328  (4 x i64)
//   size    360
struct Layout {
	i64 rank;
	i64 shape[LATHE_MAX_RANK];
	i64 stride[LATHE_MAX_OPERANDS][LATHE_MAX_RANK];
	i64 offset[LATHE_MAX_OPERANDS];
};
static_assert(sizeof(Layout) == 360, "Layout must match backends/cuda cLayout");

// Rows describes a set of rows, each a run of elements reduced or scanned
// together (reductions, softmax, cumsum). Row r's outer multi-index is r
// unravelled over outer_shape (row-major); element j of a row is j
// unravelled over inner_shape. Operand 0 is the output, operand 1 the
// input: operand k's element (r, j) is at
//   offset[k] + sum_d outer_i_d * outer_stride[k][d] + sum_d inner_i_d * inner_stride[k][d].
// A reduction's output has inner strides 0. Byte offsets (backends/cuda
// cRows):
//   outer_rank    0
//   inner_rank    8
//   outer_shape   16   (8 x i64)
//   outer_stride  80   (2 x 8 x i64)
//   inner_shape   208  (8 x i64)
//   inner_stride  272  (2 x 8 x i64)
//   offset        400  (2 x i64)
//   size          416
struct Rows {
	i64 outer_rank;
	i64 inner_rank;
	i64 outer_shape[LATHE_MAX_RANK];
	i64 outer_stride[2][LATHE_MAX_RANK];
	i64 inner_shape[LATHE_MAX_RANK];
	i64 inner_stride[2][LATHE_MAX_RANK];
	i64 offset[2];
};
static_assert(sizeof(Rows) == 416, "Rows must match backends/cuda cRows");

// The grid-stride loop over [0, n) that every elementwise kernel uses, with
// 64-bit indices.
#define LATHE_FOR(i, n)                                                  \
	for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
	     i += (i64)blockDim.x * gridDim.x)

// offsets_of unravels the linear index i over L's shape (row-major) and
// gives the element offset of each of the first K operands.
template <int K>
__device__ __forceinline__ void offsets_of(const Layout &L, i64 i, i64 (&off)[K]) {
#pragma unroll
	for (int k = 0; k < K; k++) off[k] = L.offset[k];
#pragma unroll
	for (int d = LATHE_MAX_RANK - 1; d >= 0; d--) {
		if (d < L.rank) {
			i64 s = L.shape[d];
			i64 q = i / s; // one division: the remainder is i - q*s
			i64 c = i - q * s;
			i = q;
#pragma unroll
			for (int k = 0; k < K; k++) off[k] += c * L.stride[k][d];
		}
	}
}

// row_base is the offset of row r's first element in operand k.
__device__ __forceinline__ i64 row_base(const Rows &R, int k, i64 r) {
	i64 off = R.offset[k];
#pragma unroll
	for (int d = LATHE_MAX_RANK - 1; d >= 0; d--) {
		if (d < R.outer_rank) {
			i64 s = R.outer_shape[d];
			i64 q = r / s;
			off += (r - q * s) * R.outer_stride[k][d];
			r = q;
		}
	}
	return off;
}

// row_at is the offset of element j of a row, from the row's base, in
// operand k.
__device__ __forceinline__ i64 row_at(const Rows &R, int k, i64 j) {
	i64 off = 0;
#pragma unroll
	for (int d = LATHE_MAX_RANK - 1; d >= 0; d--) {
		if (d < R.inner_rank) {
			i64 s = R.inner_shape[d];
			i64 q = j / s;
			off += (j - q * s) * R.inner_stride[k][d];
			j = q;
		}
	}
	return off;
}

// ---- Floating-point constants and tests (no math_constants.h here).

__device__ __forceinline__ float inf_f32() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double inf_f64() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ double nan_f64() { return __longlong_as_double(0x7ff8000000000000LL); }

// is_nan is x != x, which is false for every integer, so templates call it
// for all dtypes.
template <typename T>
__device__ __forceinline__ bool is_nan(T x) { return x != x; }

// ---- Per-dtype math: one overload per float type, so that templates call
// the single-precision libdevice functions for float32 (as PyTorch's cuda
// kernels do) and the double ones for float64.

#define LATHE_MATH1(name, f32, f64)                                      \
	__device__ __forceinline__ float name(float x) { return f32(x); } \
	__device__ __forceinline__ double name(double x) { return f64(x); }
LATHE_MATH1(m_abs, fabsf, fabs)
LATHE_MATH1(m_exp, expf, exp)
LATHE_MATH1(m_log, logf, log)
LATHE_MATH1(m_log1p, log1pf, log1p)
LATHE_MATH1(m_expm1, expm1f, expm1)
LATHE_MATH1(m_sqrt, sqrtf, sqrt)
LATHE_MATH1(m_rsqrt, rsqrtf, rsqrt)
LATHE_MATH1(m_sin, sinf, sin)
LATHE_MATH1(m_cos, cosf, cos)
LATHE_MATH1(m_tanh, tanhf, tanh)
LATHE_MATH1(m_erf, erff, erf)
LATHE_MATH1(m_erfc, erfcf, erfc)
LATHE_MATH1(m_tan, tanf, tan)
LATHE_MATH1(m_asin, asinf, asin)
LATHE_MATH1(m_acos, acosf, acos)
LATHE_MATH1(m_atan, atanf, atan)
LATHE_MATH1(m_sinh, sinhf, sinh)
LATHE_MATH1(m_cosh, coshf, cosh)
LATHE_MATH1(m_asinh, asinhf, asinh)
LATHE_MATH1(m_acosh, acoshf, acosh)
LATHE_MATH1(m_atanh, atanhf, atanh)
LATHE_MATH1(m_floor, floorf, floor)
LATHE_MATH1(m_ceil, ceilf, ceil)
LATHE_MATH1(m_rint, rintf, rint) // round half to even, as torch.round
LATHE_MATH1(m_lgamma, lgammaf, lgamma)
#undef LATHE_MATH1

__device__ __forceinline__ float m_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double m_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float m_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double m_fma(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ float m_atan2(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ double m_atan2(double a, double b) { return atan2(a, b); }

// ---- Integer arithmetic that wraps, as Go's and PyTorch's do: signed
// overflow is undefined in C++, so it goes through the unsigned type.

template <typename T> struct Unsigned;
template <> struct Unsigned<i32> { typedef u32 type; };
template <> struct Unsigned<i64> { typedef u64 type; };

template <typename T>
__device__ __forceinline__ T wrap_add(T a, T b) {
	typedef typename Unsigned<T>::type U;
	return (T)((U)a + (U)b);
}
template <typename T>
__device__ __forceinline__ T wrap_sub(T a, T b) {
	typedef typename Unsigned<T>::type U;
	return (T)((U)a - (U)b);
}
template <typename T>
__device__ __forceinline__ T wrap_mul(T a, T b) {
	typedef typename Unsigned<T>::type U;
	return (T)((U)a * (U)b);
}

// Accum is the type a dtype's sums and products are accumulated in:
// float64 for floats, int64 for integers (as lathe's cpu kernels and
// PyTorch's integer sums do).
template <typename T> struct Accum;
template <> struct Accum<float> { typedef double type; };
template <> struct Accum<double> { typedef double type; };
template <> struct Accum<i32> { typedef i64 type; };
template <> struct Accum<i64> { typedef i64 type; };

// acc_add and acc_mul are + and * in the accumulation type, wrapping for
// integers.
__device__ __forceinline__ double acc_add(double a, double b) { return a + b; }
__device__ __forceinline__ i64 acc_add(i64 a, i64 b) { return wrap_add(a, b); }
__device__ __forceinline__ double acc_mul(double a, double b) { return a * b; }
__device__ __forceinline__ i64 acc_mul(i64 a, i64 b) { return wrap_mul(a, b); }

// ---- Warp and block reductions over any trivially copyable value type V
// with a combine function object. Values move between lanes as 32-bit words,
// so V may be a struct (an argmax pair, a Welford triple).

template <typename V>
__device__ __forceinline__ V shfl_down(V v, int delta) {
	static_assert(sizeof(V) % 4 == 0, "shuffled values are whole 32-bit words");
	union {
		V v;
		int w[sizeof(V) / 4];
	} u;
	u.v = v;
#pragma unroll
	for (int i = 0; i < (int)(sizeof(V) / 4); i++) u.w[i] = __shfl_down_sync(0xffffffffu, u.w[i], delta);
	return u.v;
}

template <typename V, typename C>
__device__ __forceinline__ V warp_reduce(V v, C combine) {
#pragma unroll
	for (int d = 16; d > 0; d >>= 1) v = combine(v, shfl_down(v, d));
	return v;
}

// block_reduce combines one value per thread of the block; the result is
// valid in thread 0. blockDim.x must be a multiple of 32 (at most 1024);
// every thread of the block must call it. It may be called repeatedly: it
// synchronises before it reuses its shared slots.
template <typename V, typename C>
__device__ V block_reduce(V v, C combine) {
	__shared__ V lanes[32];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	v = warp_reduce(v, combine);
	__syncthreads(); // a previous call's readers are done with lanes
	if (lane == 0) lanes[warp] = v;
	__syncthreads();
	int nwarps = blockDim.x >> 5;
	if (warp == 0) {
		V w = lanes[lane < nwarps ? lane : 0];
		// Lanes past the last warp repeat warp 0's value; they are masked
		// out by combining only the first nwarps.
		for (int d = 16; d > 0; d >>= 1) {
			V o = shfl_down(w, d);
			if (lane + d < nwarps) w = combine(w, o);
		}
		v = w;
	}
	return v;
}

// block_broadcast gives every thread thread 0's value. Every thread of the
// block must call it.
template <typename V>
__device__ V block_broadcast(V v) {
	__shared__ V slot;
	__syncthreads();
	if (threadIdx.x == 0) slot = v;
	__syncthreads();
	return slot;
}

// The dtype suffixes of entry points, and the macros that instantiate a
// family's templates once per dtype.
#define LATHE_FLOATS(X) X(float, f32) X(double, f64)
#define LATHE_INTS(X) X(i32, i32) X(i64, i64)
#define LATHE_NUMERIC(X) LATHE_FLOATS(X) LATHE_INTS(X)
#define LATHE_ALL(X) LATHE_NUMERIC(X) X(u8, bool)
