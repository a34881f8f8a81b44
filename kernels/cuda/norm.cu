// norm.cu: the fused layer norm and batch norm (dispatch/ops/layernorm.go,
// batchnorm.go). The semantics are lathe's cpu kernels'
// (backends/cpu/layernorm.go, batchnorm.go), whose comments give the
// formulas and their sources: every mean, variance and gradient sum is
// accumulated in float64 (for float32 data too), the variance is the
// centred second pass over the data (not Σx² - (Σx)²/M, which cancels), the
// layer norm backward recomputes a row's statistics with the forward's own
// code (ln_stats), and every sum over rows or samples is taken in a fixed
// order that depends on the shape alone: partial sums per chunk of rows
// (col_partial), then a block per column or channel that adds the chunks'
// partials (channel_total). There are no atomics, so a result is the same
// bits on every run and every GPU. NaN propagates through the sums. The
// float32 layer norm's per-element passes, after the float64 statistics,
// are the cpu's AVX2 loops' (ln_affine, ln_dx).
//
// Every pointer is to a contiguous (row-major) tensor: the host copies a
// strided input first (backends/cuda/ops_norm.go). Indices are i64.
//
// What the host emulation cannot show, and the launch contracts below are
// written for: every read of x and g is coalesced (a block's threads read
// consecutive 16-byte groups of a row, or consecutive columns of a row
// chunk), 16-byte loads and stores where the data is aligned, the
// elementwise batch norm passes find each element's channel without a
// division in the loop (channel_walk), and the reductions' sizes (block per
// row, chunks of at least colMinChunk rows, about 1024 blocks) are chosen
// on the host (ops_norm.go) so that an H200's 132 multiprocessors have
// work. A layer norm row is read three times by its block (mean, centred
// squares, write) and four times by the backward's dx kernel: the repeats
// of a row of D ≤ 8K float32 hit L1, so the DRAM traffic is one read of x
// (and g) and one write. What it does not do: a row of more than ~8K
// elements is re-read from L2; few rows of a huge D leave most
// multiprocessors idle (a block per row); batch norm's moments read x
// twice (the centred second pass).
#include "lathe.cuh"

// NormPair is two float64 sums carried together (Σg and Σg·x̂; a single sum
// leaves b at 0); NormPairSum adds two.
struct NormPair {
	double a, b;
};
struct NormPairSum {
	__device__ NormPair operator()(NormPair x, NormPair y) const {
		NormPair r;
		r.a = x.a + y.a;
		r.b = x.b + y.b;
		return r;
	}
};
struct NormSum {
	__device__ double operator()(double x, double y) const { return x + y; }
};

// ---- Layer norm over rows of d contiguous elements.
//
// A row is read in groups of LN_V(F) consecutive elements (16 bytes), thread
// t of the block taking groups t, t + blockDim.x, ...: one 16-byte load per
// group where the row is 16-byte aligned, else one load per element, and
// each thread adds its elements in the same order either way, so that a
// row's statistics do not depend on where its copy lies (the backward's x
// may be a fresh copy where the forward's was a view).

#define LN_V(F) ((int)(16 / sizeof(F)))

template <typename F> struct alignas(16) Vec16 {
	F v[16 / sizeof(F)];
};

__device__ __forceinline__ bool aligned16(const void *p) { return ((u64)p & 15) == 0; }

// load_group is group g of the row at p (d elements): v[u] is element
// g·V + u, 0 past the row's end.
template <typename F>
__device__ __forceinline__ void load_group(const F *p, i64 g, i64 d, bool aligned, F (&v)[16 / sizeof(F)]) {
	i64 j = g * LN_V(F);
	if (aligned && j + LN_V(F) <= d) {
		Vec16<F> t = *(const Vec16<F> *)(p + j);
#pragma unroll
		for (int u = 0; u < LN_V(F); u++) v[u] = t.v[u];
	} else {
#pragma unroll
		for (int u = 0; u < LN_V(F); u++) v[u] = j + u < d ? p[j + u] : (F)0;
	}
}

