// unary_f16.cu: unary.cu's ops (the numeric and the float ones) for
// float16, computed in float32 (half.cuh): a module of their own per
// 16-bit dtype, so that a program loads only the dtypes it uses. See
// unary.cuh.
#include "unary.cuh"
#include "airy.cuh"

LATHE_NUMERIC_UNARY(f16, f16)
LATHE_FLOAT_UNARIES(f16, f16)
LATHE_AIRY_UNARY(f16, f16)
