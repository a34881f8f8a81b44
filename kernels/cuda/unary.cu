// unary.cu: the numeric unary ops for every numeric dtype and the float
// ones (exp, log, the activations, ...) for float32 and float64; the
// trigonometric and hyperbolic functions are trig.cu's. See unary.cuh.
#include "unary.cuh"
#include "airy.cuh"

LATHE_NUMERIC(LATHE_NUMERIC_UNARY)
LATHE_FLOATS(LATHE_FLOAT_UNARIES)
LATHE_FLOATS(LATHE_AIRY_UNARY)
