// narrow.cu: the conversions between the narrow storage dtypes (float16,
// bfloat16, int8, uint8) and their compute dtypes (float32, int32), which
// are cuda's dispatch.Converter (backends/cuda/narrow.go): a kernel with
// no instantiation for a narrow dtype computes it in its compute dtype,
// between a widening and a rounding of these (dispatch.ViaCompute). The
// elementwise families have float16 and bfloat16 instantiations, which
// convert in registers with the same functions (half.cuh, whose comment
// gives the 16-bit floats' rules) and so give the same bits. The 8-bit
// integers:
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
