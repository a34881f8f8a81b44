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
//   <op>_runs_<dtype>(Out *out, const T *x, i64 nrows, i64 nruns, i64 L,
//     i64 rstride, i64 qstride, i64 splits, Acc *partial, double corr): the
//     block form (same grid, blocks, splits, partial and finish, for rows of
//     n = nruns*L elements) for rows of nruns runs of L contiguous elements,
//     element q*L + e of row r at x + r*rstride + q*qstride + e, with no Rows:
//     reduce.cuh's reduce_contig. <op>_contig_<dtype>(Out *out, const T *x,
//     i64 nrows, i64 n, i64 rstride, i64 splits, Acc *partial, double corr)
//     is the same for one run a row (nruns 1, L = n), with fewer registers. Any alignment (each run's part in a split
//     has a scalar head up to the first 16-byte boundary); a split is
//     ceil(n/splits) rounded up to whole 16-byte vectors and must be shorter
//     than 2^30 elements (the host sees to it), as the kernel counts within
//     it in 32 bits. What the emulation
//     cannot show: on an H200 a full reduction of 16M float32 is 1024
//     splits of 16384 elements, one wave of 256-thread blocks (8 per
//     multiprocessor at 32 registers), each thread with two 16-byte loads
//     in flight (64 KiB per multiprocessor, more than twice the ~25 KiB
//     that its share of 4.8 TB/s at ~700 ns needs);
//     the float64 accumulation costs one f32->f64 conversion and one double
//     add per element, at 16 and 64 per clock per multiprocessor, under the
//     ~4 elements per clock that memory delivers. So it should run near the
//     copy bandwidth (~4 TB/s) where the generic kernel ran at 0.63.
//   <op>_cols_<dtype>(Out *out, const T *x, i64 A, i64 C, i64 K, i64 sA,
//     i64 sK, i64 splits, Acc *partial, double corr): out[a*C + c] reduces
//     x[a*sA + k*sK + c] over k < K (reduce.cuh's reduce_cols): rows that
//     are columns, the innermost kept dim contiguous. A 1-D grid-stride loop
//     over the A * ceil(C/32) * splits tasks; blockDim.x a multiple of 32, at
//     most 256 (8 warps, each on every 8th k; COLS_WARPS). Each
//     split is ceil(K/splits) of a column's k; splits > 1 fills partial as
//     the block form does (for A*C rows) and <op>_finish_<dtype> follows.
//     What the emulation cannot show: a warp's load is 32 neighbouring
//     columns, 128 contiguous bytes of float32, where the block form read a
//     sector per element, so a [4096, 4096] float32 bias gradient should
//     read at near copy bandwidth rather than an eighth of it.
#include "reduce.cuh"

LATHE_NUMERIC(LATHE_NUMERIC_REDUCE)

// ---- cumsum_<dtype>(T *out, const T *x, Rows R, i64 nrows, i64 n): the
// running sums along each row (R's inner shape is the one scanned dim,
// operand 0 out, operand 1 x; both any strides), accumulated in Accum<T>
// and rounded at each element, as the cpu kernel does. One thread per row
// (a grid-stride loop over rows; 1-D grid and blocks of any size), which
// keeps the cpu's summation order exactly: for many short rows.
template <typename T>
__device__ void cumsum(T *out, const T *x, const Rows &R, i64 nrows, i64 n) {
	typedef typename Accum<T>::type A;
	LATHE_FOR(r, nrows) {
		i64 bo = row_base(R, 0, r), bx = row_base(R, 1, r);
		A a = 0;
		for (i64 j = 0; j < n; j++) {
			a = acc_add(a, (A)x[bx + row_elem(R, 1, j)]);
			out[bo + row_elem(R, 0, j)] = (T)a;
		}
	}
}

// ---- cumsum_block_<dtype>(T *out, const T *x, Rows R, i64 nrows, i64 n):
// the same sums for long rows, one block per row (a grid-stride loop over
// rows; 1-D grid, blockDim.x a power of two, at most CUMSUM_THREADS). The
// block takes its row in chunks of blockDim.x * CUMSUM_ITEMS elements: each
// thread adds its CUMSUM_ITEMS neighbours in order, the threads' totals are
// scanned across the block in shared memory (Hillis and Steele: log2 of
// blockDim.x steps), and each thread adds the totals of the chunks and the
// threads before it to its running sums, rounding each to T as it writes
// it. Where the one-thread form takes n dependent additions for a row, this
// takes about n / blockDim.x. The order of the additions is fixed by
// blockDim.x, so every run gives the same bits, but it is not the
// one-thread form's left to right: a float sum may differ from it (and from
// the cpu's) in the last bits of the float64 accumulator, as torch's cuda
// cumsum differs from its cpu one; integers wrap alike either way.
#define CUMSUM_ITEMS 4
#define CUMSUM_THREADS 256
template <typename T>
__device__ void cumsum_block(T *out, const T *x, const Rows &R, i64 nrows, i64 n) {
	typedef typename Accum<T>::type A;
	__shared__ A totals[2][CUMSUM_THREADS];
	const int t = threadIdx.x, nt = blockDim.x;
	for (i64 r = blockIdx.x; r < nrows; r += gridDim.x) {
		i64 bo = row_base(R, 0, r), bx = row_base(R, 1, r);
		A carry = 0; // the chunks before this one
		for (i64 c = 0; c < n; c += (i64)nt * CUMSUM_ITEMS) {
			i64 j0 = c + (i64)t * CUMSUM_ITEMS;
			A run[CUMSUM_ITEMS], sum = 0;
			for (int k = 0; k < CUMSUM_ITEMS; k++) {
				if (j0 + k < n)
					sum = acc_add(sum, (A)x[bx + row_elem(R, 1, j0 + k)]);
				run[k] = sum;
			}
			int cur = 0;
			totals[0][t] = sum;
			__syncthreads();
			for (int d = 1; d < nt; d <<= 1) {
				A v = totals[cur][t];
				if (t >= d)
					v = acc_add(totals[cur][t - d], v);
				totals[cur ^ 1][t] = v;
				cur ^= 1;
				__syncthreads();
			}
			A before = t > 0 ? acc_add(carry, totals[cur][t - 1]) : carry;
			for (int k = 0; k < CUMSUM_ITEMS && j0 + k < n; k++)
				out[bo + row_elem(R, 0, j0 + k)] = (T)acc_add(before, run[k]);
			carry = acc_add(carry, totals[cur][nt - 1]);
			__syncthreads(); // every thread has read totals before the next chunk writes it
		}
	}
}

#define LATHE_CUMSUM(T, sfx)                                                                                 \
	extern "C" __global__ void cumsum_##sfx(T *out, const T *x, Rows R, i64 nrows, i64 n) {            \
		cumsum<T>(out, x, R, nrows, n);                                                             \
	}                                                                                                   \
	extern "C" __global__ void cumsum_block_##sfx(T *out, const T *x, Rows R, i64 nrows, i64 n) {      \
		cumsum_block<T>(out, x, R, nrows, n);                                                       \
	}
LATHE_NUMERIC(LATHE_CUMSUM)
