// elementwise.cu: the casts between the wide dtypes (float32, float64,
// int32, int64, bool) and every dtype's fill; see elementwise.cuh.
#include "elementwise.cuh"

LATHE_ALL(LATHE_CAST_FROM)
LATHE_ALL(LATHE_FILL)
LATHE_HALVES(LATHE_FILL)
