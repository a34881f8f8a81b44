// half.cuh: the 16-bit floats, float16 and bfloat16, in kernels. They are
// storage types: a kernel loads one, widens it to float32 in registers,
// computes in float32 as for a float32 tensor and rounds the result once
// when it stores it, as dispatch.ViaCompute does with whole float32
// temporaries (narrow.cu's conversions around the float32 kernel), so the
// two give the same bits. Storage, below, is that split for every storage
// type, the identity for the others, so that one template per kernel
// family gives every dtype's kernels.
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
#pragma once
#include "lathe.cuh"

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

// leading_bit is the position of the highest set bit of v (v != 0): one
// clz on the GPU, the compiler's builtin in the emulation (a loop would be
// a loop per element in every 16-bit kernel).
__device__ __forceinline__ u32 leading_bit(u32 v) {
#ifdef __CUDACC__
	return 31 - (u32)__clz((int)v);
#else
	return 31 - (u32)__builtin_clz(v);
#endif
}

// f16_to_f32 and f32_to_f16 test for the normal numbers first, with one
// unsigned comparison of the magnitude's bits: in a kernel's loop they are
// most of the work per element, and a warp whose elements are all normal
// takes only that branch.
__device__ __forceinline__ u32 f16_to_f32(u16 h) {
	u32 sign = (u32)(h & 0x8000u) << 16;
	u32 em = h & 0x7fffu; // exponent and significand
	if (em - 0x0400u < F16_INF - 0x0400u) return sign | ((em << F16_SHIFT) + F16_REBIAS); // exponent 1 to 30
	if (em >= F16_INF) return em == F16_INF ? sign | F32_INF : sign | F32_INF | F32_QUIET | em << F16_SHIFT;
	if (em == 0) return sign;
	// A subnormal, em·2^-24, normalised: its leading 1 at bit p makes it
	// 2^(p-24)·1.rest, float32 exponent p - 24 + 127.
	u32 p = leading_bit(em);
	return sign | (p + 103) << 23 | ((em << (23 - p)) & 0x007fffffu);
}

__device__ __forceinline__ u16 f32_to_f16(u32 b) {
	u16 sign = (u16)((b >> 16) & 0x8000u);
	b &= 0x7fffffffu;
	if (b - 0x38800000u < 0x477ff000u - 0x38800000u) { // 2^-14 ≤ |x| < 65520: a normal float16
		// Adding just under half an ulp, plus one if the kept part is odd,
		// carries into the kept part exactly when it rounds up (65520, the
		// midpoint of 65504 and 2^16, and above become Inf below).
		b -= F16_REBIAS;
		b += 0x0fffu + ((b >> F16_SHIFT) & 1u);
		return sign | (u16)(b >> F16_SHIFT);
	}
	if (b > F32_INF) return sign | F16_INF | F16_QUIET | (u16)((b >> F16_SHIFT) & 0x03ffu); // NaN
	if (b >= 0x477ff000u) return sign | F16_INF;
	if (b <= 0x33000000u) return sign; // ≤ 2^-25, half the smallest subnormal: ties to 0
	// A subnormal m·2^-24: the 24-bit significand shifted right by 126 - e
	// (14 to 24), rounded to nearest even as above; m may round up to
	// 1024, the bits of 2^-14.
	u32 e = b >> 23;
	u32 s = (b & 0x007fffffu) | 0x00800000u;
	u32 shift = 126 - e;
	return sign | (u16)((s + (1u << (shift - 1)) - 1 + ((s >> shift) & 1u)) >> shift);
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

// f16 and bf16 are the storage types of float16 and bfloat16 elements: 16
// bits each, as two types so that Storage tells them apart (narrow.cu's
// conversions, which only move bits, take them as u16).
struct f16 {
	u16 bits;
};
struct bf16 {
	u16 bits;
};

// Storage<S> is how a kernel computes with elements stored as S: in the
// type compute, which load gives exactly and store rounds once into S.
// Every dtype but the 16-bit floats is computed as itself.
template <typename S> struct Storage {
	typedef S compute;
	static __device__ __forceinline__ S load(S s) { return s; }
	static __device__ __forceinline__ S store(S c) { return c; }
};
template <> struct Storage<f16> {
	typedef float compute;
	static __device__ __forceinline__ float load(f16 s) { return __int_as_float((int)f16_to_f32(s.bits)); }
	static __device__ __forceinline__ f16 store(float c) { return f16{f32_to_f16((u32)__float_as_int(c))}; }
};
template <> struct Storage<bf16> {
	typedef float compute;
	static __device__ __forceinline__ float load(bf16 s) { return __int_as_float((int)bf16_to_f32(s.bits)); }
	static __device__ __forceinline__ bf16 store(float c) { return bf16{f32_to_bf16((u32)__float_as_int(c))}; }
};

// computed is f over the inputs s (each of its own storage type) in their
// compute types, stored as an R: what every elementwise kernel writes for
// one element.
template <typename R, typename F, typename... S>
__device__ __forceinline__ R computed(const F &f, S... s) {
	return Storage<R>::store(f(Storage<S>::load(s)...));
}

// The dtype suffixes of the 16-bit floats' entry points, as lathe.cuh's
// LATHE_FLOATS.
#define LATHE_HALVES(X) X(f16, f16) X(bf16, bf16)
