// gamma_bf16.cu: the gamma family (lgamma, digamma, polygamma, zeta) for bfloat16, computed in float32 (half.cuh).
// See gamma.cuh.
#include "gamma.cuh"

LATHE_GAMMA_UNARIES(bf16, bf16)
