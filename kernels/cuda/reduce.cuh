// reduce.cuh: the reductions' accumulators and kernel templates, shared by
// reduce.cu (sum, prod, max, min, argmax, argmin, cumsum) and moments.cu
// (var, std, logsumexp), which instantiate them; reduce.cu's comment is
// the contract of every kernel made here.
#pragma once
#include "lathe.cuh"
#include "vec.cuh"

// The most bytes an accumulator takes, which the host allocates per
// partial result (backends/cuda/ops_reduce.go, accBytes).
#define LATHE_ACC_MAX 32

template <typename T> struct SumOp {
	typedef typename Accum<T>::type Acc;
	typedef T Out;
	__device__ Acc identity() const { return 0; }
	__device__ Acc push(Acc a, T v, i64) const { return acc_add(a, (Acc)v); }
	__device__ Acc operator()(Acc a, Acc b) const { return acc_add(a, b); }
	__device__ Out finish(Acc a, double) const { return (Out)a; }
};

template <typename T> struct ProdOp {
	typedef typename Accum<T>::type Acc;
	typedef T Out;
	__device__ Acc identity() const { return 1; }
	__device__ Acc push(Acc a, T v, i64) const { return acc_mul(a, (Acc)v); }
	__device__ Acc operator()(Acc a, Acc b) const { return acc_mul(a, b); }
	__device__ Out finish(Acc a, double) const { return (Out)a; }
};

// An extreme so far, or none yet (has == 0): integers have no -inf to
// start from.
template <typename T> struct Extreme {
	T v;
	i32 has;
};

template <typename T, bool More> struct ExtremeOp {
	typedef Extreme<T> Acc;
	typedef T Out;
	__device__ Acc identity() const {
		Acc a;
		a.v = 0;
		a.has = 0;
		return a;
	}
	__device__ Acc push(Acc a, T v, i64) const {
		Acc b;
		b.v = v;
		b.has = 1;
		return (*this)(a, b);
	}
	__device__ Acc operator()(Acc a, Acc b) const {
		if (!a.has) return b;
		if (!b.has) return a;
		if (is_nan(a.v)) return a;
		if (is_nan(b.v)) return b;
		return (More ? b.v > a.v : b.v < a.v) ? b : a;
	}
	__device__ Out finish(Acc a, double) const { return a.v; }
};

// A candidate value and its index in the row; i < 0 is none yet.
template <typename T> struct Indexed {
	T v;
	i64 i;
};

template <typename T, bool More> struct ArgOp {
	typedef Indexed<T> Acc;
	typedef i64 Out;
	__device__ Acc identity() const {
		Acc a;
		a.v = 0;
		a.i = -1;
		return a;
	}
	__device__ Acc push(Acc a, T v, i64 j) const {
		Acc b;
		b.v = v;
		b.i = j;
		return (*this)(a, b);
	}
	// The better of two candidates: a NaN beats any number, a larger (More)
	// or smaller value beats another, and of equals the lower index wins.
	// That order is total, so any combining order gives the cpu's answer
	// (the first extreme in row order).
	__device__ Acc operator()(Acc a, Acc b) const {
		if (a.i < 0) return b;
		if (b.i < 0) return a;
		bool an = is_nan(a.v), bn = is_nan(b.v);
		if (an || bn) {
			if (an && bn) return a.i < b.i ? a : b;
			return an ? a : b;
		}
		if (a.v == b.v) return a.i < b.i ? a : b;
		return (More ? a.v > b.v : a.v < b.v) ? a : b;
	}
	__device__ Out finish(Acc a, double) const { return a.i; }
};

// Welford's running mean and sum of squared deviations, combined with Chan
// et al.'s pairwise update ("Updating formulae and a pairwise algorithm for
// computing sample variances", 1979), in float64.
struct Moments {
	double n, mean, m2;
};

