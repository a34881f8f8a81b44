// binary.cuh: the binary ops and where: a function object per op, the
// kernels' templates and the macros that instantiate them per dtype.
// binary.cu instantiates them for the wide dtypes (and has the logical
// ops), binary_f16.cu and binary_bf16.cu for float16 and bfloat16, which
// compute in float32 (half.cuh): three modules, so that each PTX file
// stays small and a program JIT-compiles only the dtypes it uses
// (backends/cuda picks the module by dtype: moduleOf). The semantics are
// those of lathe's cpu kernels (backends/cpu/binary.go, elementwise.go);
// where they differ, the comment says so. (The unary ops are unary.cuh's,
// casts and fill elementwise.cuh's: a module each keeps every PTX file
// under ptxas's and the repository's comfortable sizes.)
//
// Launch contract of every kernel from these templates: a 1-D grid of 1-D blocks
// (the host uses 256 threads and caps the grid; any shape works, as every
// loop is grid-stride over the n output elements). n >= 0. The dense forms
// ("<op>_<dtype>", dense.cuh's dense_map) need n < 2^31, out contiguous and
// each input contiguous with a period p (1 <= p <= n, p dividing n): input k's
// element for out[i] is at i mod p_k, so p = n is an input of out's shape,
// p = 1 a single element, and p = the size of out's trailing dims a row
// broadcast along the leading ones (a bias); they move a vector of 16
// bytes of the wider type per access where out and the inputs are aligned
// to their vectors (a single element need not be) and each p is 1, n or a
// multiple of the vector's elements, and one element at a time otherwise. The strided forms ("<op>_strided_<dtype>") take a
// Layout whose operand 0 is out and whose operands 1.. are the inputs,
// broadcast to out's shape (stride 0); "<op>_strided32_<dtype>" the same
// walk as a Layout32, for n and offsets below 2^31. Pointers need only the
// dtype's natural alignment. out may be an input exactly, never overlap one
// partially.
#pragma once
#include "dense.cuh"

// ---- Binary ops: R op(C a, C b), C the operands' compute type (half.cuh's
// Storage: float for the 16-bit floats, the dtype itself otherwise), R
// being C or bool (u8).

