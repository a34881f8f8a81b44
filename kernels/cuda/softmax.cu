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
//
// The fast path, for rows of contiguous elements (the softmax dim is
// innermost and of stride 1 in both out and x), row r of x at x + r*xstride
// and of out at out + r*ostride:
//   softmax_warp_<dtype>, log_softmax_warp_<dtype>
//   softmax_block_<dtype>, log_softmax_block_<dtype>
//     (F *out, const F *x, i64 nrows, i32 n, i64 ostride, i64 xstride)
// with 1 <= n < 2^31 and any alignment. _warp_ gives each row a group of
// g lanes of a warp, g the power of 2 from W to 32 that covers the row's
// vectors (W elements per 16-byte vector: 4 float32, 2 float64), so a warp
// takes 32/g rows (blockDim.x a multiple of 32, at most 256; a grid-stride
// loop over rows, blockDim.x/32 * 32/g per block), for rows that fit its
// registers: n <= 32 * CACHE * W (1024 float32, 512 float64); its
// reductions are shuffles, with no barrier. _block_
// gives each block a row (blockDim.x a multiple of 32, at most 256; a
// grid-stride loop over rows); the first 256 * CACHE vectors of a row stay
// in registers and the rest are read again from memory (L2) in each of the
// three passes. Both read x once where the row is cached, with 16-byte loads
// from the first aligned element, and write out with 16-byte stores where
// out's row sits at the same place within 16 bytes as x's (scalar stores
// otherwise). The arithmetic is the cpu's float32 row's
// (backends/cpu/shim.c, softmax_row), which the generic kernel's float64
// per element is not: exponentials summed in the dtype per 16-byte vector
// and in float64 across vectors, softmax scaled in the dtype by the sum's
// reciprocal (within an ulp or two of the float64 division; float64 rows
// are unchanged by it). What the emulation cannot show: on an H200, 4096 rows
// of 1024 float32 are 1024 blocks of 4 warps, one wave at <= 64 registers a
// thread; each lane holds eight float4 loads in flight (4 KiB per warp), and
// no index is divided, so it should run near copy bandwidth where the
// generic kernel (then with row_at's 64-bit division per element, now
// row_elem's multiplication; three reads of x) reached 452 GB/s.
#include "lathe.cuh"
#include "vec.cuh"

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
		for (i64 j = threadIdx.x; j < n; j += blockDim.x) m = MaxNaN()(m, x[bx + row_elem(R, 1, j)]);
		m = block_broadcast(block_reduce(m, MaxNaN()));
		double s = 0;
		for (i64 j = threadIdx.x; j < n; j += blockDim.x) s += (double)m_exp(x[bx + row_elem(R, 1, j)] - m);
		s = block_broadcast(block_reduce(s, Plus()));
		double ls = log(s);
		for (i64 j = threadIdx.x; j < n; j += blockDim.x) {
			F d = x[bx + row_elem(R, 1, j)] - m;
			out[bo + row_elem(R, 0, j)] = Log ? (F)((double)d - ls) : (F)((double)m_exp(d) / s);
		}
	}
}

// CACHE is the vectors of a row that each thread of the fast path keeps in
// registers: 8 float4 or double2 are 32 registers, which with the rest stay
// under the 64 a thread that lets 1024 threads share a multiprocessor.
#define CACHE 8
// The fast path's largest block and the fewest such blocks a
// multiprocessor must hold (its __launch_bounds__): float32 in 64 registers,
// so that 4096 rows of 1024 (4096 warps) are resident in one wave of 132
// multiprocessors; float64's wider arithmetic spills at 64, so 85.
#define SOFTMAX_THREADS 256
#define SOFTMAX_MIN_BLOCKS(F) (sizeof(F) == 4 ? 4 : 3)

// shfl_xor is lathe.cuh's shfl_down with a butterfly exchange: every lane
// ends up with the combined value, so no broadcast follows.
template <typename V>
__device__ __forceinline__ V shfl_xor(V v, int mask) {
	static_assert(sizeof(V) % 4 == 0, "shuffled values are whole 32-bit words");
	union {
		V v;
		int w[sizeof(V) / 4];
	} u;
	u.v = v;
#pragma unroll
	for (int i = 0; i < (int)(sizeof(V) / 4); i++) u.w[i] = __shfl_xor_sync(0xffffffffu, u.w[i], mask);
	return u.v;
}

