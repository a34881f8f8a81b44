// reduce.cu: sum, prod, max, min, argmax, argmin (and, in moments.cu from
// the same templates of reduce.cuh, var, std and logsumexp) over a Rows
// description of the input (each output element reduces one row), and
// cumsum. The semantics are lathe's cpu kernels'
// (backends/cpu/reduce.go): sums and products accumulate in float64 for
// floats and in int64 (wrapping) for integers; max and min propagate NaN;
// argmax and argmin give the first index of the extreme, a NaN counting as
// both the largest and the smallest value; var and std divide by
// max(n - correction, 0); logsumexp of an empty row is -inf and an infinite
// or NaN maximum is the result itself. Each reduction is an accumulator type
// (Acc) with an identity, a push of one element, an associative and
// commutative combine and a finish, so the order in which the threads and
// blocks combine does not change which element argmax picks, and changes a
// float sum only by rounding.
//
// Three kernels per reduction and dtype, all taking
//   (Out *out, const T *x, Rows R, i64 nrows, i64 n, ..., double corr)
// where row r (0 <= r < nrows) of x is R's operand 1 and its result goes to
// out[r] (out contiguous, in the kept dims' row-major order; R's operand 0
// is unused); n is the row length (the product of R's inner shape); corr is
// var and std's correction and ignored by the others.
//   <op>_thread_<dtype>: one thread per row, a grid-stride loop over rows;
//     1-D grid and blocks of any size. For short rows.
//   <op>_block_<dtype>(..., i64 splits, Acc *partial, double corr): one block
//     per (row, split) task, a grid-stride loop over the nrows*splits tasks
//     (1-D grid, any size); blockDim.x a multiple of 32, at most 1024. Each
//     split reduces a contiguous range of ceil(n/splits) of the row's
//     elements. With splits == 1 the block writes out[r]; otherwise it
//     writes its accumulator to partial[r*splits + s], which then holds
//     nrows*splits accumulators of at most LATHE_ACC_MAX bytes each (scratch
//     memory, 8-byte aligned), and <op>_finish_<dtype> must follow on the
//     same stream.
//   <op>_finish_<dtype>(Out *out, const Acc *partial, i64 nrows, i64 splits,
//     double corr): one block per row (grid-stride over rows; blockDim.x a
//     multiple of 32, at most 1024) combines a row's splits and writes out[r].
#include "reduce.cuh"

LATHE_NUMERIC(LATHE_NUMERIC_REDUCE)

// ---- cumsum_<dtype>(T *out, const T *x, Rows R, i64 nrows, i64 n): the
// running sums along each row (R's inner shape is the one scanned dim,
// operand 0 out, operand 1 x; both any strides), accumulated in Accum<T>
// and rounded at each element, as the cpu kernel does. One thread per row
// (a grid-stride loop over rows; 1-D grid and blocks of any size), which
// keeps the cpu's summation order exactly.
template <typename T>
__device__ void cumsum(T *out, const T *x, const Rows &R, i64 nrows, i64 n) {
	typedef typename Accum<T>::type A;
	LATHE_FOR(r, nrows) {
		i64 bo = row_base(R, 0, r), bx = row_base(R, 1, r);
		A a = 0;
		for (i64 j = 0; j < n; j++) {
			a = acc_add(a, (A)x[bx + row_at(R, 1, j)]);
			out[bo + row_at(R, 0, j)] = (T)a;
		}
	}
}

#define LATHE_CUMSUM(T, sfx) \
	extern "C" __global__ void cumsum_##sfx(T *out, const T *x, Rows R, i64 nrows, i64 n) { cumsum<T>(out, x, R, nrows, n); }
LATHE_NUMERIC(LATHE_CUMSUM)