// ln_stats is row xr's mean and 1/√(var + eps), the biased variance, the
// same in every thread of the block: the forward's and the backward's.
template <typename F>
__device__ void ln_stats(const F *xr, i64 d, double eps, double &mean, double &rstd) {
	const int V = LN_V(F);
	bool al = aligned16(xr);
	double s = 0;
	for (i64 g = threadIdx.x; g * V < d; g += blockDim.x) {
		F v[V];
		load_group(xr, g, d, al, v);
#pragma unroll
		for (int u = 0; u < V; u++)
			if (g * V + u < d) s += (double)v[u];
	}
	mean = block_broadcast(block_reduce(s, NormSum())) / (double)d;
	double q = 0;
	for (i64 g = threadIdx.x; g * V < d; g += blockDim.x) {
		F v[V];
		load_group(xr, g, d, al, v);
#pragma unroll
		for (int u = 0; u < V; u++) {
			double c = (double)v[u] - mean;
			if (g * V + u < d) q += c * c;
		}
	}
	q = block_broadcast(block_reduce(q, NormSum()));
	rstd = 1.0 / sqrt(q / (double)d + eps);
}

// ln_affine is one output of the forward, rs being (F)rstd. float64 as the
// cpu's Go loop: (x - mean)·rstd·w + b, rounded once. float32 as the cpu's
// AVX2 loop (lathe_layer_norm_f32): x - mean in float64 rounded to float32,
// then ·rs·w + b in float32; two conversions an element where the float64
// form takes four, and a Hopper SM converts between float32 and float64 at
// 16 an clock, a quarter of its float64 rate: with the statistics' two,
// six would hold the kernel near that limit at DRAM's speed.
__device__ __forceinline__ float ln_affine(float x, double mean, double, float rs, float w, float b) {
	return (float)((double)x - mean) * rs * w + b;
}
__device__ __forceinline__ double ln_affine(double x, double mean, double rstd, double, double w, double b) {
	return (x - mean) * rstd * w + b;
}

// Launch contract of layer_norm_<dtype>(F *y, const F *x, const F *w,
//   const F *b, i64 rows, i64 d, double eps):
// y, x [rows, d], w, b [d], all contiguous; d >= 1. One block per row, a
// grid-stride loop over rows (1-D grid of any size); blockDim.x a multiple
// of 32, at most 1024 (the host takes min(d/LN_V rounded up to 32, 256),
// and the backward's dx kernel must be launched with the same block size
// so that its statistics are the forward's bits). 16-byte loads and stores
// where a row and w and b are 16-byte aligned (d a multiple of LN_V).
template <typename F>
__device__ void layer_norm(F *y, const F *x, const F *w, const F *b, i64 rows, i64 d, double eps) {
	const int V = LN_V(F);
	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		const F *xr = x + r * d;
		F *yr = y + r * d;
		double mean, rstd;
		ln_stats(xr, d, eps, mean, rstd);
		F rs = (F)rstd;
		bool al = aligned16(xr) && aligned16(yr) && aligned16(w) && aligned16(b);
		for (i64 g = threadIdx.x; g * V < d; g += blockDim.x) {
			i64 j = g * V;
			if (al && j + V <= d) {
				Vec16<F> xv = *(const Vec16<F> *)(xr + j), wv = *(const Vec16<F> *)(w + j),
					 bv = *(const Vec16<F> *)(b + j), yv;
#pragma unroll
				for (int u = 0; u < V; u++) yv.v[u] = ln_affine(xv.v[u], mean, rstd, rs, wv.v[u], bv.v[u]);
				*(Vec16<F> *)(yr + j) = yv;
			} else {
#pragma unroll
				for (int u = 0; u < V; u++)
					if (j + u < d) yr[j + u] = ln_affine(xr[j + u], mean, rstd, rs, w[j + u], b[j + u]);
			}
		}
	}
}

// ln_mul is g·w rounded to F and never fused into the add that follows
// (nvcc contracts a·b + c into one fma): the backward's Σ dx̂ and each
// dx̂ - mean(dx̂) must see the same dx̂, so that a row of one value gets a
// gradient of exactly 0, not rstd times the product's rounding error.
__device__ __forceinline__ float ln_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double ln_mul(double a, double b) { return __dmul_rn(a, b); }

