// unary_bf16.cu: unary.cu's ops (the numeric and the float ones) for
// bfloat16, computed in float32 (half.cuh): a module of their own per
// 16-bit dtype, so that a program loads only the dtypes it uses. See
// unary.cuh.
#include "unary.cuh"
#include "airy.cuh"

LATHE_NUMERIC_UNARY(bf16, bf16)
LATHE_FLOAT_UNARIES(bf16, bf16)
LATHE_AIRY_UNARY(bf16, bf16)