template <typename T, bool Root> struct VarOp {
	typedef Moments Acc;
	typedef T Out;
	__device__ Acc identity() const {
		Acc a;
		a.n = a.mean = a.m2 = 0;
		return a;
	}
	__device__ Acc push(Acc a, T v, i64) const {
		double x = (double)v;
		a.n += 1;
		double d = x - a.mean;
		a.mean += d / a.n;
		a.m2 += d * (x - a.mean);
		return a;
	}
	__device__ Acc operator()(Acc a, Acc b) const {
		if (a.n == 0) return b;
		if (b.n == 0) return a;
		Acc c;
		c.n = a.n + b.n;
		double d = b.mean - a.mean;
		c.mean = a.mean + d * (b.n / c.n);
		c.m2 = a.m2 + b.m2 + d * d * (a.n * b.n / c.n);
		return c;
	}
	// An empty row gives 0/0, NaN, as the cpu kernel returns.
	__device__ Out finish(Acc a, double corr) const {
		double div = a.n - corr;
		double v = a.m2 / (div > 0 ? div : 0.0);
		if (Root) v = sqrt(v);
		return (Out)v;
	}
};

// The running maximum m and the sum s of exp(x - m), in float64, rescaled
// when m grows (the "online" form of the max-shifted sum).
struct LogSum {
	double m, s;
};

template <typename T> struct LseOp {
	typedef LogSum Acc;
	typedef T Out;
	__device__ Acc identity() const {
		Acc a;
		a.m = -inf_f64();
		a.s = 0;
		return a;
	}
	__device__ Acc push(Acc a, T v, i64) const {
		double x = (double)v;
		if (is_nan(x) || is_nan(a.m)) {
			a.m = nan_f64();
			return a;
		}
		if (x > a.m) {
			// a.s * exp(-inf) is 0, also when a is the identity.
			a.s = (a.m == -inf_f64() ? 0.0 : a.s * exp(a.m - x)) + 1;
			a.m = x;
		} else if (x != -inf_f64()) {
			a.s += exp(x - a.m);
		}
		return a;
	}
	__device__ Acc operator()(Acc a, Acc b) const {
		if (is_nan(a.m)) return a;
		if (is_nan(b.m)) return b;
		if (b.m > a.m) {
			Acc t = a;
			a = b;
			b = t;
		}
		// a.m is the larger; b's terms scale by exp(b.m - a.m) (0 when b is
		// empty or all -inf). An infinite a.m is the result by itself.
		if (b.m != -inf_f64() && a.m != inf_f64()) a.s += b.s * exp(b.m - a.m);
		return a;
	}
	__device__ Out finish(Acc a, double) const {
		if (is_nan(a.m) || a.m == inf_f64() || a.m == -inf_f64()) return (Out)a.m;
		return (Out)(a.m + log(a.s));
	}
};

template <typename T, typename Op>
__device__ void reduce_thread(typename Op::Out *out, const T *x, const Rows &R, i64 nrows, i64 n, double corr) {
	Op op;
	LATHE_FOR(r, nrows) {
		i64 base = row_base(R, 1, r);
		typename Op::Acc a = op.identity();
		for (i64 j = 0; j < n; j++) a = op.push(a, x[base + row_elem(R, 1, j)], j);
		out[r] = op.finish(a, corr);
	}
}

template <typename T, typename Op>
__device__ void reduce_block(typename Op::Out *out, const T *x, const Rows &R, i64 nrows, i64 n, i64 splits,
			     typename Op::Acc *partial, double corr) {
	static_assert(sizeof(typename Op::Acc) <= LATHE_ACC_MAX, "partial results are LATHE_ACC_MAX bytes apart at most");
	Op op;
	i64 chunk = (n + splits - 1) / splits;
	// task is the same for every thread of the block, so the block's
	// __syncthreads (in block_reduce) are reached by all of its threads.
	for (i64 task = blockIdx.x; task < nrows * splits; task += gridDim.x) {
		i64 r = task / splits, part = task - r * splits;
		i64 lo = part * chunk, hi = lo + chunk < n ? lo + chunk : n;
		i64 base = row_base(R, 1, r);
		typename Op::Acc a = op.identity();
		for (i64 j = lo + threadIdx.x; j < hi; j += blockDim.x) a = op.push(a, x[base + row_elem(R, 1, j)], j);
		a = block_reduce(a, op);
		if (threadIdx.x == 0) {
			if (splits == 1)
				out[r] = op.finish(a, corr);
			else
				partial[task] = a;
		}
	}
}