struct Add {
	template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
	__device__ i32 operator()(i32 a, i32 b) const { return wrap_add(a, b); }
	__device__ i64 operator()(i64 a, i64 b) const { return wrap_add(a, b); }
};
struct Sub {
	template <typename T> __device__ T operator()(T a, T b) const { return a - b; }
	__device__ i32 operator()(i32 a, i32 b) const { return wrap_sub(a, b); }
	__device__ i64 operator()(i64 a, i64 b) const { return wrap_sub(a, b); }
};
struct Mul {
	template <typename T> __device__ T operator()(T a, T b) const { return a * b; }
	__device__ i32 operator()(i32 a, i32 b) const { return wrap_mul(a, b); }
	__device__ i64 operator()(i64 a, i64 b) const { return wrap_mul(a, b); }
};
struct Div {
	template <typename T> __device__ T operator()(T a, T b) const { return a / b; }
};
// maximum and minimum propagate NaN from either side, as torch.maximum.
struct Maximum {
	template <typename T> __device__ T operator()(T a, T b) const { return (is_nan(a) || a > b) ? a : b; }
};
struct Minimum {
	template <typename T> __device__ T operator()(T a, T b) const { return (is_nan(a) || a < b) ? a : b; }
};
struct Atan2 {
	template <typename F> __device__ F operator()(F a, F b) const { return m_atan2(a, b); }
};
// fmod is C's (exact; the sign of a), and remainder torch.remainder's rule
// on it (ATen's BinaryOpsKernel.cpp): a nonzero remainder whose sign is not
// b's moves by b, so the result takes b's sign. An integer zero divisor is
// refused before the launch (dispatch's value check); the kernel gives 0
// for it, and for the least integer over -1, rather than trap.
struct FMod {
	__device__ float operator()(float a, float b) const { return fmodf(a, b); }
	__device__ double operator()(double a, double b) const { return fmod(a, b); }
	template <typename T> __device__ T operator()(T a, T b) const { return (b == 0 || b == -1) ? (T)0 : (T)(a % b); }
};
struct Remainder {
	template <typename T> __device__ T operator()(T a, T b) const {
		T m = FMod()(a, b);
		return (m != 0 && ((b < 0) != (m < 0))) ? (T)(m + b) : m;
	}
};
// The integer ops, as the cpu's (backends/cpu/binary.go): the bitwise
// ops; the shifts, whose count is taken mod the width as x86's (a left
// shift in the unsigned type, where C++ defines it; >> of a signed
// integer is arithmetic in CUDA); floor division, Python's //, wrapping
// the least integer over -1 (a trap in C++); gcd, torch's calc_gcd, whose
// steps are bounded (93 finish any int64 pair) so that no input can hang
// a kernel. A zero divisor is refused before the launch (0 here).
struct BitwiseAnd {
	template <typename T> __device__ T operator()(T a, T b) const { return a & b; }
};
struct BitwiseOr {
	template <typename T> __device__ T operator()(T a, T b) const { return a | b; }
};
struct BitwiseXor {
	template <typename T> __device__ T operator()(T a, T b) const { return a ^ b; }
};
struct ShiftLeft {
	template <typename T> __device__ T operator()(T a, T b) const {
		typedef typename Unsigned<T>::type U;
		return (T)((U)a << (b & (T)(8 * sizeof(T) - 1)));
	}
};
struct ShiftRight {
	template <typename T> __device__ T operator()(T a, T b) const { return a >> (b & (T)(8 * sizeof(T) - 1)); }
};
struct FloorDivide {
	template <typename T> __device__ T operator()(T a, T b) const {
		if (b == 0) return 0;
		if (b == -1) return wrap_sub((T)0, a);
		T q = a / b, r = a - q * b;
		return (r != 0 && ((r < 0) != (b < 0))) ? (T)(q - 1) : q;
	}
};
struct Gcd {
	template <typename T> __device__ T operator()(T a, T b) const {
		if (a < 0) a = wrap_sub((T)0, a); // the least integer stays itself
		if (b < 0) b = wrap_sub((T)0, b);
		for (int i = 0; i < 100 && a != 0; i++) {
			T c = a;
			a = FMod()(b, a);
			b = c;
		}
		return b;
	}
};
struct Pow {
	__device__ float operator()(float a, float b) const { return m_pow(a, b); }
	__device__ double operator()(double a, double b) const { return m_pow(a, b); }
	// Integer power by squaring, wrapping. A negative exponent is an
	// ErrValue on the cpu backend, which reads the data first; a kernel
	// cannot return an error, so it gives what PyTorch's integer pow gives
	// for one: 1 for a base of 1, +-1 for -1, and 0 otherwise.
	template <typename T> __device__ T operator()(T a, T b) const {
		if (b < 0) {
			if (a == 1) return 1;
			if (a == -1) return (b & 1) ? (T)-1 : (T)1;
			return 0;
		}
		T r = 1;
		while (b > 0) {
			if (b & 1) r = wrap_mul(r, a);
			a = wrap_mul(a, a);
			b >>= 1;
		}
		return r;
	}
};
// pow_scalar is pow with an exponent of one element, as torch's pow with a
// scalar exponent (and the cpu's, backends/cpu/binary.go): 2, 3, -2, -1,
// 0.5 and -0.5 are x*x, x*x*x, 1/(x*x), 1/x, sqrt(x) and 1/sqrt(x), so
// that -0 and -Inf to the 0.5 are -0 and NaN (C's pow gives +0 and +Inf).
// The host launches it where the exponent has one element.
struct PowScalar {
	template <typename F> __device__ F operator()(F a, F b) const {
		if (b == (F)2) return a * a;
		if (b == (F)3) return a * a * a;
		if (b == (F)-2) return (F)1 / (a * a);
		if (b == (F)-1) return (F)1 / a;
		if (b == (F)0.5) return m_sqrt(a);
		if (b == (F)-0.5) return (F)1 / m_sqrt(a);
		return Pow()(a, b);
	}
};
// The activations' backward ops, g * f'(x) (derivatives.yaml's
// gelu_backward, approximate "none" and "tanh", and silu_backward), as the
// cpu's (backends/cpu/activation_backward.go): gelu' = Phi(x) + x phi(x);
// with u = k(x + c x^3) and t = tanh(u), gelu_tanh' = (1 + t)/2 + x/2 (1 -
// t^2) k(1 + 3c x^2), taken as p + 2x p q k(1 + 3c x^2) with p = (1 + t)/2 =
// sigmoid(2u) and q = (1 - t)/2 = sigmoid(-2u), since 1 + t loses digits
// where t nears -1; silu' = s(1 + x(1 - s)), s = sigmoid(x).
struct GeluBackward {
	template <typename F> __device__ F operator()(F g, F x) const {
		const F rsqrt2 = (F)0.70710678118654752440, rsqrt2pi = (F)0.39894228040143267794;
		F cdf = (F)0.5 * ((F)1 + m_erf(x * rsqrt2));
		F pdf = m_exp((F)-0.5 * x * x) * rsqrt2pi;
		return g * (cdf + x * pdf);
	}
};
// sigmoids sets p = sigmoid(w) and q = sigmoid(-w), both from exp(-|w|), so
// that neither loses digits where the other nears 1.
template <typename F> __device__ __forceinline__ void sigmoids(F w, F &p, F &q) {
	F e = m_exp(-m_abs(w)), big = (F)1 / ((F)1 + e), small = e / ((F)1 + e);
	p = w < 0 ? small : big;
	q = w < 0 ? big : small;
}
struct GeluTanhBackward {
	template <typename F> __device__ F operator()(F g, F x) const {
		const F k = (F)0.7978845608028654, c = (F)0.044715;
		F x2 = x * x, p, q;
		sigmoids((F)2 * k * (x + c * x2 * x), p, q);
		// p q is 0 once |x| is large, where x (1 + 3c x^2) can overflow:
		// the term is then 0, not 0 * inf (NaN).
		F pq = p * q;
		return g * (pq == (F)0 ? p : p + (F)2 * x * pq * k * ((F)1 + (F)3 * c * x2));
	}
};
struct ReluBackward { // 0 where x <= 0, else g (a NaN x passes g on), relu's gradient
	template <typename F> __device__ F operator()(F g, F x) const { return x <= (F)0 ? (F)0 : g; }
};
struct SiluBackward {
	template <typename F> __device__ F operator()(F g, F x) const {
		F s, r;
		sigmoids(x, s, r);
		return g * s * ((F)1 + x * r);
	}
};

