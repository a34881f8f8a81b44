// unary.cuh: the unary ops, one function object each, the kernels' two
// templates and the macros that instantiate them per dtype. unary.cu
// instantiates the numeric ops and the float ones, trig.cu the
// trigonometric and hyperbolic functions, and unary_f16.cu, unary_bf16.cu,
// trig_f16.cu and trig_bf16.cu the same for float16 and bfloat16, which
// compute in float32 (half.cuh): six modules, so that each PTX file stays
// small and a program JIT-compiles only the dtypes it uses (backends/cuda
// picks the module by op and dtype: unaryModule, moduleOf).
// The semantics are those of lathe's cpu kernels
// (backends/cpu/elementwise.go); where they differ, the comment says so.
// Launch contract: elementwise.cu's (a 1-D grid-stride loop over n; the
// contiguous form "<op>_<dtype>" (n < 2^31), 16 bytes per access where out and x are
// 16-byte aligned (dense.cuh); the strided "<op>_strided_<dtype>" with a Layout,
// and "<op>_strided32_<dtype>" with a Layout32, whose operand 0 is out and
// 1 is x).
#pragma once
#include "dense.cuh"

// ---- Unary ops. Each is a function object with one call per dtype family,
// called on the compute type (half.cuh's Storage: float for the 16-bit
// floats); a and b are the op's scalar parameters (leaky_relu's slope; clamp's
// bounds, +-inf where there is none), 0 for the others.

struct Neg {
	template <typename T> __device__ T operator()(T x, double, double) const { return -x; }
	__device__ i32 operator()(i32 x, double, double) const { return wrap_sub(0, x); }
	__device__ i64 operator()(i64 x, double, double) const { return wrap_sub(0LL, x); }
};
struct Abs {
	__device__ float operator()(float x, double, double) const { return m_abs(x); }
	__device__ double operator()(double x, double, double) const { return m_abs(x); }
	// |INT_MIN| wraps to INT_MIN, as max(x, -x) does in Go.
	template <typename T> __device__ T operator()(T x, double, double) const { return x < 0 ? wrap_sub((T)0, x) : x; }
};
struct Sign {
	// +0 for +-0 and for NaN, as lathe's cpu kernel gives.
	template <typename T> __device__ T operator()(T x, double, double) const { return x > 0 ? (T)1 : x < 0 ? (T)-1 : (T)0; }
};
struct Square {
	__device__ float operator()(float x, double, double) const { return x * x; }
	__device__ double operator()(double x, double, double) const { return x * x; }
	template <typename T> __device__ T operator()(T x, double, double) const { return wrap_mul(x, x); }
};
struct Relu {
	// NaN passes through.
	template <typename T> __device__ T operator()(T x, double, double) const { return (x > 0 || is_nan(x)) ? x : (T)0; }
};
// floor, ceil and round are the identity on integers.
struct Floor {
	__device__ float operator()(float x, double, double) const { return m_floor(x); }
	__device__ double operator()(double x, double, double) const { return m_floor(x); }
	template <typename T> __device__ T operator()(T x, double, double) const { return x; }
};
struct Ceil {
	__device__ float operator()(float x, double, double) const { return m_ceil(x); }
	__device__ double operator()(double x, double, double) const { return m_ceil(x); }
	template <typename T> __device__ T operator()(T x, double, double) const { return x; }
};
struct Round {
	__device__ float operator()(float x, double, double) const { return m_rint(x); }
	__device__ double operator()(double x, double, double) const { return m_rint(x); }
	template <typename T> __device__ T operator()(T x, double, double) const { return x; }
};
struct Clamp {
	// Floats: NaN stays NaN, then min(max(x, lo), hi) in float64 and
	// rounded, as the cpu kernel computes it.
	template <typename F> __device__ F flt(F x, double lo, double hi) const {
		if (is_nan(x)) return x;
		double v = (double)x;
		v = v < lo ? lo : v;
		v = v > hi ? hi : v;
		return (F)v;
	}
	__device__ float operator()(float x, double lo, double hi) const { return flt(x, lo, hi); }
	__device__ double operator()(double x, double lo, double hi) const { return flt(x, lo, hi); }
	// Integers: a bound between integers clamps to the nearest integer
	// inside it (ceil of lo, floor of hi), as the cpu kernel does.
	template <typename T> __device__ T operator()(T x, double lo, double hi) const {
		double v = (double)x;
		if (v < lo) return (T)ceil(lo);
		if (v > hi) return (T)floor(hi);
		return x;
	}
};
struct LeakyRelu {
	// x * slope in float64, rounded, as the cpu kernel computes it.
	template <typename F> __device__ F operator()(F x, double slope, double) const { return x > 0 ? x : (F)((double)x * slope); }
};

