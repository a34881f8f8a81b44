// trig.cu: the trigonometric and hyperbolic unary ops (sin, cos, tan, their
// inverses, sinh, cosh, tanh and theirs) for float32 and float64: a module
// of their own, as their math is most of the unary ops' PTX. See unary.cuh.
#include "unary.cuh"

LATHE_FLOATS(LATHE_TRIG_UNARIES)
