// window.cuh: the geometry of a window sliding over 1 to 3 spatial dims,
// shared by pooling (pool.cu) and unfold/fold (unfold.cu).
#pragma once
#include "lathe.cuh"

#define LATHE_POOL_DIMS 3

// PoolGeom is a window's geometry over one plane: per spatial dim d < dims,
// the input size in[d], the output size out[d] (for unfold and fold, the
// grid of window positions), and for window pooling
// (adaptive == 0) the kernel, stride, padding and dilation. Adaptive window
// o along d covers [floor(o in/out), ceil((o+1) in/out)). exclude is
// count_include_pad=False; divisor, when nonzero, replaces each window's
// count. Byte offsets (backends/cuda cPoolGeom):
//   dims      0
//   in        8    (3 x i64)
//   out       32
//   kernel    56
//   stride    80
//   padding   104
//   dilation  128
//   adaptive  152
//   exclude   160
//   divisor   168
//   in_plane  176
//   out_plane 184
//   size      192
struct PoolGeom {
	i64 dims;
	i64 in[LATHE_POOL_DIMS], out[LATHE_POOL_DIMS];
	i64 kernel[LATHE_POOL_DIMS], stride[LATHE_POOL_DIMS], padding[LATHE_POOL_DIMS], dilation[LATHE_POOL_DIMS];
	i64 adaptive, exclude, divisor;
	i64 in_plane, out_plane;
};
static_assert(sizeof(PoolGeom) == 192, "PoolGeom must match backends/cuda cPoolGeom");

