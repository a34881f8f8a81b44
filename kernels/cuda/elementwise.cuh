// elementwise.cuh: casts and copies, and fill (the unary ops are
// unary.cuh's; the binary ops and where binary.cuh's): one template per
// family and the macros that instantiate it per dtype. elementwise.cu
// instantiates the casts between the wide dtypes and every dtype's fill,
// elementwise_half.cu the casts from and to float16 and bfloat16, so that
// a program that uses no 16-bit float never JIT-compiles them
// (backends/cuda picks the module by dtype: moduleOf). The semantics are
// those of lathe's cpu kernels (backends/cpu/elementwise.go, cast.go);
// where they differ, the comment says so.
//
// Launch contract of every kernel from these templates: a 1-D grid of 1-D blocks
// (the host uses 256 threads and caps the grid; any shape works, as every
// loop is grid-stride over the n output elements). n >= 0. The contiguous
// forms ("<op>_<dtype>") need n < 2^31 and out and the inputs contiguous
// and of the output's shape, and move a vector of 16 bytes of the wider type per
// access where every pointer is aligned to its vector (dense.cuh's
// dense_map); the strided forms
// ("<op>_strided_<dtype>") take a Layout whose operand 0 is out and whose
// operands 1.. are the inputs, broadcast to out's shape (stride 0), and
// "<op>_strided32_<dtype>" the same walk as a Layout32, for n and offsets
// below 2^31. Pointers need only the dtype's natural alignment.
#pragma once
#include "dense.cuh"

// ---- Casts and copies: cast_<from>_<to>. Float to integer truncates toward
// zero, nonzero is true, true is 1 (PyTorch's conversions). A float that
// truncates outside the integer's range, or NaN, gives the most negative
// integer, as the cpu backend and torch on x86 (cvttss2si) do. Neither
// plain C++ conversion gives that here: on the GPU, (int)f compiles to PTX's
// cvt.rzi.s32.f32 (cvt.rzi.s64.f64 ...), which saturates (3e9 to
// 2147483647, -Inf to the most negative, NaN to 0), while the host
// emulation's C++ conversion of such a value is undefined (x86 happens to
// give the cpu's value); so Convert tests the range itself and converts
// only what fits. cast_<t>_<t> is the strided copy that contiguous, flip,
// concat and pad are made of. The contiguous form "cast_<from>_<to>" needs
// both contiguous; "cast_strided_<from>_<to>" walks a Layout of out, x.
// Every pair of dtypes has its casts but those with int8 or uint8, which
// the host computes in int32 through narrow.cu's conversions.

template <typename To> struct Convert {
	template <typename From> __device__ To operator()(From v) const { return (To)v; }
};
template <> struct Convert<u8> {
	template <typename From> __device__ u8 operator()(From v) const { return v != 0 ? 1 : 0; }
};
// A float converts to i32 or i64 only where it truncates into the range,
// lo - 1 < v < hi + 1, tested in double, where those bounds are exact
// (-2^31 - 1 and 2^31; for i64, -2^63 ≤ v < 2^63: -2^63 - 1 is not a
// double, and every double above -2^63 truncates into the range). NaN
// fails the test.
template <> struct Convert<i32> {
	template <typename From> __device__ i32 operator()(From v) const { return (i32)v; }
	__device__ i32 operator()(float v) const { return (*this)((double)v); }
	__device__ i32 operator()(double v) const {
		return v > -2147483649.0 && v < 2147483648.0 ? (i32)v : -2147483647 - 1;
	}
};
template <> struct Convert<i64> {
	template <typename From> __device__ i64 operator()(From v) const { return (i64)v; }
	__device__ i64 operator()(float v) const { return (*this)((double)v); }
	__device__ i64 operator()(double v) const {
		return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (i64)v : -9223372036854775807LL - 1;
	}
};