// ln_dx is one element of the backward's dx, from the row's statistics and
// m1 = mean(dx̂), m2 = mean(dx̂·x̂) (both rounded to F; rs is (F)rstd).
// float64 as the cpu's Go loop: rstd·(dx̂ - m1 - x̂·m2) with x̂ = (x -
// mean)·rstd. float32 as the cpu's AVX2 loop (lathe_layer_norm_backward_f32):
// x - mean in float64 rounded to float32, the rest in float32, two
// conversions an element where the float64 form takes four (see
// ln_affine).
__device__ __forceinline__ float ln_dx(float x, float g, float w, double mean, double, float rs, float m1, float m2) {
	float xh = (float)((double)x - mean) * rs;
	return (ln_mul(g, w) - m1 - xh * m2) * rs;
}
__device__ __forceinline__ double ln_dx(double x, double g, double w, double mean, double rstd, double, double m1,
					double m2) {
	double xh = (x - mean) * rstd;
	return rstd * (ln_mul(g, w) - m1 - xh * m2);
}

// Launch contract of layer_norm_bwd_dx_<dtype>(F *dx, double *stats,
//   const F *x, const F *w, const F *g, i64 rows, i64 d, double eps):
// as layer_norm's (the same block size for the same d, 16-byte accesses
// where x, g, w and dx are aligned); g and dx [rows, d].
// Writes each row's dx = rstd·(g·w - mean(g·w) - x̂·mean(g·w·x̂)) (ln_dx;
// the sums in float64) and its mean and rstd to stats[2r], stats[2r+1]
// (scratch of 2·rows float64s), which layer_norm_bwd_dwb then reads.
template <typename F>
__device__ void layer_norm_bwd_dx(F *dx, double *stats, const F *x, const F *w, const F *g, i64 rows, i64 d,
				  double eps) {
	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		const F *xr = x + r * d, *gr = g + r * d;
		F *dxr = dx + r * d;
		double mean, rstd;
		ln_stats(xr, d, eps, mean, rstd);
		const int V = LN_V(F);
		bool al = aligned16(xr) && aligned16(gr) && aligned16(w), alo = al && aligned16(dxr);
		NormPair s = {0, 0};
		for (i64 q = threadIdx.x; q * V < d; q += blockDim.x) {
			F xv[V], gv[V], wv[V];
			load_group(xr, q, d, al, xv);
			load_group(gr, q, d, al, gv);
			load_group(w, q, d, al, wv);
#pragma unroll
			for (int u = 0; u < V; u++) {
				double xh = ((double)xv[u] - mean) * rstd, dxh = (double)ln_mul(gv[u], wv[u]);
				if (q * V + u < d) {
					s.a += dxh;
					s.b += dxh * xh;
				}
			}
		}
		s = block_broadcast(block_reduce(s, NormPairSum()));
		F rs = (F)rstd, m1 = (F)(s.a / (double)d), m2 = (F)(s.b / (double)d);
		for (i64 q = threadIdx.x; q * V < d; q += blockDim.x) {
			F xv[V], gv[V], wv[V];
			Vec16<F> out;
			load_group(xr, q, d, al, xv);
			load_group(gr, q, d, al, gv);
			load_group(w, q, d, al, wv);
#pragma unroll
			for (int u = 0; u < V; u++) out.v[u] = ln_dx(xv[u], gv[u], wv[u], mean, rstd, rs, m1, m2);
			i64 j = q * V;
			if (alo && j + V <= d) {
				*(Vec16<F> *)(dxr + j) = out;
			} else {
#pragma unroll
				for (int u = 0; u < V; u++)
					if (j + u < d) dxr[j + u] = out.v[u];
			}
		}
		if (threadIdx.x == 0) {
			stats[2 * r] = mean;
			stats[2 * r + 1] = rstd;
		}
	}
}

// ---- Column sums over chunks of rows, and their totals per channel.