// push_vec pushes a vector's W elements, j the index of the first.
template <typename Op, typename T>
__device__ __forceinline__ typename Op::Acc push_vec(const Op &op, typename Op::Acc a, const Vec<T> &w, i64 j) {
#pragma unroll
	for (int e = 0; e < Vec<T>::W; e++) a = op.push(a, w.v[e], j + e);
	return a;
}

// A float32 sum adds a vector's four in float32 and widens their sum once:
// the cpu's own float32 sum (backends/cpu/shim.c, lathe_sum_f32) is the same
// cascade, float32 lanes of 8 values each and their sums in float64, and
// each value here goes through at most 2 float32 roundings (the cpu's: up
// to 13). It saves three of every four float32-to-float64 conversions,
// which run at a small fraction of float32's rate on an H200.
__device__ __forceinline__ double push_vec(const SumOp<float> &, double a, const Vec<float> &w, i64) {
	return a + (double)((w.v[0] + w.v[1]) + (w.v[2] + w.v[3]));
}

// reduce_contig's blocks (at most 256 threads, as the host launches them)
// and the fewest a multiprocessor must hold (__launch_bounds__): for the
// accumulators of 8 bytes (sum, prod, float max and min) 8, 32 registers a
// thread (ptxas -v for sm_90: no spills), so that
// a full reduction's 1024 blocks are one wave on an H200's 132
// multiprocessors (at 40 registers they were 1.3); the larger ones (argmax's
// pair, var's triple, logsumexp's pair) need more registers and get 4, as
// do the several-run kernels (<op>_runs_), whose loop over runs spills at 32.
#define REDUCE_MIN_BLOCKS(OP) (sizeof(OP::Acc) <= 8 ? 8 : 4)
#define REDUCE_UNROLL 2

// reduce_contig is reduce_block for rows made of nruns runs of L contiguous
// (stride 1) elements, runs qstride apart and rows rstride apart: element j
// = q*L + e of row r is x[r*rstride + q*qstride + e]. One run (nruns 1) is a
// full reduction or one over the innermost dims of a contiguous tensor;
// several are one over an outer and the innermost dims with a kept dim
// between (batch norm's statistics over N, H, W of [N, C, H, W]: a run per
// n, H*W long). A split covers ceil(n/splits) of a row's n = nruns*L
// elements and reduces its part of each run it meets.
// It finds no element through Rows (row_at's 64-bit divisions per element
// were most of the generic kernel's time), counts within a split in 32 bits,
// and reads 16-byte vectors from the split's first aligned element,
// REDUCE_UNROLL of them per thread issued before their pushes (the loads do
// not wait on each other, the accumulator chain does not wait on memory;
// two are 64 KiB in flight per multiprocessor at 2048 threads, well over
// the ~25 KiB that its share of an H200's bandwidth needs, and four would
// cost the registers of the one-wave bound above). Splits are
// rounded up to whole vectors so that, in an aligned row, every split after
// the first starts aligned.
template <typename T, typename Op, bool Runs>
__device__ void reduce_contig(typename Op::Out *out, const T *__restrict__ x, i64 nrows, i64 nruns, i64 L, i64 rstride,
			      i64 qstride, i64 splits, typename Op::Acc *partial, double corr) {
	static_assert(sizeof(typename Op::Acc) <= LATHE_ACC_MAX, "partial results are LATHE_ACC_MAX bytes apart at most");
	typedef Vec<T> V;
	const i32 W = V::W;
	Op op;
	const i64 n = nruns * L;
	i64 chunk = (n + splits - 1) / splits;
	chunk = (chunk + W - 1) / W * W;
	i32 t = threadIdx.x, bd = blockDim.x;
	for (i64 task = blockIdx.x; task < nrows * splits; task += gridDim.x) {
		i64 r = task / splits, part = task - r * splits;
		i64 lo = part * chunk, hi = lo + chunk < n ? lo + chunk : n;
		typename Op::Acc a = op.identity();
		// The split's part of each run it meets, from element e0 of run
		// lo/L; the loop is the same for every thread of the block. Within
		// a split, counts are 32-bit; the pointer moves run to run.
		i64 q = lo < hi ? lo / L : 0, e0 = lo - q * L;
		const T *p = x + r * rstride + q * qstride + e0;
		for (i32 left = hi > lo ? (i32)(hi - lo) : 0; left > 0;) {
			i32 len = !Runs || L - e0 >= left ? left : (i32)(L - e0);
			Split<T> s(p, len);
			if (t < s.head) a = op.push(a, p[t], lo + t);
			if (t < s.tail) a = op.push(a, p[len - s.tail + t], lo + (len - s.tail + t));
			const V *v = (const V *)(p + s.head);
			i64 j0 = lo + s.head; // the element index of v[0].v[0], for argmax and argmin
			i32 k = t;
			for (; k + (REDUCE_UNROLL - 1) * bd < s.nv; k += REDUCE_UNROLL * bd) {
				V w[REDUCE_UNROLL];
#pragma unroll
				for (int u = 0; u < REDUCE_UNROLL; u++) w[u] = *vec_at(v + k + u * bd);
#pragma unroll
				for (int u = 0; u < REDUCE_UNROLL; u++) a = push_vec(op, a, w[u], j0 + (i64)(k + u * bd) * W);
			}
			for (; k < s.nv; k += bd) a = push_vec(op, a, *vec_at(v + k), j0 + (i64)k * W);
			if (!Runs) break; // one run: the split is one part (and no registers kept for more)
			left -= len;
			lo += len;
			p += qstride - e0; // the next run's first element
			e0 = 0;
		}
		a = block_reduce(a, op);
		if (threadIdx.x == 0) {
			if (splits == 1)
				out[r] = op.finish(a, corr);
			else
				partial[task] = a;
		}
	}
}

