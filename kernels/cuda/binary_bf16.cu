// binary_bf16.cu: the binary ops, the comparisons and where for bfloat16,
// computed in float32 (half.cuh): binary.cu's templates in a module of
// their own per 16-bit dtype (see binary.cuh), so that each PTX file stays
// small and a program loads only the dtypes it uses.
#include "binary.cuh"

LATHE_ARITH(bf16, bf16)
LATHE_FLOAT_BINARY(bf16, bf16)
LATHE_EQUALITY(bf16, bf16)
LATHE_WHERE(u16, bf16) // selects the bits, as they are
