// orthopoly_f16.cu: torch.special's orthogonal polynomials for float16, computed in float32 (half.cuh).
// See orthopoly.cuh.
#include "orthopoly.cuh"

LATHE_ORTHOPOLY_UNARIES(f16, f16)