// The most warps of a reduce_cols block: 8 warps of 8 k each are enough
// loads in flight, and the shared accumulators stay small (8 KiB of 32-byte
// ones) beside eight blocks a multiprocessor.
#define COLS_WARPS 8

// reduce_cols reduces columns: output (a, c) is the reduction over k < K of
// x[a*sA + k*sK + c], for a < A and c < C (out[a*C + c]): a reduction over
// dims that are not innermost, with the innermost kept dim contiguous (a
// bias gradient's sum over dim 0 of [B, C]). The generic kernels give each
// column a block, whose threads read elements sK apart: a 32-byte sector
// per element. Here a warp reads 32 neighbouring columns of one k (128
// contiguous bytes of float32), the block's warps take every blockDim.x/32-th
// k, and the warps' accumulators meet in shared memory. A task is a tile of
// 32 columns of one a and one split of k; splits > 1 writes partial[(a*C +
// c)*splits + split] for <op>_finish_<dtype>, as the block form does.
template <typename T, typename Op>
__device__ void reduce_cols(typename Op::Out *out, const T *__restrict__ x, i64 A, i64 C, i64 K, i64 sA, i64 sK,
			    i64 splits, typename Op::Acc *partial, double corr) {
	typedef typename Op::Acc Acc;
	Op op;
	__shared__ Acc sh[COLS_WARPS][32]; // [warp][lane]
	const i32 lane = threadIdx.x & 31, ty = threadIdx.x >> 5, ny = blockDim.x >> 5;
	const i64 tiles = (C + 31) / 32, chunk = (K + splits - 1) / splits;
	// task is the same for every thread of the block, so all of them reach
	// the barriers.
	for (i64 task = blockIdx.x; task < A * tiles * splits; task += gridDim.x) {
		i64 q = task / splits, part = task - q * splits;
		i64 a = q / tiles, c = (q - a * tiles) * 32 + lane;
		i64 lo = part * chunk, hi = lo + chunk < K ? lo + chunk : K;
		Acc acc = op.identity();
		if (c < C) {
			const T *p = x + a * sA + c + (lo + ty) * sK;
			const i64 step = ny * sK;
#pragma unroll 4
			for (i64 k = lo + ty; k < hi; k += ny, p += step) acc = op.push(acc, *p, k);
		}
		sh[ty][lane] = acc;
		__syncthreads();
		if (ty == 0 && c < C) {
			for (i32 y = 1; y < ny; y++) acc = op(acc, sh[y][lane]);
			if (splits == 1)
				out[a * C + c] = op.finish(acc, corr);
			else
				partial[(a * C + c) * splits + part] = acc;
		}
		__syncthreads(); // sh is written again by the next task
	}
}

