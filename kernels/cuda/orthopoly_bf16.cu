// orthopoly_bf16.cu: torch.special's orthogonal polynomials for bfloat16, computed in float32 (half.cuh).
// See orthopoly.cuh.
#include "orthopoly.cuh"

LATHE_ORTHOPOLY_UNARIES(bf16, bf16)
