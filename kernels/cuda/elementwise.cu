// elementwise.cu: casts and copies, and fill (the unary ops are unary.cu's
// and trig.cu's, from unary.cuh; the binary ops, where and the logical ops
// are binary.cu's). One template per family, instantiated per dtype. The semantics are those of lathe's cpu
// kernels (backends/cpu/elementwise.go, cast.go); where they differ, the
// comment says so.
//
// Launch contract of every kernel in this file: a 1-D grid of 1-D blocks
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

template <typename From, typename To>
__device__ void cast_contig(To *__restrict__ out, const From *__restrict__ x, i64 n) {
	const int N = Width<typename Wider<From, To>::type>::value;
	dense_map<N>(out, n, Convert<To>(), Operand<From, N>(x, n));
}

template <typename From, typename To>
__device__ void cast_strided(To *out, const From *x, i64 n, const Layout &L) {
	Convert<To> cv;
	LATHE_FOR(i, n) {
		i64 off[2];
		offsets_of<2>(L, i, off);
		out[off[0]] = cv(x[off[1]]);
	}
}

template <typename From, typename To>
__device__ void cast_strided32(To *out, const From *x, i32 n, const Layout32 &L) {
	Convert<To> cv;
	LATHE_FOR32(i, n) {
		i32 off[2];
		offsets32_of<2>(L, i, off);
		out[off[0]] = cv(x[off[1]]);
	}
}

#define LATHE_CAST(From, fs, To, ts)                                                                       \
	extern "C" __global__ void cast_##fs##_##ts(To *__restrict__ out, const From *__restrict__ x, i64 n) { \
		cast_contig<From, To>(out, x, n);                                                          \
	}                                                                                                  \
	extern "C" __global__ void cast_strided_##fs##_##ts(To *out, const From *x, i64 n, Layout L) {    \
		cast_strided<From, To>(out, x, n, L);                                                      \
	}                                                                                                  \
	extern "C" __global__ void cast_strided32_##fs##_##ts(To *out, const From *x, i32 n, Layout32 L) { \
		cast_strided32<From, To>(out, x, n, L);                                                    \
	}
#define LATHE_CAST_FROM(From, fs)               \
	LATHE_CAST(From, fs, float, f32)        \
	LATHE_CAST(From, fs, double, f64)       \
	LATHE_CAST(From, fs, i32, i32)          \
	LATHE_CAST(From, fs, i64, i64)          \
	LATHE_CAST(From, fs, u8, bool)
LATHE_ALL(LATHE_CAST_FROM)

// ---- fill_<dtype>: out[0, n) (contiguous) = v, given as float64 (the host
// has checked that the dtype holds it exactly). Any grid; 16-byte stores
// where out is 16-byte aligned.

// Constant is a fill's value, as dense_map calls it (no operands).
template <typename T> struct Constant {
	T t;
	__device__ __forceinline__ T operator()() const { return t; }
};

template <typename T>
__device__ void fill(T *__restrict__ out, i64 n, double v) {
	Convert<T> cv;
	dense_map<Width<T>::value>(out, n, Constant<T>{cv(v)});
}

#define LATHE_FILL(T, sfx) \
	extern "C" __global__ void fill_##sfx(T *out, i64 n, double v) { fill<T>(out, n, v); }
LATHE_ALL(LATHE_FILL)