// all_reduce combines one value per thread of the row's group (g lanes of
// a warp, g a power of 2, or the whole block) and gives the result to every
// thread. An exchange with lane ^ d for d < g stays inside the aligned
// group; MaxNaN and Plus are commutative bit for bit, so every lane of the
// butterfly has the same value.
template <bool Warp, typename V, typename C>
__device__ __forceinline__ V all_reduce(V v, C combine, i32 g) {
	if (Warp) {
		for (int d = g >> 1; d > 0; d >>= 1) v = combine(v, shfl_xor(v, d));
		return v;
	}
	return block_broadcast(block_reduce(v, combine));
}

template <typename F, bool Log, bool Warp>
__device__ void softmax_contig(F *__restrict__ out, const F *__restrict__ x, i64 nrows, i32 n, i64 os, i64 xs) {
	typedef Vec<F> V;
	const i32 W = V::W;
	// g threads per row: the block, or in the warp form the fewest lanes
	// (a power of 2, at least W for the head and tail, at most 32) that
	// take a vector each, so that a warp does 32/g short rows at once.
	i32 g = blockDim.x, t = threadIdx.x, sub = 0;
	i64 r = blockIdx.x, step = gridDim.x;
	if (Warp) {
		const i32 need = (n + W - 1) / W, lane = threadIdx.x & 31;
		for (g = W; g < need && g < 32; g <<= 1) {
		}
		t = lane & (g - 1);
		sub = lane / g;
		r = ((i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * (32 / g);
		step = (i64)gridDim.x * (blockDim.x >> 5) * (32 / g);
	}
	// r (the warp's or block's first row) is the same for every thread of
	// a warp or block, so all of them reach the shuffles and barriers; a
	// group past the last row takes an empty row (no loads or stores).
	for (; r < nrows; r += step) {
		const bool valid = r + sub < nrows;
		const i64 row = valid ? r + sub : 0;
		const F *xr = x + row * xs;
		F *orow = out + row * os;
		Split<F> s(xr, valid ? n : 0);
		const V *xv = (const V *)(xr + s.head);
		const i32 tail0 = s.head + s.nv * W; // the first tail element
		// This thread's head and tail elements (lane t < head, t < tail) and
		// its cached vectors (k*g + t < nv); the rest of the row is read
		// from memory in each pass.
		const bool hasH = t < s.head, hasT = t < s.tail;
		F h = hasH ? xr[t] : -(F)inf_f64(), tl = hasT ? xr[tail0 + t] : -(F)inf_f64();
		V c[CACHE];
		F m = MaxNaN()(h, tl);
#pragma unroll
		for (int k = 0; k < CACHE; k++) {
			if (k * g + t < s.nv) {
				c[k] = *vec_at(xv + k * g + t);
#pragma unroll
				for (int e = 0; e < W; e++) m = MaxNaN()(m, c[k].v[e]);
			}
		}
		for (i32 i = CACHE * g + t; i < s.nv; i += g) {
			V w = *vec_at(xv + i);
#pragma unroll
			for (int e = 0; e < W; e++) m = MaxNaN()(m, w.v[e]);
		}
		m = all_reduce<Warp>(m, MaxNaN(), g);

		// The sum of exp(x - m): each vector's in the dtype, their sums in
		// float64, as the cpu's float32 row sums float32 lanes and their
		// sums in float64 (backends/cpu/shim.c, softmax_row); a float32 to
		// float64 conversion per element would run at a small fraction of
		// float32's rate on an H200. Softmax keeps each exponential (in
		// place of x) for the write, log_softmax needs only x - m.
		double sum = 0;
		if (hasH) {
			F e = m_exp(h - m);
			sum += (double)e;
			if (!Log) h = e;
		}
		if (hasT) {
			F e = m_exp(tl - m);
			sum += (double)e;
			if (!Log) tl = e;
		}
#pragma unroll
		for (int k = 0; k < CACHE; k++) {
			if (k * g + t < s.nv) {
				F vs = 0; // a vector's exponentials, widened once
#pragma unroll
				for (int e = 0; e < W; e++) {
					F ex = m_exp(c[k].v[e] - m);
					vs += ex;
					if (!Log) c[k].v[e] = ex;
				}
				sum += (double)vs;
			}
		}
		for (i32 i = CACHE * g + t; i < s.nv; i += g) {
			V w = *vec_at(xv + i);
			F vs = 0;
#pragma unroll
			for (int e = 0; e < W; e++) vs += m_exp(w.v[e] - m);
			sum += (double)vs;
		}
		sum = all_reduce<Warp>(sum, Plus(), g);

		// One element's result from its exponential (softmax), scaled in the
		// dtype by the sum's reciprocal rounded to it, as the cpu's float32
		// row does; or from x (log_softmax), x - m less log(sum) in float64
		// and rounded once, where float32 would lose a result near zero.
		const F inv = (F)(1.0 / sum);
		const double ls = log(sum);
		auto fin = [&](F v) -> F { return Log ? (F)((double)(v - m) - ls) : v * inv; };
		if (hasH) orow[t] = fin(h);
		if (hasT) orow[tail0 + t] = fin(tl);
		const bool vout = aligned_like(xr, (const F *)orow);
		V *ov = (V *)(orow + s.head);
#pragma unroll
		for (int k = 0; k < CACHE; k++) {
			i32 i = k * g + t;
			if (i < s.nv) {
				V w;
#pragma unroll
				for (int e = 0; e < W; e++) w.v[e] = fin(c[k].v[e]);
				if (vout)
					*vec_at(ov + i) = w;
				else
#pragma unroll
					for (int e = 0; e < W; e++) orow[s.head + i * W + e] = w.v[e];
			}
		}
		for (i32 i = CACHE * g + t; i < s.nv; i += g) {
			V w = *vec_at(xv + i);
#pragma unroll
			for (int e = 0; e < W; e++) w.v[e] = fin(Log ? w.v[e] : m_exp(w.v[e] - m));
			if (vout)
				*vec_at(ov + i) = w;
			else
#pragma unroll
				for (int e = 0; e < W; e++) orow[s.head + i * W + e] = w.v[e];
		}
	}
}

#define LATHE_SOFTMAX(F, sfx)                                                                               \
	extern "C" __global__ void softmax_##sfx(F *out, const F *x, Rows R, i64 nrows, i64 n) {           \
		softmax_rows<F, false>(out, x, R, nrows, n);                                                \
	}                                                                                                   \
	extern "C" __global__ void log_softmax_##sfx(F *out, const F *x, Rows R, i64 nrows, i64 n) {       \
		softmax_rows<F, true>(out, x, R, nrows, n);                                                 \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(SOFTMAX_THREADS, SOFTMAX_MIN_BLOCKS(F))                                     \
	    softmax_warp_##sfx(F *out, const F *x, i64 nrows, i32 n, i64 os, i64 xs) {                      \
		softmax_contig<F, false, true>(out, x, nrows, n, os, xs);                                   \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(SOFTMAX_THREADS, SOFTMAX_MIN_BLOCKS(F))                                     \
	    log_softmax_warp_##sfx(F *out, const F *x, i64 nrows, i32 n, i64 os, i64 xs) {                  \
		softmax_contig<F, true, true>(out, x, nrows, n, os, xs);                                    \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(SOFTMAX_THREADS, SOFTMAX_MIN_BLOCKS(F))                                     \
	    softmax_block_##sfx(F *out, const F *x, i64 nrows, i32 n, i64 os, i64 xs) {                     \
		softmax_contig<F, false, false>(out, x, nrows, n, os, xs);                                  \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(SOFTMAX_THREADS, SOFTMAX_MIN_BLOCKS(F))                                     \
	    log_softmax_block_##sfx(F *out, const F *x, i64 nrows, i32 n, i64 os, i64 xs) {                 \
		softmax_contig<F, true, false>(out, x, nrows, n, os, xs);                                   \
	}
LATHE_FLOATS(LATHE_SOFTMAX)
