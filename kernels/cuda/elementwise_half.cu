// elementwise_half.cu: the casts from and to float16 and bfloat16, which
// read and write the 16-bit storage and convert through float32 in
// registers (half.cuh); see elementwise.cuh.
#include "elementwise.cuh"

LATHE_ALL(LATHE_CAST_TO_HALVES)
LATHE_HALVES(LATHE_CAST_FROM)
LATHE_HALVES(LATHE_CAST_TO_HALVES)