// col_partial: x is read as [n, k] (row-major). Block (blockIdx.x, p) sums
// fn's pair over the rows [p·chunk, min(n, (p+1)·chunk)) of each of its
// columns, one thread per column (consecutive threads, consecutive
// columns: coalesced), in row order, and writes it to partial[p·k + col].
// The column's channel col / s is found once per column. Launch: grid.y =
// ceil(n / chunk) (at most 65535), grid.x any (a grid-stride loop over
// columns), blocks of any size.
template <typename Fn>
__device__ void col_partial(NormPair *partial, i64 n, i64 k, i64 s, i64 chunk, Fn fn) {
	i64 p = blockIdx.y, n0 = p * chunk, n1 = n0 + chunk < n ? n0 + chunk : n;
	for (i64 col = (i64)blockIdx.x * blockDim.x + threadIdx.x; col < k; col += (i64)gridDim.x * blockDim.x) {
		i64 c = col / s;
		NormPair acc = {0, 0};
#pragma unroll 4
		for (i64 r = n0; r < n1; r++) { // unrolled: four rows' loads in flight before their adds
			NormPair v = fn(r * k + col, r, c);
			acc.a += v.a;
			acc.b += v.b;
		}
		partial[p * k + col] = acc;
	}
}

// channel_total is channel c's total of the partials that col_partial
// wrote for its s columns (c·s ... c·s + s - 1) over np chunks of rows,
// valid in thread 0, in a fixed tree order (the block's size is the
// host's function of np·s). Every thread of the block calls it;
// blockDim.x a multiple of 32.
__device__ __forceinline__ NormPair channel_total(const NormPair *partial, i64 np, i64 k, i64 s, i64 c) {
	NormPair acc = {0, 0};
	for (i64 j = threadIdx.x; j < np * s; j += blockDim.x) {
		i64 p = j / s; // the partials are few next to x: a division here costs little
		NormPair v = partial[p * k + c * s + (j - p * s)];
		acc.a += v.a;
		acc.b += v.b;
	}
	return block_reduce(acc, NormPairSum());
}

// The per-element terms that col_partial sums.
template <typename F> struct LnDwDb { // Σ g·x̂ and Σ g of a layer norm column
	const F *x, *g;
	const double *stats;
	__device__ NormPair operator()(i64 i, i64 r, i64) const {
		double gi = (double)g[i], xh = ((double)x[i] - stats[2 * r]) * stats[2 * r + 1];
		NormPair v = {gi * xh, gi};
		return v;
	}
};
template <typename F> struct BnSum { // Σ x
	const F *x;
	__device__ NormPair operator()(i64 i, i64, i64) const {
		NormPair v = {(double)x[i], 0};
		return v;
	}
};
template <typename F> struct BnSqDev { // Σ (x - mean)², the mean in float64
	const F *x;
	const double *mean;
	__device__ NormPair operator()(i64 i, i64, i64 c) const {
		double d = (double)x[i] - mean[c];
		NormPair v = {d * d, 0};
		return v;
	}
};
template <typename F> struct BnSumProd { // Σ g and Σ g·(x - mean), the mean a tensor of F
	const F *x, *g, *mean;
	__device__ NormPair operator()(i64 i, i64, i64 c) const {
		double gi = (double)g[i];
		NormPair v = {gi, gi * ((double)x[i] - (double)mean[c])};
		return v;
	}
};

// Launch contract of layer_norm_bwd_dwb_<dtype>(NormPair *partial,
//   const double *stats, const F *x, const F *g, i64 rows, i64 d, i64 chunk):
// col_partial's, over x and g [rows, d] with layer_norm_bwd_dx's stats.
// Launch contract of layer_norm_bwd_finish_<dtype>(F *dw, F *db,
//   const NormPair *partial, i64 np, i64 d): a block per column (a
// grid-stride loop over the d columns; blockDim.x a multiple of 32, at most
// 1024) adds its np partials (np = 0: rows was 0, and dw = db = 0).
template <typename F>
__device__ void layer_norm_bwd_finish(F *dw, F *db, const NormPair *partial, i64 np, i64 d) {
	for (i64 j = blockIdx.x; j < d; j += gridDim.x) {
		NormPair t = channel_total(partial, np, d, 1, j);
		if (threadIdx.x == 0) {
			dw[j] = (F)t.a;
			db[j] = (F)t.b;
		}
	}
}

