// elementwise.cu: the casts between the wide dtypes (float32, float64,
// int32, int64, bool), every dtype's fill (see elementwise.cuh), and
// every float dtype's dropout (philox.cuh).
#include "elementwise.cuh"
#include "philox.cuh"

LATHE_ALL(LATHE_CAST_FROM)
LATHE_ALL(LATHE_FILL)
LATHE_HALVES(LATHE_FILL)
LATHE_FLOATS(LATHE_DROPOUT)
LATHE_HALVES(LATHE_DROPOUT)
