// softmax.cu: softmax and log_softmax along one dim, fused per row: a block
// finds the row's maximum (a NaN anywhere makes it NaN, and so the whole row),
// then the sum of exp(x - max) in float64, then writes each element. The
// semantics are lathe's cpu kernel's (backends/cpu/softmax.go): x - max is
// taken in the dtype, exp in the dtype's precision, the sum and the final
// division (or subtraction of log(sum)) in float64, rounded once.
//
// Launch contract of softmax_<dtype> and log_softmax_<dtype>
//   (F *out, const F *x, Rows R, i64 nrows, i64 n):
// row r (0 <= r < nrows) is the n elements of R's inner shape (the softmax
// dim); operand 0 is out, operand 1 x, each with any strides. One block per
// row, a grid-stride loop over rows (1-D grid of any size); blockDim.x a
// multiple of 32, at most 1024. n >= 1.
#include "lathe.cuh"

struct MaxNaN {
	template <typename F> __device__ F operator()(F a, F b) const { return (is_nan(a) || a > b) ? a : b; }
};
struct Plus {
	__device__ double operator()(double a, double b) const { return a + b; }
};

template <typename F, bool Log>
__device__ void softmax_rows(F *out, const F *x, const Rows &R, i64 nrows, i64 n) {
	for (i64 r = blockIdx.x; r < nrows; r += gridDim.x) {
		i64 bo = row_base(R, 0, r), bx = row_base(R, 1, r);
		F m = -(F)inf_f64();
		for (i64 j = threadIdx.x; j < n; j += blockDim.x) m = MaxNaN()(m, x[bx + row_at(R, 1, j)]);
		m = block_broadcast(block_reduce(m, MaxNaN()));
		double s = 0;
		for (i64 j = threadIdx.x; j < n; j += blockDim.x) s += (double)m_exp(x[bx + row_at(R, 1, j)] - m);
		s = block_broadcast(block_reduce(s, Plus()));
		double ls = log(s);
		for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
			F d = x[bx + row_at(R, 1, j)] - m;
			out[bo + row_at(R, 0, j)] = Log ? (F)((double)d - ls) : (F)((double)m_exp(d) / s);
		}
	}
}

#define LATHE_SOFTMAX(F, sfx)                                                                               \
	extern "C" __global__ void softmax_##sfx(F *out, const F *x, Rows R, i64 nrows, i64 n) {           \
		softmax_rows<F, false>(out, x, R, nrows, n);                                                \
	}                                                                                                   \
	extern "C" __global__ void log_softmax_##sfx(F *out, const F *x, Rows R, i64 nrows, i64 n) {       \
		softmax_rows<F, true>(out, x, R, nrows, n);                                                 \
	}
LATHE_FLOATS(LATHE_SOFTMAX)
