// trig_half.cu: trig.cu's ops for float16 and bfloat16, computed in
// float32 (half.cuh). See unary.cuh.
#include "unary.cuh"

LATHE_HALVES(LATHE_TRIG_UNARIES)
