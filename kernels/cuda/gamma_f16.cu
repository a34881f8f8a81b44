// gamma_f16.cu: the gamma family (lgamma, digamma, polygamma, zeta) for float16, computed in float32 (half.cuh).
// See gamma.cuh.
#include "gamma.cuh"

LATHE_GAMMA_UNARIES(f16, f16)