#define LATHE_COMPARE(Name, op) \
	struct Name {           \
		template <typename T> __device__ u8 operator()(T a, T b) const { return (a op b) ? 1 : 0; } \
	};
LATHE_COMPARE(Eq, ==)
LATHE_COMPARE(Ne, !=)
LATHE_COMPARE(Lt, <)
LATHE_COMPARE(Le, <=)
LATHE_COMPARE(Gt, >)
LATHE_COMPARE(Ge, >=)
#undef LATHE_COMPARE

template <typename T, typename R, typename Op>
__device__ void binary_contig(R *__restrict__ out, const T *__restrict__ x, const T *__restrict__ y, i64 n, i64 px, i64 py) {
	const int N = Width<typename Wider<T, R>::type>::value;
	dense_map<N>(out, n, Op(), Operand<T, N>(x, px), Operand<T, N>(y, py));
}

// binary_strided is the strided and strided32 forms (L a Layout or a
// Layout32, I its index type).
template <typename T, typename R, typename Op, typename L, typename I>
__device__ void binary_strided(R *out, const T *x, const T *y, I n, const L &layout) {
	Op op;
	for_each_strided<3>(layout, n, [&](const I *off) { out[off[0]] = computed<R>(op, x[off[1]], y[off[2]]); });
}

