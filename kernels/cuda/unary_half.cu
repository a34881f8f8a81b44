// unary_half.cu: unary.cu's ops (the numeric and the float ones) for
// float16 and bfloat16, computed in float32 (half.cuh): a module of their
// own, so that a program that uses no 16-bit float never JIT-compiles
// them. See unary.cuh.
#include "unary.cuh"

LATHE_HALVES(LATHE_NUMERIC_UNARY)
LATHE_HALVES(LATHE_FLOAT_UNARIES)