template <typename T, typename Op>
__device__ void reduce_finish(typename Op::Out *out, const typename Op::Acc *partial, i64 nrows, i64 splits, double corr) {
	Op op;
	for (i64 r = blockIdx.x; r < nrows; r += gridDim.x) {
		typename Op::Acc a = op.identity();
		for (i64 p = threadIdx.x; p < splits; p += blockDim.x) a = op(a, partial[r * splits + p]);
		a = block_reduce(a, op);
		if (threadIdx.x == 0) out[r] = op.finish(a, corr);
	}
}


#define LATHE_REDUCE(T, sfx, name, OP)                                                                              \
	extern "C" __global__ void name##_thread_##sfx(OP::Out *out, const T *x, Rows R, i64 nrows, i64 n, double corr) { \
		reduce_thread<T, OP>(out, x, R, nrows, n, corr);                                                    \
	}                                                                                                           \
	extern "C" __global__ void name##_block_##sfx(OP::Out *out, const T *x, Rows R, i64 nrows, i64 n, i64 splits,  \
						      OP::Acc *partial, double corr) {                              \
		reduce_block<T, OP>(out, x, R, nrows, n, splits, partial, corr);                                    \
	}                                                                                                           \
	extern "C" __global__ void name##_finish_##sfx(OP::Out *out, const OP::Acc *partial, i64 nrows, i64 splits,    \
						       double corr) {                                               \
		reduce_finish<T, OP>(out, partial, nrows, splits, corr);                                            \
	} \
	extern "C" __global__ void __launch_bounds__(256, REDUCE_MIN_BLOCKS(OP))                                   \
	    name##_contig_##sfx(OP::Out *out, const T *x, i64 nrows, i64 n, i64 rstride, i64 splits,                  \
				OP::Acc *partial, double corr) {                                                    \
		reduce_contig<T, OP, false>(out, x, nrows, 1, n, rstride, 0, splits, partial, corr);                \
	}                                                                                                           \
	extern "C" __global__ void __launch_bounds__(256, 4)                                                       \
	    name##_runs_##sfx(OP::Out *out, const T *x, i64 nrows, i64 nruns, i64 L, i64 rstride, i64 qstride,        \
			      i64 splits, OP::Acc *partial, double corr) {                                          \
		reduce_contig<T, OP, true>(out, x, nrows, nruns, L, rstride, qstride, splits, partial, corr);       \
	}                                                                                                           \
	extern "C" __global__ void name##_cols_##sfx(OP::Out *out, const T *x, i64 A, i64 C, i64 K, i64 sA, i64 sK,     \
						     i64 splits, OP::Acc *partial, double corr) {                   \
		reduce_cols<T, OP>(out, x, A, C, K, sA, sK, splits, partial, corr);                                 \
	}

// The ops whose functor has a comma in its template arguments get a name
// first, so the macro sees one argument.
#define LATHE_NUMERIC_REDUCE(T, sfx)                             \
	typedef SumOp<T> Sum_##sfx;                              \
	typedef ProdOp<T> Prod_##sfx;                            \
	typedef ExtremeOp<T, true> Max_##sfx;                    \
	typedef ExtremeOp<T, false> Min_##sfx;                   \
	typedef ArgOp<T, true> Argmax_##sfx;                     \
	typedef ArgOp<T, false> Argmin_##sfx;                    \
	LATHE_REDUCE(T, sfx, sum, Sum_##sfx)                     \
	LATHE_REDUCE(T, sfx, prod, Prod_##sfx)                   \
	LATHE_REDUCE(T, sfx, max, Max_##sfx)                     \
	LATHE_REDUCE(T, sfx, min, Min_##sfx)                     \
	LATHE_REDUCE(T, sfx, argmax, Argmax_##sfx)               \
	LATHE_REDUCE(T, sfx, argmin, Argmin_##sfx)
#define LATHE_FLOAT_REDUCE(T, sfx)                               \
	typedef VarOp<T, false> Var_##sfx;                       \
	typedef VarOp<T, true> Std_##sfx;                        \
	typedef LseOp<T> Lse_##sfx;                              \
	LATHE_REDUCE(T, sfx, var, Var_##sfx)                     \
	LATHE_REDUCE(T, sfx, std, Std_##sfx)                     \
	LATHE_REDUCE(T, sfx, logsumexp, Lse_##sfx)
