// moments.cu: var, std and logsumexp, the float-only reductions, from the
// templates of reduce.cuh; their launch contract is reduce.cu's (three
// kernels per op and dtype: _thread_, _block_, _finish_). A module of their
// own keeps each PTX file small.
#include "reduce.cuh"

LATHE_FLOATS(LATHE_FLOAT_REDUCE)
