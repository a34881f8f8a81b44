// binary.cu: the binary ops and where for the wide dtypes (float32,
// float64, int32, int64, bool; see binary.cuh), and the logical ops.
#include "binary.cuh"

LATHE_NUMERIC(LATHE_ARITH)
LATHE_FLOATS(LATHE_FLOAT_BINARY)
LATHE_INTS(LATHE_INT_BINARY)
// bool compares as 0 and 1, so its eq and ne are the byte's; the host
// passes bool operands normalised to 0/1, which lathe's bool tensors are.
LATHE_ALL(LATHE_EQUALITY)
LATHE_ALL(LATHE_WHERE)

// ---- Truth values, for the logical ops, which take any dtype on either
// side (nonzero is true, as in PyTorch). The operand's dtype is a kernel
// argument rather than a template parameter, so that two mixed dtypes need
// not be 25 instantiations: kind is 1 float32, 2 float64, 3 int32, 4 int64,
// 5 bool (lathe's dispatch.DType numbering).

__device__ __forceinline__ bool truth(const void *p, i64 off, i32 kind) {
	switch (kind) {
	case 1: return ((const float *)p)[off] != 0.0f; // -0 is false, NaN true
	case 2: return ((const double *)p)[off] != 0.0;
	case 3: return ((const i32 *)p)[off] != 0;
	case 4: return ((const i64 *)p)[off] != 0;
	default: return ((const u8 *)p)[off] != 0;
	}
}

// logical_and, logical_or: out (bool) over a Layout of out, x, y; any grid.
extern "C" __global__ void logical_and(u8 *out, const void *x, const void *y, i64 n, Layout L, i32 xkind, i32 ykind) {
	LATHE_FOR(i, n) {
		i64 off[3];
		offsets_of<3>(L, i, off);
		out[off[0]] = (truth(x, off[1], xkind) && truth(y, off[2], ykind)) ? 1 : 0;
	}
}

extern "C" __global__ void logical_or(u8 *out, const void *x, const void *y, i64 n, Layout L, i32 xkind, i32 ykind) {
	LATHE_FOR(i, n) {
		i64 off[3];
		offsets_of<3>(L, i, off);
		out[off[0]] = (truth(x, off[1], xkind) || truth(y, off[2], ykind)) ? 1 : 0;
	}
}

// logical_not: out (bool) over a Layout of out, x; any grid.
extern "C" __global__ void logical_not(u8 *out, const void *x, i64 n, Layout L, i32 xkind) {
	LATHE_FOR(i, n) {
		i64 off[2];
		offsets_of<2>(L, i, off);
		out[off[0]] = truth(x, off[1], xkind) ? 0 : 1;
	}
}
