// binary_half.cu: the binary ops, the comparisons and where for float16
// and bfloat16, computed in float32 (half.cuh): binary.cu's templates in a
// module of their own (see binary.cuh).
#include "binary.cuh"

LATHE_HALVES(LATHE_ARITH)
LATHE_HALVES(LATHE_FLOAT_BINARY)
LATHE_HALVES(LATHE_EQUALITY)
LATHE_HALVES(LATHE_WHERE)
