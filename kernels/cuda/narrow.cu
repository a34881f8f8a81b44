// narrow.cu: the conversions between the narrow storage dtypes (float16,
// bfloat16, int8, uint8) and their compute dtypes (float32, int32), which
// are cuda's dispatch.Converter (backends/cuda/narrow.go): every other
// kernel computes a narrow dtype in its compute dtype, between a widening
// and a rounding of these (dispatch.ViaCompute).
//
// The 16-bit floats convert by integer operations on their bits, not by
// cvt: the PTX targets sm_70, which has cvt.rn.f16.f32 but no bf16
// conversion, and the host emulation (internal/cudaemu) has neither, so
// bits are what both run alike; they also leave the GPU's flush-to-zero
// modes no say over subnormals. The rules are internal/half's (the cpu's):
//   - Widening is exact. A float16 subnormal becomes a normal float32; a
//     NaN comes out quiet with its sign and significand.
//   - Rounding is to nearest, ties to even. float16: magnitudes of 65520
//     and up become ±Inf, those below 2^-14 float16 subnormals (2^-25 and
//     below ±0); bfloat16 keeps float32's range and subnormals, and a
//     rounding past its largest finite value carries into Inf. -0 stays
//     -0. A NaN stays a NaN: quiet, its sign and its significand's top
//     bits kept.
//   - int32 to int8 or uint8 keeps the low 8 bits (two's complement), as
//     PyTorch's wrapping does; int8 and uint8 widen by sign or zero
//     extension.
//
// Launch contract of every kernel here, convert_<from>_<to>(out, x, n): a
// 1-D grid of 1-D blocks, any shape (a grid-stride loop over n elements);
// 0 <= n < 2^31; out and x contiguous, n elements each, at their dtype's natural
// alignment, not overlapping. A float is passed as its bits (u32 for
// float32, u16 for the 16-bit floats). It is dense.cuh's dense_map: where
// both pointers are aligned to their vectors (4 elements: 16 bytes of the
// wide side, 8 or 4 of the narrow), one vector access each, else one
// element at a time; every narrow op's operands and result pass through
// these, so they run at the memory's speed as the ops themselves do.
#include "dense.cuh"

// Bits of float32 and float16 (bias 127 and 15; 23 and 10 significand bits).
#define F32_INF 0x7f800000u
#define F32_QUIET 0x00400000u
#define F16_INF 0x7c00u
#define F16_QUIET 0x0200u
#define BF16_QUIET 0x0040u
// A normal float16 is a float32 with its exponent rebiased by 127 - 15 = 112
// and its significand's low 13 bits zero.
#define F16_SHIFT 13
#define F16_REBIAS (112u << 23)

// leading_bit is the position of the highest set bit of v (v != 0): a loop,
// not __clz, so the emulation needs no intrinsic; v has at most 10 bits.
__device__ __forceinline__ u32 leading_bit(u32 v) {
	u32 p = 0;
	while (v >> (p + 1)) p++;
	return p;
}

__device__ __forceinline__ u32 f16_to_f32(u16 h) {
	u32 sign = (u32)(h & 0x8000u) << 16;
	u32 exp = (h >> 10) & 0x1fu;
	u32 sig = h & 0x03ffu;
	if (exp == 0x1f) return sig == 0 ? sign | F32_INF : sign | F32_INF | F32_QUIET | sig << F16_SHIFT;
	if (exp == 0) {
		if (sig == 0) return sign;
		// A subnormal, sig·2^-24, normalised: its leading 1 at bit p makes
		// it 2^(p-24)·1.rest, float32 exponent p - 24 + 127.
		u32 p = leading_bit(sig);
		return sign | (p + 103) << 23 | ((sig << (23 - p)) & 0x007fffffu);
	}
	return sign | (((exp << 10) | sig) << F16_SHIFT) + F16_REBIAS;
}

