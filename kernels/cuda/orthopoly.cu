// orthopoly.cu: torch.special's orthogonal polynomials for float32 and float64.
// See orthopoly.cuh.
#include "orthopoly.cuh"

LATHE_FLOATS(LATHE_ORTHOPOLY_UNARIES)