// The float-only ops, each a formula over the per-dtype math overloads.
#define LATHE_FLOAT_UNARY(Name, expr) \
	struct Name {                 \
		template <typename F> __device__ F operator()(F x, double, double) const { return expr; } \
	};
LATHE_FLOAT_UNARY(Exp, m_exp(x))
LATHE_FLOAT_UNARY(Log, m_log(x))
LATHE_FLOAT_UNARY(Log1p, m_log1p(x))
LATHE_FLOAT_UNARY(Expm1, m_expm1(x))
LATHE_FLOAT_UNARY(Sqrt, m_sqrt(x))
// 1/sqrt(x), not the approximate rsqrt instruction: the cpu kernel and
// PyTorch's reference divide.
LATHE_FLOAT_UNARY(Rsqrt, (F)1 / m_sqrt(x))
LATHE_FLOAT_UNARY(Reciprocal, (F)1 / x)
LATHE_FLOAT_UNARY(Sin, m_sin(x))
LATHE_FLOAT_UNARY(Cos, m_cos(x))
LATHE_FLOAT_UNARY(Tanh, m_tanh(x))
LATHE_FLOAT_UNARY(Erf, m_erf(x))
LATHE_FLOAT_UNARY(Erfc, m_erfc(x))
// The inverse and hyperbolic trigonometric functions, NaN outside their
// domains as the C library's (and torch's).
LATHE_FLOAT_UNARY(Tan, m_tan(x))
LATHE_FLOAT_UNARY(Asin, m_asin(x))
LATHE_FLOAT_UNARY(Acos, m_acos(x))
LATHE_FLOAT_UNARY(Atan, m_atan(x))
LATHE_FLOAT_UNARY(Sinh, m_sinh(x))
LATHE_FLOAT_UNARY(Cosh, m_cosh(x))
LATHE_FLOAT_UNARY(Asinh, m_asinh(x))
LATHE_FLOAT_UNARY(Acosh, m_acosh(x))
LATHE_FLOAT_UNARY(Atanh, m_atanh(x))
#undef LATHE_FLOAT_UNARY

// sigmoid, evaluated so that exp never overflows.
template <typename F> __device__ __forceinline__ F sigmoid(F x) {
	if (x >= 0) return (F)1 / ((F)1 + m_exp(-x));
	F e = m_exp(x);
	return e / ((F)1 + e);
}
struct Sigmoid {
	template <typename F> __device__ F operator()(F x, double, double) const { return sigmoid(x); }
};
struct Silu {
	template <typename F> __device__ F operator()(F x, double, double) const { return x * sigmoid(x); }
};
// gelu(x) = x * Phi(x), Phi the standard normal CDF (torch.nn.functional.gelu).
struct Gelu {
	template <typename F> __device__ F operator()(F x, double, double) const {
		const F rsqrt2 = (F)0.70710678118654752440;
		return (F)0.5 * x * ((F)1 + m_erf(x * rsqrt2));
	}
};
// gelu with approximate="tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct GeluTanh {
	template <typename F> __device__ F operator()(F x, double, double) const {
		const F c = (F)0.7978845608028654;
		return (F)0.5 * x * ((F)1 + m_tanh(c * (x + (F)0.044715 * x * x * x)));
	}
};
// softplus(x; beta = a, threshold = b): log1p(exp(beta x))/beta, and x
// where beta x > threshold (torch.nn.functional.softplus).
struct Softplus {
	template <typename F> __device__ F operator()(F x, double a, double b) const {
		F beta = (F)a, bx = x * beta;
		return bx > (F)b ? x : m_log1p(m_exp(bx)) / beta;
	}
};

// Unary is op with its scalar parameters bound, as dense_map and
// computed call it: on T's compute type (half.cuh's Storage), so that a
// 16-bit float runs the float32 op.
template <typename T, typename Op> struct Unary {
	typedef typename Storage<T>::compute C;
	Op op;
	double a, b;
	__device__ __forceinline__ C operator()(C x) const { return op(x, a, b); }
};