// ---- Batch norm over x [N, C, S] (contiguous), read as [N, K = C·S] for
// the sums: the partials of batch_norm_sum, batch_norm_sqdev and
// batch_norm_sumprod follow col_partial's contract (n = N, k = K, s = S),
// and the kernels that total them channel_total's, a block per channel (a
// grid-stride loop over the C channels; blockDim.x a multiple of 32, at
// most 1024).

// batch_norm_mean_<dtype>(F *out, double *mean, const NormPair *partial,
//   i64 np, i64 c, i64 s, double m): out[ch] and mean[ch] (scratch, read by
// batch_norm_sqdev) are the channel's Σx / m, NaN when m (N·S) is 0.
template <typename F>
__device__ void batch_norm_mean(F *out, double *mean, const NormPair *partial, i64 np, i64 c, i64 s, double m) {
	for (i64 ch = blockIdx.x; ch < c; ch += gridDim.x) {
		NormPair t = channel_total(partial, np, c * s, s, ch);
		if (threadIdx.x == 0) {
			double v = t.a / m;
			mean[ch] = v;
			out[ch] = (F)v;
		}
	}
}

// batch_norm_var_<dtype>(F *out, const NormPair *partial, i64 np, i64 c,
//   i64 s, double m): out[ch] is the channel's Σ(x - mean)² / m.
template <typename F>
__device__ void batch_norm_var(F *out, const NormPair *partial, i64 np, i64 c, i64 s, double m) {
	for (i64 ch = blockIdx.x; ch < c; ch += gridDim.x) {
		NormPair t = channel_total(partial, np, c * s, s, ch);
		if (threadIdx.x == 0) out[ch] = (F)(t.a / m);
	}
}

// batch_norm_coef_<dtype>(F *dweight, F *dbias, F *coef, const NormPair
//   *partial, const F *mean, const F *var, const F *w, i64 np, i64 c, i64 s,
//   double m, double eps, i64 training): from the channel's Σg and
// Σg·(x - mean), dbias and dweight, and the coefficients of dx = a·g +
// k·(x - mean) + d in coef [4, C] (rows a, k, mean, d; scratch), computed
// as the cpu's batchNormBackward computes them, operation for operation.
template <typename F>
__device__ void batch_norm_coef(F *dweight, F *dbias, F *coef, const NormPair *partial, const F *mean, const F *var,
				const F *w, i64 np, i64 c, i64 s, double m, double eps, i64 training) {
	for (i64 ch = blockIdx.x; ch < c; ch += gridDim.x) {
		NormPair t = channel_total(partial, np, c * s, s, ch);
		if (threadIdx.x == 0) {
			double sg = t.a, sgx = t.b;
			double invstd = 1 / sqrt((double)var[ch] + eps), wc = (double)w[ch];
			dbias[ch] = (F)sg;
			dweight[ch] = m > 0 ? (F)(sgx * invstd) : (F)0; // an empty batch: invstd may be NaN
			coef[ch] = (F)(wc * invstd);
			coef[c + ch] = training && m > 0 ? (F)(-wc * invstd * invstd * invstd * sgx / m) : (F)0;
			coef[2 * c + ch] = mean[ch];
			coef[3 * c + ch] = training && m > 0 ? (F)(-wc * invstd * sg / m) : (F)0;
		}
	}
}

// batch_norm_scale_shift_<dtype>(F *coef, const F *mean, const F *var,
//   const F *w, const F *b, i64 c, double eps): coef [2, C] (scratch) gets
// s = w/√(var + eps) and t = b - mean·s, computed in float64 and rounded,
// as the cpu's batchNormApply. One thread per channel, a grid-stride loop
// (1-D grid and blocks of any size).
template <typename F>
__device__ void batch_norm_scale_shift(F *coef, const F *mean, const F *var, const F *w, const F *b, i64 c,
				       double eps) {
	LATHE_FOR(ch, c) {
		double sc = (double)w[ch] / sqrt((double)var[ch] + eps);
		coef[ch] = (F)sc;
		coef[c + ch] = (F)((double)b[ch] - (double)mean[ch] * sc);
	}
}