// A cast converts between the compute types (half.cuh's Storage): a
// 16-bit float is read as the float32 it is exactly and written as the
// float32 result rounded once, so float64 to float16 rounds twice (to
// float32, then to float16) as the float32 path does. A cast of a 16-bit
// float to its own dtype (contiguous, flip, concat, pad) moves its bits
// instead (Moved): the round trip through float32 gives every value back
// but a signalling NaN, which it quiets, and torch's copies keep it.
template <typename From, typename To> struct Moved {
	typedef From from;
	typedef To to;
};
template <> struct Moved<f16, f16> {
	typedef u16 from;
	typedef u16 to;
};
template <> struct Moved<bf16, bf16> {
	typedef u16 from;
	typedef u16 to;
};

template <typename From, typename To>
__device__ void cast_contig(To *__restrict__ out, const From *__restrict__ x, i64 n) {
	typedef typename Moved<From, To>::from F;
	typedef typename Moved<From, To>::to T;
	const int N = Width<typename Wider<F, T>::type>::value;
	dense_map<N>((T *)out, n, Convert<typename Storage<T>::compute>(), Operand<F, N>((const F *)x, n));
}

// cast_strided is the strided and strided32 forms (L a Layout or a
// Layout32, I its index type).
template <typename From, typename To, typename L, typename I>
__device__ void cast_strided(To *out_, const From *x_, I n, const L &layout) {
	typedef typename Moved<From, To>::from F;
	typedef typename Moved<From, To>::to T;
	T *out = (T *)out_;
	const F *x = (const F *)x_;
	Convert<typename Storage<T>::compute> cv;
	for_each_strided<2>(layout, n, [&](const I *off) { out[off[0]] = computed<T>(cv, x[off[1]]); });
}

#define LATHE_CAST(From, fs, To, ts)                                                                       \
	extern "C" __global__ void cast_##fs##_##ts(To *__restrict__ out, const From *__restrict__ x, i64 n) { \
		cast_contig<From, To>(out, x, n);                                                          \
	}                                                                                                  \
	extern "C" __global__ void cast_strided_##fs##_##ts(To *out, const From *x, i64 n, Layout L) {    \
		cast_strided<From, To>(out, x, n, L);                                                      \
	}                                                                                                  \
	extern "C" __global__ void cast_strided32_##fs##_##ts(To *out, const From *x, i32 n, Layout32 L) { \
		cast_strided<From, To>(out, x, n, L);                                                    \
	}
// The casts from From to the wide dtypes, and to the 16-bit floats.
#define LATHE_CAST_FROM(From, fs)               \
	LATHE_CAST(From, fs, float, f32)        \
	LATHE_CAST(From, fs, double, f64)       \
	LATHE_CAST(From, fs, i32, i32)          \
	LATHE_CAST(From, fs, i64, i64)          \
	LATHE_CAST(From, fs, u8, bool)
#define LATHE_CAST_TO_HALVES(From, fs)          \
	LATHE_CAST(From, fs, f16, f16)          \
	LATHE_CAST(From, fs, bf16, bf16)

// ---- fill_<dtype>: out[0, n) (contiguous) = v, given as float64 (the host
// has checked that the dtype holds it exactly). Any grid; 16-byte stores
// where out is 16-byte aligned. Every dtype's is elementwise.cu's, the
// 16-bit floats' too (two small entries), so that backends/cuda's fill
// finds them all in one module; pad, its caller, fills with these and then
// copies x's bits in (cast_<t>_<t>, a move: Moved).

// Constant is a fill's value in its compute type, as dense_map calls it
// (no operands).
template <typename C> struct Constant {
	C c;
	__device__ __forceinline__ C operator()() const { return c; }
};

template <typename T>
__device__ void fill(T *__restrict__ out, i64 n, double v) {
	typedef typename Storage<T>::compute C;
	Convert<C> cv;
	dense_map<Width<T>::value>(out, n, Constant<C>{cv(v)});
}

#define LATHE_FILL(T, sfx) \
	extern "C" __global__ void fill_##sfx(T *out, i64 n, double v) { fill<T>(out, n, v); }
