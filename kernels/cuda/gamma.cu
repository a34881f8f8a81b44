// gamma.cu: the gamma family (lgamma, digamma, polygamma, zeta) for float32 and float64.
// See gamma.cuh.
#include "gamma.cuh"

LATHE_FLOATS(LATHE_GAMMA_UNARIES)