// channel_walk calls fn(i, ch) for this thread's elements i of a grid-stride
// loop over [0, n) of x [N, C, S], ch the channel of i. It divides once, for
// the first element, and then steps the (channel, position) pair by the
// loop's stride with adds and compares, so the loop has no 64-bit division
// (which costs some 70 instructions, more than the element's memory time).
// c, s >= 1.
template <typename Fn>
__device__ void channel_walk(i64 n, i64 c, i64 s, Fn fn) {
	i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	i64 step = (i64)blockDim.x * gridDim.x;
	i64 plane = i / s, pos = i - plane * s, ch = plane % c;
	i64 stepPlanes = step / s, stepPos = step - stepPlanes * s, stepCh = stepPlanes % c;
	for (; i < n; i += step) {
		fn(i, ch);
		pos += stepPos;
		ch += stepCh;
		if (pos >= s) {
			pos -= s;
			ch++;
		}
		if (ch >= c) ch -= c;
	}
}

// BnAffine and BnGrad are the elementwise batch norm passes: operator()
// writes element i, group() the LN_V(F) elements of 16-byte group q (all of
// one channel: S is a multiple of LN_V(F)) with one load per operand.
template <typename F> struct BnAffine { // y = x·a + b per channel
	F *y;
	const F *x, *a, *b;
	__device__ void operator()(i64 i, i64 ch) const { y[i] = x[i] * a[ch] + b[ch]; }
	__device__ void group(i64 q, i64 ch) const {
		Vec16<F> xv = ((const Vec16<F> *)x)[q], yv;
		F ac = a[ch], bc = b[ch];
#pragma unroll
		for (int u = 0; u < LN_V(F); u++) yv.v[u] = xv.v[u] * ac + bc;
		((Vec16<F> *)y)[q] = yv;
	}
};
template <typename F> struct BnGrad { // dx = a·g + k·(x - mean) + d per channel (coef [4, C])
	F *dx;
	const F *g, *x, *coef;
	i64 c;
	__device__ void operator()(i64 i, i64 ch) const {
		dx[i] = coef[ch] * g[i] + coef[c + ch] * (x[i] - coef[2 * c + ch]) + coef[3 * c + ch];
	}
	__device__ void group(i64 q, i64 ch) const {
		Vec16<F> gv = ((const Vec16<F> *)g)[q], xv = ((const Vec16<F> *)x)[q], dv;
		F ca = coef[ch], ck = coef[c + ch], mu = coef[2 * c + ch], cd = coef[3 * c + ch];
#pragma unroll
		for (int u = 0; u < LN_V(F); u++) dv.v[u] = ca * gv.v[u] + ck * (xv.v[u] - mu) + cd;
		((Vec16<F> *)dx)[q] = dv;
	}
};
template <typename Fn> struct Grouped {
	Fn fn;
	__device__ void operator()(i64 q, i64 ch) const { fn.group(q, ch); }
};

// channel_pass walks fn over the n elements of x [N, C, S]: by 16-byte
// groups when vec (S a multiple of LN_V(F) and every pointer 16-byte
// aligned: the host checks), by elements otherwise.
template <typename F, typename Fn>
__device__ void channel_pass(i64 n, i64 c, i64 s, i64 vec, Fn fn) {
	if (vec) {
		Grouped<Fn> gfn = {fn};
		channel_walk(n / LN_V(F), c, s / LN_V(F), gfn);
	} else {
		channel_walk(n, c, s, fn);
	}
}

// Launch contracts of batch_norm_affine_<dtype>(F *y, const F *x,
//   const F *a, const F *b, i64 n, i64 c, i64 s, i64 vec) (y = x·a[ch] +
// b[ch]) and batch_norm_grad_<dtype>(F *dx, const F *g, const F *x,
//   const F *coef, i64 n, i64 c, i64 s, i64 vec): elementwise over the n =
// N·C·S elements of x [N, C, S], grid-stride (1-D grid and blocks of any
// size; the host sizes the grid by groups when vec); c, s >= 1. vec as
// channel_pass's.

