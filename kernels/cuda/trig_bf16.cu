// trig_bf16.cu: trig.cu's ops for bfloat16, computed in float32
// (half.cuh). See unary.cuh.
#include "unary.cuh"

LATHE_TRIG_UNARIES(bf16, bf16)