// Contract: see the file comment. n elements; a, b as above.
template <typename T, typename Op>
__device__ void unary_contig(T *__restrict__ out, const T *__restrict__ x, i64 n, double a, double b) {
	dense_map<Width<T>::value>(out, n, Unary<T, Op>{Op(), a, b}, Operand<T, Width<T>::value>(x, n));
}

// unary_strided is the strided and strided32 forms (L a Layout or a
// Layout32, I its index type).
template <typename T, typename Op, typename L, typename I>
__device__ void unary_strided(T *out, const T *x, I n, const L &layout, double a, double b) {
	Unary<T, Op> f{Op(), a, b};
	for_each_strided<2>(layout, n, [&](const I *off) { out[off[0]] = computed<T>(f, x[off[1]]); });
}

#define LATHE_UNARY(T, sfx, name, Op)                                                                       \
	extern "C" __global__ void name##_##sfx(T *__restrict__ out, const T *__restrict__ x, i64 n, double a, double b) { \
		unary_contig<T, Op>(out, x, n, a, b);                                                       \
	}                                                                                                   \
	extern "C" __global__ void name##_strided_##sfx(T *out, const T *x, i64 n, Layout L, double a, double b) { \
		unary_strided<T, Op>(out, x, n, L, a, b);                                                   \
	}                                                                                                   \
	extern "C" __global__ void name##_strided32_##sfx(T *out, const T *x, i32 n, Layout32 L, double a, double b) { \
		unary_strided<T, Op>(out, x, n, L, a, b);                                                 \
	}

// The ops every numeric dtype has, the float-only ones (unary.cu), and the
// trigonometric and hyperbolic ones (trig.cu).
#define LATHE_NUMERIC_UNARY(T, sfx)                 \
	LATHE_UNARY(T, sfx, neg, Neg)               \
	LATHE_UNARY(T, sfx, abs, Abs)               \
	LATHE_UNARY(T, sfx, sign, Sign)             \
	LATHE_UNARY(T, sfx, square, Square)         \
	LATHE_UNARY(T, sfx, relu, Relu)             \
	LATHE_UNARY(T, sfx, floor, Floor)           \
	LATHE_UNARY(T, sfx, ceil, Ceil)             \
	LATHE_UNARY(T, sfx, round, Round)           \
	LATHE_UNARY(T, sfx, clamp, Clamp)
#define LATHE_FLOAT_UNARIES(T, sfx)                 \
	LATHE_UNARY(T, sfx, exp, Exp)               \
	LATHE_UNARY(T, sfx, log, Log)               \
	LATHE_UNARY(T, sfx, log1p, Log1p)           \
	LATHE_UNARY(T, sfx, expm1, Expm1)           \
	LATHE_UNARY(T, sfx, sqrt, Sqrt)             \
	LATHE_UNARY(T, sfx, rsqrt, Rsqrt)           \
	LATHE_UNARY(T, sfx, reciprocal, Reciprocal) \
	LATHE_UNARY(T, sfx, sigmoid, Sigmoid)       \
	LATHE_UNARY(T, sfx, leaky_relu, LeakyRelu)  \
	LATHE_UNARY(T, sfx, gelu, Gelu)             \
	LATHE_UNARY(T, sfx, gelu_tanh, GeluTanh)    \
	LATHE_UNARY(T, sfx, silu, Silu)             \
	LATHE_UNARY(T, sfx, softplus, Softplus)     \
	LATHE_UNARY(T, sfx, erf, Erf)               \
	LATHE_UNARY(T, sfx, erfc, Erfc)
#define LATHE_TRIG_UNARIES(T, sfx)        \
	LATHE_UNARY(T, sfx, sin, Sin)     \
	LATHE_UNARY(T, sfx, cos, Cos)     \
	LATHE_UNARY(T, sfx, tanh, Tanh)   \
	LATHE_UNARY(T, sfx, tan, Tan)     \
	LATHE_UNARY(T, sfx, asin, Asin)   \
	LATHE_UNARY(T, sfx, acos, Acos)   \
	LATHE_UNARY(T, sfx, atan, Atan)   \
	LATHE_UNARY(T, sfx, sinh, Sinh)   \
	LATHE_UNARY(T, sfx, cosh, Cosh)   \
	LATHE_UNARY(T, sfx, asinh, Asinh) \
	LATHE_UNARY(T, sfx, acosh, Acosh) \
	LATHE_UNARY(T, sfx, atanh, Atanh)