#define LATHE_NORM(F, sfx)                                                                                        \
	extern "C" __global__ void layer_norm_##sfx(F *y, const F *x, const F *w, const F *b, i64 rows, i64 d,       \
						    double eps) {                                                    \
		layer_norm<F>(y, x, w, b, rows, d, eps);                                                          \
	}                                                                                                         \
	extern "C" __global__ void layer_norm_bwd_dx_##sfx(F *dx, double *stats, const F *x, const F *w, const F *g, \
							   i64 rows, i64 d, double eps) {                            \
		layer_norm_bwd_dx<F>(dx, stats, x, w, g, rows, d, eps);                                           \
	}                                                                                                         \
	extern "C" __global__ void layer_norm_bwd_dwb_##sfx(NormPair *partial, const double *stats, const F *x,      \
							    const F *g, i64 rows, i64 d, i64 chunk) {               \
		LnDwDb<F> fn = {x, g, stats};                                                                     \
		col_partial(partial, rows, d, 1, chunk, fn);                                                      \
	}                                                                                                         \
	extern "C" __global__ void layer_norm_bwd_finish_##sfx(F *dw, F *db, const NormPair *partial, i64 np, i64 d) { \
		layer_norm_bwd_finish<F>(dw, db, partial, np, d);                                                 \
	}                                                                                                         \
	extern "C" __global__ void batch_norm_sum_##sfx(NormPair *partial, const F *x, i64 n, i64 k, i64 s,          \
							i64 chunk) {                                                  \
		BnSum<F> fn = {x};                                                                                \
		col_partial(partial, n, k, s, chunk, fn);                                                         \
	}                                                                                                         \
	extern "C" __global__ void batch_norm_sqdev_##sfx(NormPair *partial, const F *x, const double *mean, i64 n,  \
							  i64 k, i64 s, i64 chunk) {                                  \
		BnSqDev<F> fn = {x, mean};                                                                        \
		col_partial(partial, n, k, s, chunk, fn);                                                         \
	}                                                                                                         \
	extern "C" __global__ void batch_norm_sumprod_##sfx(NormPair *partial, const F *x, const F *g,              \
							    const F *mean, i64 n, i64 k, i64 s, i64 chunk) {        \
		BnSumProd<F> fn = {x, g, mean};                                                                   \
		col_partial(partial, n, k, s, chunk, fn);                                                         \
	}                                                                                                         \
	extern "C" __global__ void batch_norm_mean_##sfx(F *out, double *mean, const NormPair *partial, i64 np,      \
							 i64 c, i64 s, double m) {                                    \
		batch_norm_mean<F>(out, mean, partial, np, c, s, m);                                              \
	}                                                                                                         \
	extern "C" __global__ void batch_norm_var_##sfx(F *out, const NormPair *partial, i64 np, i64 c, i64 s,       \
							double m) {                                                   \
		batch_norm_var<F>(out, partial, np, c, s, m);                                                     \
	}                                                                                                         \
	extern "C" __global__ void batch_norm_coef_##sfx(F *dweight, F *dbias, F *coef, const NormPair *partial,     \
							 const F *mean, const F *var, const F *w, i64 np, i64 c,      \
							 i64 s, double m, double eps, i64 training) {                 \
		batch_norm_coef<F>(dweight, dbias, coef, partial, mean, var, w, np, c, s, m, eps, training);      \
	}                                                                                                         \
	extern "C" __global__ void batch_norm_scale_shift_##sfx(F *coef, const F *mean, const F *var, const F *w,    \
								const F *b, i64 c, double eps) {                      \
		batch_norm_scale_shift<F>(coef, mean, var, w, b, c, eps);                                         \
	}                                                                                                         \
	extern "C" __global__ void batch_norm_affine_##sfx(F *y, const F *x, const F *a, const F *b, i64 n, i64 c,   \
							   i64 s, i64 vec) {                                          \
		BnAffine<F> fn = {y, x, a, b};                                                                    \
		channel_pass<F>(n, c, s, vec, fn);                                                                \
	}                                                                                                         \
	extern "C" __global__ void batch_norm_grad_##sfx(F *dx, const F *g, const F *x, const F *coef, i64 n, i64 c, \
							 i64 s, i64 vec) {                                            \
		BnGrad<F> fn = {dx, g, x, coef, c};                                                               \
		channel_pass<F>(n, c, s, vec, fn);                                                                \
	}
LATHE_FLOATS(LATHE_NORM)