#define LATHE_BINARY(T, R, sfx, name, Op)                                                                        \
	extern "C" __global__ void name##_##sfx(R *__restrict__ out, const T *__restrict__ x, const T *__restrict__ y, \
	                                        i64 n, i64 px, i64 py) {                                         \
		binary_contig<T, R, Op>(out, x, y, n, px, py);                                                   \
	}                                                                                                        \
	extern "C" __global__ void name##_strided_##sfx(R *out, const T *x, const T *y, i64 n, Layout L) {      \
		binary_strided<T, R, Op>(out, x, y, n, L);                                                       \
	}                                                                                                        \
	extern "C" __global__ void name##_strided32_##sfx(R *out, const T *x, const T *y, i32 n, Layout32 L) {  \
		binary_strided<T, R, Op>(out, x, y, n, L);                                                     \
	}

// ---- add_scaled (ops.AddScaled): a + alpha * b, the product and the sum
// rounded once (fma), alpha rounded to the compute type first; the binary
// ops' three forms and contract, with alpha after the rest.
template <typename C> struct AddScaled {
	C alpha;
	__device__ __forceinline__ C operator()(C a, C b) const { return m_fma(alpha, b, a); }
};

template <typename T, typename L, typename I>
__device__ void add_scaled_strided(T *out, const T *x, const T *y, I n, const L &layout, double alpha) {
	typedef typename Storage<T>::compute C;
	AddScaled<C> f{(C)alpha};
	for_each_strided<3>(layout, n, [&](const I *off) { out[off[0]] = computed<T>(f, x[off[1]], y[off[2]]); });
}

#define LATHE_ADD_SCALED(T, sfx)                                                                                  \
	extern "C" __global__ void add_scaled_##sfx(T *__restrict__ out, const T *__restrict__ x,                  \
	                                            const T *__restrict__ y, i64 n, i64 px, i64 py, double alpha) { \
		typedef typename Storage<T>::compute C;                                                         \
		const int N = Width<T>::value;                                                                  \
		dense_map<N>(out, n, AddScaled<C>{(C)alpha}, Operand<T, N>(x, px), Operand<T, N>(y, py));        \
	}                                                                                                       \
	extern "C" __global__ void add_scaled_strided_##sfx(T *out, const T *x, const T *y, i64 n, Layout L,      \
	                                                    double alpha) {                                     \
		add_scaled_strided<T>(out, x, y, n, L, alpha);                                                  \
	}                                                                                                       \
	extern "C" __global__ void add_scaled_strided32_##sfx(T *out, const T *x, const T *y, i32 n, Layout32 L, \
	                                                      double alpha) {                                   \
		add_scaled_strided<T>(out, x, y, n, L, alpha);                                                  \
	}

#define LATHE_ARITH(T, sfx)                        \
	LATHE_BINARY(T, T, sfx, add, Add)          \
	LATHE_BINARY(T, T, sfx, sub, Sub)          \
	LATHE_BINARY(T, T, sfx, mul, Mul)          \
	LATHE_BINARY(T, T, sfx, pow, Pow)          \
	LATHE_BINARY(T, T, sfx, fmod, FMod)        \
	LATHE_BINARY(T, T, sfx, remainder, Remainder) \
	LATHE_BINARY(T, T, sfx, maximum, Maximum)  \
	LATHE_BINARY(T, T, sfx, minimum, Minimum)  \
	LATHE_BINARY(T, u8, sfx, lt, Lt)           \
	LATHE_BINARY(T, u8, sfx, le, Le)           \
	LATHE_BINARY(T, u8, sfx, gt, Gt)           \
	LATHE_BINARY(T, u8, sfx, ge, Ge)
