// trig_f16.cu: trig.cu's ops for float16, computed in float32
// (half.cuh). See unary.cuh.
#include "unary.cuh"

LATHE_TRIG_UNARIES(f16, f16)