__device__ __forceinline__ u16 f32_to_f16(u32 b) {
	u16 sign = (u16)((b >> 16) & 0x8000u);
	b &= 0x7fffffffu;
	if (b > F32_INF) return sign | F16_INF | F16_QUIET | (u16)((b >> F16_SHIFT) & 0x03ffu); // NaN
	if (b >= 0x477ff000u) return sign | F16_INF; // ≥ 65520, the midpoint of 65504 and 2^16
	if (b >= 0x38800000u) { // ≥ 2^-14: a normal float16
		// Adding just under half an ulp, plus one if the kept part is odd,
		// carries into the kept part exactly when it rounds up.
		b -= F16_REBIAS;
		b += 0x0fffu + ((b >> F16_SHIFT) & 1u);
		return sign | (u16)(b >> F16_SHIFT);
	}
	if (b <= 0x33000000u) return sign; // ≤ 2^-25, half the smallest subnormal: ties to 0
	// A subnormal m·2^-24: the 24-bit significand shifted right by 126 - e
	// (14 to 24), rounded to nearest even; m may round up to 1024, the
	// bits of 2^-14.
	u32 e = b >> 23;
	u32 s = (b & 0x007fffffu) | 0x00800000u;
	u32 shift = 126 - e;
	u32 m = s >> shift;
	u32 rest = s & ((1u << shift) - 1);
	u32 half = 1u << (shift - 1);
	if (rest > half || (rest == half && (m & 1u))) m++;
	return sign | (u16)m;
}

__device__ __forceinline__ u32 bf16_to_f32(u16 h) {
	u32 b = (u32)h << 16;
	if ((b & 0x7fffffffu) > F32_INF) b |= F32_QUIET;
	return b;
}

__device__ __forceinline__ u16 f32_to_bf16(u32 b) {
	// NaN first: the rounding add could carry a payload in the low bits
	// into the exponent.
	if ((b & 0x7fffffffu) > F32_INF) return (u16)(b >> 16) | BF16_QUIET;
	b += 0x7fffu + ((b >> 16) & 1u);
	return (u16)(b >> 16);
}

__device__ __forceinline__ i32 i8_to_i32(i8 v) { return v; }
__device__ __forceinline__ i32 u8_to_i32(u8 v) { return v; }
__device__ __forceinline__ i8 i32_to_i8(i32 v) { return (i8)(u8)((u32)v & 0xffu); }
__device__ __forceinline__ u8 i32_to_u8(i32 v) { return (u8)((u32)v & 0xffu); }

// Rule is a conversion function as dense_map calls it.
template <typename From, typename To, To (*rule)(From)> struct Rule {
	__device__ __forceinline__ To operator()(From v) const { return rule(v); }
};

template <typename From, typename To, To (*rule)(From)>
__device__ void convert(To *__restrict__ out, const From *__restrict__ x, i64 n) {
	const int N = Width<typename Wider<From, To>::type>::value;
	dense_map<N>(out, n, Rule<From, To, rule>(), Operand<From, N>(x, n));
}

#define LATHE_CONVERT(From, fs, To, ts, rule)                                                  \
	extern "C" __global__ void convert_##fs##_##ts(To *__restrict__ out, const From *__restrict__ x, i64 n) { \
		convert<From, To, rule>(out, x, n);                                            \
	}
LATHE_CONVERT(u16, f16, u32, f32, f16_to_f32)
LATHE_CONVERT(u16, bf16, u32, f32, bf16_to_f32)
LATHE_CONVERT(i8, i8, i32, i32, i8_to_i32)
LATHE_CONVERT(u8, u8, i32, i32, u8_to_i32)
LATHE_CONVERT(u32, f32, u16, f16, f32_to_f16)
LATHE_CONVERT(u32, f32, u16, bf16, f32_to_bf16)
LATHE_CONVERT(i32, i32, i8, i8, i32_to_i8)
LATHE_CONVERT(i32, i32, u8, u8, i32_to_u8)