#define LATHE_INT_BINARY(T, sfx)                                   \
	LATHE_BINARY(T, T, sfx, bitwise_and, BitwiseAnd)           \
	LATHE_BINARY(T, T, sfx, bitwise_or, BitwiseOr)             \
	LATHE_BINARY(T, T, sfx, bitwise_xor, BitwiseXor)           \
	LATHE_BINARY(T, T, sfx, bitwise_left_shift, ShiftLeft)     \
	LATHE_BINARY(T, T, sfx, bitwise_right_shift, ShiftRight)   \
	LATHE_BINARY(T, T, sfx, floor_divide, FloorDivide)         \
	LATHE_BINARY(T, T, sfx, gcd, Gcd)
#define LATHE_FLOAT_BINARY(T, sfx)         \
	LATHE_BINARY(T, T, sfx, div, Div)  \
	LATHE_BINARY(T, T, sfx, pow_scalar, PowScalar) \
	LATHE_BINARY(T, T, sfx, atan2, Atan2) \
	LATHE_BINARY(T, T, sfx, gelu_backward, GeluBackward) \
	LATHE_BINARY(T, T, sfx, gelu_tanh_backward, GeluTanhBackward) \
	LATHE_BINARY(T, T, sfx, silu_backward, SiluBackward) \
	LATHE_BINARY(T, T, sfx, relu_backward, ReluBackward) \
	LATHE_ADD_SCALED(T, sfx)
#define LATHE_EQUALITY(T, sfx)            \
	LATHE_BINARY(T, u8, sfx, eq, Eq)  \
	LATHE_BINARY(T, u8, sfx, ne, Ne)
// ---- where(cond, x, y): cond is bool. Contract as the binary ops, with
// cond as operand 1, x as 2, y as 3 of the strided forms' layouts, and a
// period for each in the dense form (pc, px, py). The 16-bit floats' where
// is instantiated on their bits (u16: binary_f16.cu, binary_bf16.cu), so
// that it selects them as they are, a signalling NaN too.

struct Select {
	template <typename T> __device__ __forceinline__ T operator()(u8 c, T x, T y) const { return c ? x : y; }
};

template <typename T>
__device__ void where_contig(T *__restrict__ out, const u8 *__restrict__ c, const T *__restrict__ x, const T *__restrict__ y,
                             i64 n, i64 pc, i64 px, i64 py) {
	const int N = Width<T>::value;
	dense_map<N>(out, n, Select(), Operand<u8, N>(c, pc), Operand<T, N>(x, px), Operand<T, N>(y, py));
}

// where_strided is the strided and strided32 forms, as binary_strided.
template <typename T, typename L, typename I>
__device__ void where_strided(T *out, const u8 *c, const T *x, const T *y, I n, const L &layout) {
	for_each_strided<4>(layout, n, [&](const I *off) { out[off[0]] = c[off[1]] ? x[off[2]] : y[off[3]]; });
}

#define LATHE_WHERE(T, sfx)                                                                                   \
	extern "C" __global__ void where_##sfx(T *__restrict__ out, const u8 *__restrict__ c, const T *__restrict__ x,  \
	                                       const T *__restrict__ y, i64 n, i64 pc, i64 px, i64 py) {     \
		where_contig<T>(out, c, x, y, n, pc, px, py);                                                 \
	}                                                                                                     \
	extern "C" __global__ void where_strided_##sfx(T *out, const u8 *c, const T *x, const T *y, i64 n, Layout L) { \
		where_strided<T>(out, c, x, y, n, L);                                                         \
	}                                                                                                     \
	extern "C" __global__ void where_strided32_##sfx(T *out, const u8 *c, const T *x, const T *y, i32 n, Layout32 L) { \
		where_strided<T>(out, c, x, y, n, L);                                                       \
	}
