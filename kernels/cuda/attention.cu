// attention.cu: scaled dot-product attention (ops.Attention and
// ops.AttentionBackward, and their masked forms ops.AttentionMasked and
// ops.AttentionMaskedBackward, which the same kernels run with a mask).
// Two families: the rows kernels of the GEMM path (below, after the fused
// kernels), which the host runs between cuBLAS products where the device
// has cuBLAS, and the fused kernels, which do everything where it has not.
// The fused kernels are tiled over the sequence with FlashAttention's
// online softmax (Dao et al. 2022; the backward as FlashAttention-2, Dao
// 2023). The semantics are the cpu kernel's (backends/cpu/attention.go):
// q [N, Hq, Lq, E], k [N, Hk, Lk, E], v [N, Hk, Lk, Ev], all row-major;
// query head h uses key head h / (Hq / Hk); causal masking lets query i see
// keys j <= i. The forward writes out [N, Hq, Lq, Ev + 1]: each row's output
// and, in its last column, its logsumexp (-inf where there is no key).
// Scores, the running max and sum and the probabilities are double; the
// output accumulates in the dtype, as the cpu's GEMMs do.
//
// The masked ops' additive mask, [N, Hq, Lq, Lk] of the dtype, is added to
// each score after the scale (s = scale * q·k + mask) and read in place
// through its element strides, any of which may be 0: it is usually a
// broadcast view (a key padding mask [N, 1, 1, Lk] expanded), which is
// never copied. Every kernel that forms a score takes it as its last five
// parameters, ATT_MASK_PARAMS: the mask's address (null for the unmasked
// ops, a branch uniform over the grid) and its strides along n, h, i, j.
// Causal is false with a mask (the op's Infer refuses it).
//
// Dropout of the probabilities (ops.AttentionParams' Dropout) is
// ops.Dropout's mask over the [N, Hq, Lq, Lk] probabilities: probability
// (n, h, i, j), index idx = ((n * Hq + h) * Lq + i) * Lk + j, is kept,
// times scale (1 / (1 - p)), where word idx % 4 of philox.cuh's block
// idx / 4 under the key (k0, k1) is at least threshold (ceil(p * 2^32)),
// and is 0 where not. Every kernel that forms a probability takes it as
// the four parameters before the mask's, ATT_DROP_PARAMS: u32 drop_k0,
// u32 drop_k1, u32 drop_threshold, double drop_scale, and has two entries
// of the same parameters: attention_<kernel>_<dtype> without dropout,
// which ignores them (the host passes threshold 0, which keeps every
// word, and scale 1), and attention_<kernel>_drop_<dtype> with it, so
// that the kernels without dropout are instruction for instruction,
// register for register and bit for bit what they were before it. The
// logsumexp stays the undropped scores': the forward drops a row's
// probabilities after it has summed them, before the product with v. The
// backward, with M the factors and P undropped: dV = (P∘M)ᵀ·dO,
// dP = (dO·Vᵀ)∘M and dS = P∘(dP - D), D as without dropout. A Philox
// block gives four consecutive indices' words, so each kernel makes a
// block once for the four, not once per element.
//
// Each thread owns one row (a query row forward and for dQ, a key row for
// dK and dV) and keeps its ATT_TILE scores of the current tile in local
// memory; the tile of the other side's rows is staged through shared
// memory ATT_DC columns at a time, so any E and Ev work and nothing of size
// Lq x Lk exists. A block's loop bounds depend only on the block, so every
// thread reaches each __syncthreads.
//
// Launch contracts (grid: a 1-D grid of any size, a grid-stride loop over
// tiles; blocks of exactly ATT_ROWS threads; static shared memory only):
//   attention_fwd_[drop_]<f32|f64>(F *out, const F *q, const F *k,
//       const F *v, i64 N, i64 Hq, i64 Hk, i64 Lq, i64 Lk, i64 E, i64 Ev,
//       double scale, i64 causal, ATT_DROP_PARAMS, ATT_MASK_PARAMS): tiles
//       of ATT_ROWS query rows, N * Hq * ceil(Lq / ATT_ROWS). A row whose
//       scores are all -inf (a masked row) gets NaN outputs (0/0) and a
//       logsumexp of -inf. With dropout a thread makes the Philox blocks
//       of its own row's keys, a tile's run of consecutive indices.
//   attention_bwd_delta_<f32|f64>(F *d, const F *out, const F *grad,
//       i64 rows, i64 Ev): d[r] = sum(grad[r, :Ev] * out[r, :Ev]) -
//       grad[r, Ev] over the rows of out and grad ([rows, Ev + 1]); any
//       block size, a grid-stride loop over rows.
//   attention_bwd_dkv_[drop_]<f32|f64>(F *dk, F *dv, const F *q,
//       const F *k, const F *v, const F *out, const F *grad, const F *d,
//       i64 N, i64 Hq, i64 Hk, i64 Lq, i64 Lk, i64 E, i64 Ev, double scale,
//       i64 causal, ATT_DROP_PARAMS, ATT_MASK_PARAMS): tiles of ATT_ROWS
//       key rows, N * Hk * ceil(Lk / ATT_ROWS); d is the delta kernel's
//       result. With dropout the block's threads make a tile's mask
//       together, as bits in shared memory (ATT_TILE query rows x the
//       block's ATT_ROWS keys), since a thread's own column has one index
//       per Philox block.
//   attention_bwd_dq_[drop_]<f32|f64>(F *dq, const F *q, const F *k,
//       const F *v, const F *out, const F *grad, i64 N, i64 Hq, i64 Hk,
//       i64 Lq, i64 Lk, i64 E, i64 Ev, double scale, i64 causal,
//       ATT_DROP_PARAMS, ATT_MASK_PARAMS): tiles, and the dropout's
//       blocks, as the forward's.
//   The fused backward kernels take each probability as exp(s - lse) with
//   no case for lse = -inf: a masked row's are NaN, and so is every
//   gradient they reach, as ops.AttentionMaskedBackward requires.
#include "lathe.cuh"
#include "philox.cuh"

#define ATT_ROWS 64 // threads per block: rows a block owns
#define ATT_TILE 32 // rows of the other side per tile
#define ATT_DC 32   // columns staged in shared memory at a time

// The host emulation (internal/cudaemu) has no CUDA min and max for i64.
__device__ inline i64 imin(i64 a, i64 b) { return a < b ? a : b; }
__device__ inline i64 imax(i64 a, i64 b) { return a > b ? a : b; }

// ATT_MASK_PARAMS are the mask's kernel parameters (see the top), the last
// of every kernel that forms a score.
#define ATT_MASK_PARAMS(F) const F *mask, i64 mask_n, i64 mask_h, i64 mask_i, i64 mask_j
#define ATT_MASK(F) (AttnMask<F>{mask, mask_n, mask_h, mask_i, mask_j})

// ATT_DROP_PARAMS are the dropout's kernel parameters (see the top), just
// before the mask's in every kernel that forms a probability.
#define ATT_DROP_PARAMS u32 drop_k0, u32 drop_k1, u32 drop_threshold, double drop_scale
#define ATT_DROP (AttnDrop{drop_k0, drop_k1, drop_threshold, drop_scale})

// AttnDrop is the dropout of the probabilities.
struct AttnDrop {
	u32 k0, k1, threshold;
	double scale;
	// factor is the kept factor, or 0, of the probability whose word this is.
	__device__ double factor(u32 word) const { return word >= threshold ? scale : 0.0; }
};

// drop_words calls f(x, word) for the x in [0, count) of a run of
// consecutive indices idx0 + x, word being index idx0 + x's Philox word:
// the run's blocks of four words t, t + stride, t + 2 * stride, ... (from
// the block of idx0), each made once for its (up to) four indices. A
// thread walks its own run with t = 0, stride 1; the threads of a block
// share one with t = threadIdx.x, stride = blockDim.x; a stride past the
// run's blocks makes block t alone.
template <typename Fn>
__device__ __forceinline__ void drop_words(AttnDrop d, u64 idx0, i64 count, i64 t, i64 stride, Fn f) {
	if (count <= 0) return;
	for (u64 b = idx0 / 4 + (u64)t; 4 * b < idx0 + (u64)count; b += (u64)stride) {
		Words4 w = philox(b, d.k0, d.k1);
#pragma unroll
		for (int u = 0; u < 4; u++) {
			i64 x = (i64)(4 * b + u - idx0); // -3..-1 for the first block's words before idx0
			if (x >= 0 && x < count) f(x, w.w[u]);
		}
	}
}

// MaskLine is the mask along one row or one column of a head's scores:
// element x at p[x * step]. Without a mask (p null) every element is 0,
// which leaves a score as it was.
template <typename F>
struct MaskLine {
	const F *p;
	i64 step;
	__device__ double at(i64 x) const { return p ? (double)p[x * step] : 0.0; }
};

// AttnMask is the mask [N, Hq, Lq, Lk] read through its strides; p is null
// for the unmasked ops.
template <typename F>
struct AttnMask {
	const F *p;
	i64 sn, sh, si, sj;
	// row is query row i of (n, h) along the keys.
	__device__ MaskLine<F> row(i64 n, i64 h, i64 i) const { return MaskLine<F>{p ? p + n * sn + h * sh + i * si : p, sj}; }
	// col is key j of (n, h) along the query rows.
	__device__ MaskLine<F> col(i64 n, i64 h, i64 j) const { return MaskLine<F>{p ? p + n * sn + h * sh + j * sj : p, si}; }
};

// stage copies rows [r0, r0 + nr) (of ATT_TILE at most), columns
// [c0, c0 + nc) of the row-major matrix src (row stride ld) into tile,
// zeros past the ends. Every thread of the block calls it.
template <typename F>
__device__ void stage(F (*tile)[ATT_DC + 1], const F *src, i64 ld, i64 r0, int nr, i64 c0, int nc) {
	__syncthreads(); // the tile's last readers are done
	for (int x = threadIdx.x; x < ATT_TILE * ATT_DC; x += blockDim.x) {
		int rr = x / ATT_DC, cc = x % ATT_DC;
		tile[rr][cc] = (rr < nr && cc < nc) ? src[(r0 + rr) * ld + c0 + cc] : (F)0;
	}
	__syncthreads();
}

// dots adds to s[rr] the dot product of row (length n, unit stride) with
// each of the nr rows of the matrix src (row stride ld) starting at r0,
// staged through tile. Every thread calls it; only live ones add.
template <typename F>
__device__ void dots(double *s, F (*tile)[ATT_DC + 1], const F *row, bool live, const F *src, i64 ld, i64 r0, int nr, i64 n) {
	for (i64 c0 = 0; c0 < n; c0 += ATT_DC) {
		int nc = (int)imin(ATT_DC, n - c0);
		stage(tile, src, ld, r0, nr, c0, nc);
		if (!live) continue;
		for (int rr = 0; rr < nr; rr++) {
			F acc = 0;
			for (int cc = 0; cc < nc; cc++) acc += row[c0 + cc] * tile[rr][cc];
			s[rr] += (double)acc;
		}
	}
}

// axpy sets dst[c] = dst[c] * keep + alpha * sum_rr w[rr] * src[r0 + rr][c]
// for the n columns of dst (unit stride), the rows of src staged through
// tile. Every thread calls it; only live ones write.
template <typename F>
__device__ void axpy(F *dst, double keep, double alpha, const double *w, F (*tile)[ATT_DC + 1], bool live, const F *src, i64 ld,
		     i64 r0, int nr, i64 n) {
	for (i64 c0 = 0; c0 < n; c0 += ATT_DC) {
		int nc = (int)imin(ATT_DC, n - c0);
		stage(tile, src, ld, r0, nr, c0, nc);
		if (!live) continue;
		for (int cc = 0; cc < nc; cc++) {
			double a = 0;
			for (int rr = 0; rr < nr; rr++) a += w[rr] * (double)tile[rr][cc];
			dst[c0 + cc] = (F)((double)dst[c0 + cc] * keep + alpha * a);
		}
	}
}

// keys is how many keys of a tile starting at j0 (of nr) query row i sees.
__device__ inline int keys(bool causal, i64 i, i64 j0, int nr) {
	if (!causal) return nr;
	return (int)imax(0, imin(nr, i + 1 - j0));
}

template <typename F, bool Dropped>
__device__ void attention_fwd(F *out, const F *q, const F *k, const F *v, i64 N, i64 Hq, i64 Hk, i64 Lq, i64 Lk, i64 E, i64 Ev,
			      double scale, bool causal, AttnDrop drop, AttnMask<F> mask) {
	__shared__ F tile[ATT_TILE][ATT_DC + 1];
	i64 group = Hk > 0 ? Hq / Hk : 1, W = Ev + 1;
	i64 nqb = (Lq + ATT_ROWS - 1) / ATT_ROWS;
	for (i64 t = blockIdx.x; t < N * Hq * nqb; t += gridDim.x) {
		i64 nh = t / nqb, i0 = (t % nqb) * ATT_ROWS;
		i64 n = nh / Hq, h = nh % Hq, hk = h / group;
		i64 i = i0 + threadIdx.x;
		bool live = i < Lq;
		const F *qr = q + ((n * Hq + h) * Lq + (live ? i : 0)) * E;
		const F *kh = k + (n * Hk + hk) * Lk * E, *vh = v + (n * Hk + hk) * Lk * Ev;
		F *orow = out + ((n * Hq + h) * Lq + (live ? i : 0)) * W;
		MaskLine<F> mrow = mask.row(n, h, live ? i : 0);
		u64 drop0 = (u64)(((n * Hq + h) * Lq + (live ? i : 0)) * Lk); // the dropout index of the row's key 0
		if (live)
			for (i64 e = 0; e < Ev; e++) orow[e] = 0;
		double m = -inf_f64(), l = 0;
		i64 kEnd = causal ? imin(Lk, imin(Lq, i0 + ATT_ROWS)) : Lk;
		for (i64 j0 = 0; j0 < kEnd; j0 += ATT_TILE) {
			int nr = (int)imin(ATT_TILE, kEnd - j0);
			double s[ATT_TILE];
			for (int rr = 0; rr < ATT_TILE; rr++) s[rr] = 0;
			dots(s, tile, qr, live, kh, E, j0, nr, E);
			int lim = live ? keys(causal, i, j0, nr) : 0;
			double mx = m;
			for (int rr = 0; rr < lim; rr++) {
				s[rr] = s[rr] * scale + mrow.at(j0 + rr);
				if (s[rr] > mx) mx = s[rr];
			}
			// While the max is -inf (every key so far masked) nothing has
			// been summed: no probability, and no exp(-inf - -inf) to
			// rescale by.
			double corr = mx != m ? exp(m - mx) : 1.0, sum = 0;
			for (int rr = 0; rr < ATT_TILE; rr++) {
				double p = (rr < lim && mx != -inf_f64()) ? exp(s[rr] - mx) : 0.0;
				s[rr] = p;
				sum += p;
			}
			l = l * corr + sum;
			m = mx;
			// Dropped after the sum: the logsumexp is the undropped
			// scores'.
			if (Dropped) drop_words(drop, drop0 + j0, lim, 0, 1, [&](i64 x, u32 w) { s[x] *= drop.factor(w); });
			axpy(orow, corr, 1.0, s, tile, live, vh, Ev, j0, nr, Ev);
		}
		if (!live) continue;
		if (Lk == 0) {
			orow[Ev] = (F)-inf_f64(); // no key: zeros and a logsumexp of -inf
			continue;
		}
		for (i64 e = 0; e < Ev; e++) orow[e] = (F)((double)orow[e] / l);
		orow[Ev] = (F)(m + log(l));
	}
}

template <typename F>
__device__ void attention_bwd_delta(F *d, const F *out, const F *grad, i64 rows, i64 Ev) {
	LATHE_FOR(r, rows) {
		const F *o = out + r * (Ev + 1), *g = grad + r * (Ev + 1);
		double s = 0;
		for (i64 e = 0; e < Ev; e++) s += (double)g[e] * (double)o[e];
		d[r] = (F)(s - (double)g[Ev]);
	}
}

template <typename F, bool Dropped>
__device__ void attention_bwd_dkv(F *dk, F *dv, const F *q, const F *k, const F *v, const F *out, const F *grad, const F *d, i64 N,
				  i64 Hq, i64 Hk, i64 Lq, i64 Lk, i64 E, i64 Ev, double scale, bool causal, AttnDrop drop,
				  AttnMask<F> mask) {
	__shared__ F tile[ATT_TILE][ATT_DC + 1];
	__shared__ double lse[ATT_TILE], delta[ATT_TILE];
	// kept[rr][x / 32] bit x % 32: whether the dropout keeps query row
	// i0 + rr's probability of the block's key j0 + x (bits: 256 bytes,
	// where a byte a key would take 2 KiB of the shared memory).
	__shared__ u32 kept[ATT_TILE][ATT_ROWS / 32];
	static_assert(ATT_ROWS % 32 == 0, "a block's keys are whole words of kept");
	i64 group = Hk > 0 ? Hq / Hk : 1, W = Ev + 1;
	i64 nkb = (Lk + ATT_ROWS - 1) / ATT_ROWS;
	for (i64 t = blockIdx.x; t < N * Hk * nkb; t += gridDim.x) {
		i64 nh = t / nkb, j0 = (t % nkb) * ATT_ROWS;
		i64 n = nh / Hk, hk = nh % Hk;
		i64 j = j0 + threadIdx.x;
		bool live = j < Lk;
		const F *kr = k + ((n * Hk + hk) * Lk + (live ? j : 0)) * E;
		const F *vr = v + ((n * Hk + hk) * Lk + (live ? j : 0)) * Ev;
		F *dkr = dk + ((n * Hk + hk) * Lk + (live ? j : 0)) * E;
		F *dvr = dv + ((n * Hk + hk) * Lk + (live ? j : 0)) * Ev;
		if (live) {
			for (i64 e = 0; e < E; e++) dkr[e] = 0;
			for (i64 e = 0; e < Ev; e++) dvr[e] = 0;
		}
		for (i64 h = hk * group; h < (hk + 1) * group; h++) {
			i64 rowh = (n * Hq + h) * Lq;
			const F *qh = q + rowh * E, *oh = out + rowh * W, *gh = grad + rowh * W;
			MaskLine<F> mcol = mask.col(n, h, live ? j : 0);
			for (i64 i0 = causal ? j0 / ATT_TILE * ATT_TILE : 0; i0 < Lq; i0 += ATT_TILE) {
				int nr = (int)imin(ATT_TILE, Lq - i0);
				__syncthreads(); // the last tile's readers of lse and delta are done
				for (int x = threadIdx.x; x < ATT_TILE; x += blockDim.x) {
					lse[x] = x < nr ? (double)oh[(i0 + x) * W + Ev] : 0.0;
					delta[x] = x < nr ? (double)d[rowh + i0 + x] : 0.0;
				}
				// The tile's mask: a thread's own column has one index per
				// Philox block (consecutive indices are consecutive keys,
				// a thread each), so each thread makes the words of 32
				// consecutive keys of a row instead, one block per four.
				// Read after the dots' barriers, as lse and delta are.
				if (Dropped) {
					for (int x = threadIdx.x; x < nr * (ATT_ROWS / 32); x += blockDim.x) {
						int rr = x / (ATT_ROWS / 32), c0 = x % (ATT_ROWS / 32) * 32;
						u32 bits = 0;
						drop_words(drop, (u64)((rowh + i0 + rr) * Lk + j0 + c0), imin(32, Lk - j0 - c0), 0, 1,
							   [&](i64 c, u32 w) { bits |= (u32)(w >= drop.threshold) << c; });
						kept[rr][c0 / 32] = bits;
					}
				}
				double s[ATT_TILE], dp[ATT_TILE];
				for (int rr = 0; rr < ATT_TILE; rr++) s[rr] = dp[rr] = 0;
				dots(s, tile, kr, live, qh, E, i0, nr, E);
				dots(dp, tile, vr, live, gh, W, i0, nr, Ev);
				for (int rr = 0; rr < ATT_TILE; rr++) {
					bool seen = live && rr < nr && (!causal || i0 + rr >= j);
					double p = seen ? exp(s[rr] * scale + mcol.at(i0 + rr) - lse[rr]) : 0.0;
					// Without dropout the factor is 1, which the compiler
					// folds away.
					double f = Dropped && seen ? (kept[rr][threadIdx.x / 32] >> threadIdx.x % 32 & 1 ? drop.scale : 0.0) : 1.0;
					s[rr] = p * f;
					dp[rr] = p * (dp[rr] * f - delta[rr]);
				}
				axpy(dvr, 1.0, 1.0, s, tile, live, gh, W, i0, nr, Ev);
				axpy(dkr, 1.0, scale, dp, tile, live, qh, E, i0, nr, E);
			}
		}
	}
}

template <typename F, bool Dropped>
__device__ void attention_bwd_dq(F *dq, const F *q, const F *k, const F *v, const F *out, const F *grad, i64 N, i64 Hq, i64 Hk, i64 Lq,
				 i64 Lk, i64 E, i64 Ev, double scale, bool causal, AttnDrop drop, AttnMask<F> mask) {
	__shared__ F tile[ATT_TILE][ATT_DC + 1];
	i64 group = Hk > 0 ? Hq / Hk : 1, W = Ev + 1;
	i64 nqb = (Lq + ATT_ROWS - 1) / ATT_ROWS;
	for (i64 t = blockIdx.x; t < N * Hq * nqb; t += gridDim.x) {
		i64 nh = t / nqb, i0 = (t % nqb) * ATT_ROWS;
		i64 n = nh / Hq, h = nh % Hq, hk = h / group;
		i64 i = i0 + threadIdx.x;
		bool live = i < Lq;
		i64 row = (n * Hq + h) * Lq + (live ? i : 0);
		const F *qr = q + row * E, *orow = out + row * W, *gr = grad + row * W;
		const F *kh = k + (n * Hk + hk) * Lk * E, *vh = v + (n * Hk + hk) * Lk * Ev;
		F *dqr = dq + row * E;
		MaskLine<F> mrow = mask.row(n, h, live ? i : 0);
		u64 drop0 = (u64)(row * Lk); // the dropout index of the row's key 0
		double lse = 0, delta = 0;
		if (live) {
			for (i64 e = 0; e < E; e++) dqr[e] = 0;
			for (i64 e = 0; e < Ev; e++) delta += (double)gr[e] * (double)orow[e];
			delta -= (double)gr[Ev];
			lse = (double)orow[Ev];
		}
		i64 kEnd = causal ? imin(Lk, imin(Lq, i0 + ATT_ROWS)) : Lk;
		for (i64 j0 = 0; j0 < kEnd; j0 += ATT_TILE) {
			int nr = (int)imin(ATT_TILE, kEnd - j0);
			double s[ATT_TILE], ds[ATT_TILE];
			for (int rr = 0; rr < ATT_TILE; rr++) s[rr] = ds[rr] = 0;
			dots(s, tile, qr, live, kh, E, j0, nr, E);
			dots(ds, tile, gr, live, vh, Ev, j0, nr, Ev);
			int lim = live ? keys(causal, i, j0, nr) : 0;
			if (Dropped) drop_words(drop, drop0 + j0, lim, 0, 1, [&](i64 x, u32 w) { ds[x] *= drop.factor(w); }); // dP∘M
			for (int rr = 0; rr < ATT_TILE; rr++) {
				double p = rr < lim ? exp(s[rr] * scale + mrow.at(j0 + rr) - lse) : 0.0;
				ds[rr] = p * (ds[rr] - delta);
			}
			axpy(dqr, 1.0, scale, ds, tile, live, kh, E, j0, nr, E);
		}
	}
}

// ---- The rows kernels of the GEMM path (backends/cuda/ops_attention.go's
// attentionGEMM): cuBLAS computes the raw scores S = Q Kᵀ of a chunk of
// (batch, key head) pairs, each pair's rows being its group of query heads'
// rows one after another (rows of [group * Lq, Lk]); these kernels turn a
// row of scores into probabilities (the forward) or into P and dS (the
// backward) in place, and cuBLAS does the rest.
//
// One block per row, a grid-stride loop over rows. A thread reads every
// blockDim.x-th score of the row, so a warp's loads and stores are 32
// consecutive elements: coalesced, 128 bytes per warp for float32. What the
// emulation cannot show: these kernels are bound by memory (the forward
// reads a row twice, the second time from L2 for rows of up to tens of
// KiB, and writes it once; the backward reads two and writes two; masked
// elements are written, never read), so on an H200 they should run near
// its copy bandwidth when enough rows are in flight (rows >> 132 SMs x 8
// blocks) and each thread has ATT_UNROLL loads in flight; float4 loads
// would cut the instruction count further. The row index and the causal
// limit are computed once per row (64-bit); the inner loops step 32-bit
// indices.
//
// Launch contracts (grid: 1-D, any size; blocks: a multiple of 32 threads,
// at most 1024, as block_reduce needs; no dynamic shared memory):
//   attention_rows_fwd_[drop_]<f32|f64>(F *s, F *lse, i64 rows, i64 Lq,
//       i64 Lk, i64 W, double scale, i64 causal, i64 Hq, i64 row0,
//       ATT_DROP_PARAMS, ATT_MASK_PARAMS): s is rows x Lk (row-major) of
//       raw scores q·k; row r is query row row0 + r of the N * Hq * Lq (a
//       pair's rows are its query heads' rows, in order), so query
//       i = r % Lq (row0 is a multiple of Lq) of head (row0 + r) / Lq % Hq,
//       which sees keys j < lim = causal ? min(Lk, i + 1) : Lk. Each row
//       becomes softmax(scale * s + mask) over its first lim entries and 0
//       past them, and lse[r * W] its logsumexp (the out's last column:
//       W = Ev + 1). Lk >= 1. A row whose scores are all -inf gets NaN
//       probabilities and a logsumexp of -inf, as the cpu and the fused
//       kernel give. With dropout each probability is written times its
//       factor (P∘M, which the product with v takes), the logsumexp
//       being P's; row r's key j has dropout index (row0 + r) * Lk + j.
//   attention_rows_bwd_[drop_]<f32|f64>(F *s, F *dp, const F *lse,
//       const F *d, i64 rows, i64 Lq, i64 Lk, i64 W, double scale,
//       i64 causal, i64 Hq, i64 row0, ATT_DROP_PARAMS, ATT_MASK_PARAMS):
//       s, row0, the dropout and the mask as above, dp the rows' dO·Vᵀ;
//       lse[r * W] the forward's logsumexp and
//       d[r] = rowsum(dO∘O) - dlse (attention_bwd_delta). Each s becomes
//       P = exp(scale * s + mask - lse) (0 past lim; where lse is -inf, 0
//       without a mask and, with one, NaN, as the fused kernels give) and
//       each dp becomes scale * P * (dp - d[r]): dS with the scale that dQ
//       and dK both carry folded in (0 past lim, where dp is not read).
//       With dropout s becomes P∘M (for dV = (P∘M)ᵀ·dO) and dp
//       scale * P * (dp * M - d[r]).
//   Each launches the body for its Masked (whether the mask is there)
//   once, so that the unmasked rows' loops have no mask in them. Without
//   dropout the loops are of ATT_UNROLL strided loads; with it (the drop_
//   entries) a thread takes four consecutive keys at a time, one Philox
//   block's.

// RowStat is a running (max, sum of exp(x - max)) of a row's scores.
template <typename F>
struct RowStat {
	F m;
	typename Accum<F>::type l;
};

// AddStat merges two running stats; a max of -inf has nothing to weigh
// (its sum is 0), which keeps exp(-inf - -inf) out.
struct AddStat {
	template <typename F>
	__device__ __forceinline__ RowStat<F> operator()(RowStat<F> a, RowStat<F> b) const {
		F m = a.m > b.m ? a.m : b.m;
		typename Accum<F>::type l = 0;
		if (a.m != (F)-inf_f64()) l += a.l * m_exp(a.m - m);
		if (b.m != (F)-inf_f64()) l += b.l * m_exp(b.m - m);
		return RowStat<F>{m, l};
	}
};

// row_lim is how many keys of its row query i sees.
__device__ __forceinline__ int row_lim(bool causal, i64 i, i64 Lk) { return (int)(causal ? imin(Lk, i + 1) : Lk); }

// row_mask is the mask along query row q (of the N * Hq * Lq), where
// Masked.
template <bool Masked, typename F>
__device__ __forceinline__ MaskLine<F> row_mask(AttnMask<F> mask, i64 q, i64 Hq, i64 Lq) {
	if (!Masked) return MaskLine<F>{nullptr, 0};
	return mask.row(q / (Hq * Lq), q / Lq % Hq, q % Lq);
}

// scaled is raw score x (q·k) of key j scaled, plus the mask where Masked.
template <bool Masked, typename F>
__device__ __forceinline__ F scaled(F x, F sc, MaskLine<F> mrow, int j) {
	return Masked ? x * sc + mrow.p[j * mrow.step] : x * sc;
}

// ATT_UNROLL is how many of a row's elements a thread loads before it uses
// any: one load in flight per thread (2048 per SM, 8 KiB of float32) is
// well short of what an H200 needs in flight per SM to reach its bandwidth
// (about 4.3 TB/s x ~0.6 us over 132 SMs: ~20 KiB), four are not.
#define ATT_UNROLL 4

// add_score adds score x to a thread's running max m and sum l (of
// exp(score - m)); a max of -inf has nothing to rescale.
template <typename F>
__device__ __forceinline__ void add_score(F &m, F &l, F x, F ninf) {
	if (x > m) { // a new max: rescale what was summed
		l = (m != ninf ? l * m_exp(m - x) : (F)0) + (F)1;
		m = x;
	} else if (m != ninf) {
		l += m_exp(x - m); // NaN stays NaN
	}
}

// zero_tail zeros a row's masked elements [lim, n), a thread's share.
template <typename F>
__device__ __forceinline__ void zero_tail(F *row, int lim, int n) {
	int step = blockDim.x, j = lim / step * step + threadIdx.x;
	for (j = j < lim ? j + step : j; j < n; j += step) row[j] = (F)0;
}

template <typename F, bool Masked, bool Dropped>
__device__ void attention_rows_fwd(F *s, F *lse, i64 rows, i64 Lq, i64 Lk, i64 W, double scale, bool causal, i64 Hq, i64 row0,
				   AttnDrop drop, AttnMask<F> mask) {
	// The per-element work stays in F (a thread sums its few scores in F;
	// the block's tree sums in Accum): float32-to-float64 conversions run
	// at a sixteenth of float32's rate on an H200.
	const F sc = (F)scale, ninf = (F)-inf_f64(), kept_scale = (F)drop.scale;
	const int step = blockDim.x;
	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		F *row = s + r * Lk;
		MaskLine<F> mrow = row_mask<Masked>(mask, row0 + r, Hq, Lq);
		int lim = row_lim(causal, r % Lq, Lk), n = (int)Lk, j = threadIdx.x;
		F m = ninf, l = 0;
		for (; j + (ATT_UNROLL - 1) * step < lim; j += ATT_UNROLL * step) {
			F x[ATT_UNROLL];
#pragma unroll
			for (int u = 0; u < ATT_UNROLL; u++) x[u] = row[j + u * step];
#pragma unroll
			for (int u = 0; u < ATT_UNROLL; u++)
				add_score(m, l, scaled<Masked>(x[u], sc, mrow, j + u * step), ninf);
		}
		for (; j < lim; j += step) add_score(m, l, scaled<Masked>(row[j], sc, mrow, j), ninf);
		RowStat<F> st = block_broadcast(block_reduce(RowStat<F>{m, l}, AddStat()));
		// An infinite max makes its own probability inf/inf: NaN, as the
		// cpu's exp(inf - inf) makes the whole row.
		if (st.m == -ninf) st.l = nan_f64();
		const F inv = (F)(1.0 / (double)st.l);
		m = st.m;
		if (Dropped) {
			// P∘M, what the product with v takes (the sum above was
			// P's): a thread takes four consecutive keys at a time, one
			// Philox block's, the block's threads the row's blocks in
			// turn.
			drop_words(drop, (u64)(row0 + r) * Lk, lim, threadIdx.x, step, [&](i64 x, u32 w) {
				row[x] = m_exp(scaled<Masked>(row[x], sc, mrow, (int)x) - m) * inv * (w >= drop.threshold ? kept_scale : (F)0);
			});
		} else {
			for (j = threadIdx.x; j + (ATT_UNROLL - 1) * step < lim; j += ATT_UNROLL * step) {
				F x[ATT_UNROLL];
#pragma unroll
				for (int u = 0; u < ATT_UNROLL; u++) x[u] = row[j + u * step];
#pragma unroll
				for (int u = 0; u < ATT_UNROLL; u++)
					row[j + u * step] = m_exp(scaled<Masked>(x[u], sc, mrow, j + u * step) - m) * inv;
			}
			for (; j < lim; j += step) row[j] = m_exp(scaled<Masked>(row[j], sc, mrow, j) - m) * inv;
		}
		zero_tail(row, lim, n);
		if (threadIdx.x == 0) lse[r * W] = (F)((double)st.m + log((double)st.l));
	}
}

template <typename F, bool Masked, bool Dropped>
__device__ void attention_rows_bwd(F *s, F *dp, const F *lse, const F *d, i64 rows, i64 Lq, i64 Lk, i64 W, double scale,
				   bool causal, i64 Hq, i64 row0, AttnDrop drop, AttnMask<F> mask) {
	const F sc = (F)scale, kept_scale = (F)drop.scale;
	const int step = blockDim.x;
	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		F *srow = s + r * Lk, *drow = dp + r * Lk;
		MaskLine<F> mrow = row_mask<Masked>(mask, row0 + r, Hq, Lq);
		int lim = row_lim(causal, r % Lq, Lk), n = (int)Lk, j = threadIdx.x;
		F shift = lse[r * W], delta = d[r];
		// No probability: the cpu's zeros, but for a masked row, whose
		// NaN the masked op's gradients carry, as the composite's softmax.
		if (!Masked && shift == (F)-inf_f64()) lim = 0;
		if (Dropped) {
			// Blocks of four keys, as the forward's. s becomes P∘M, for
			// dV = (P∘M)ᵀ·dO; dS takes P undropped and dP∘M.
			drop_words(drop, (u64)(row0 + r) * Lk, lim, threadIdx.x, step, [&](i64 x, u32 w) {
				F f = w >= drop.threshold ? kept_scale : (F)0;
				F p = m_exp(scaled<Masked>(srow[x], sc, mrow, (int)x) - shift);
				srow[x] = p * f;
				drow[x] = sc * p * (drow[x] * f - delta);
			});
		} else {
			for (; j + (ATT_UNROLL - 1) * step < lim; j += ATT_UNROLL * step) {
				F x[ATT_UNROLL], g[ATT_UNROLL];
#pragma unroll
				for (int u = 0; u < ATT_UNROLL; u++) {
					x[u] = srow[j + u * step];
					g[u] = drow[j + u * step];
				}
#pragma unroll
				for (int u = 0; u < ATT_UNROLL; u++) {
					F p = m_exp(scaled<Masked>(x[u], sc, mrow, j + u * step) - shift);
					srow[j + u * step] = p;
					drow[j + u * step] = sc * p * (g[u] - delta);
				}
			}
			for (; j < lim; j += step) {
				F p = m_exp(scaled<Masked>(srow[j], sc, mrow, j) - shift);
				srow[j] = p;
				drow[j] = sc * p * (drow[j] - delta);
			}
		}
		// Masked scores: P and dS are 0 (their dP is not read).
		zero_tail(srow, lim, n);
		zero_tail(drow, lim, n);
	}
}

// ATT_ROWS_MASKED calls the rows kernel body<F, Masked, Dropped>(...) of
// the launch's mask, uniform over the grid.
#define ATT_ROWS_MASKED(body, F, Dropped, ...)                                                                        \
	if (mask)                                                                                                     \
		body<F, true, Dropped>(__VA_ARGS__);                                                                  \
	else                                                                                                          \
		body<F, false, Dropped>(__VA_ARGS__);

// ATT_ENTRIES are the kernels that form probabilities, without dropout
// (variant empty, Dropped false) or with it (variant drop_).
#define ATT_ENTRIES(F, sfx, variant, Dropped)                                                                         \
	extern "C" __global__ void attention_fwd_##variant##sfx(F *out, const F *q, const F *k, const F *v, i64 N, i64 Hq,   \
							       i64 Hk, i64 Lq, i64 Lk, i64 E, i64 Ev, double scale,          \
							       i64 causal, ATT_DROP_PARAMS, ATT_MASK_PARAMS(F)) {            \
		attention_fwd<F, Dropped>(out, q, k, v, N, Hq, Hk, Lq, Lk, E, Ev, scale, causal != 0, ATT_DROP,              \
					  ATT_MASK(F));                                                                      \
	}                                                                                                                     \
	extern "C" __global__ void attention_bwd_dkv_##variant##sfx(F *dk, F *dv, const F *q, const F *k, const F *v,        \
								   const F *out, const F *grad, const F *d, i64 N, i64 Hq,   \
								   i64 Hk, i64 Lq, i64 Lk, i64 E, i64 Ev, double scale,      \
								   i64 causal, ATT_DROP_PARAMS, ATT_MASK_PARAMS(F)) {        \
		attention_bwd_dkv<F, Dropped>(dk, dv, q, k, v, out, grad, d, N, Hq, Hk, Lq, Lk, E, Ev, scale, causal != 0,   \
					      ATT_DROP, ATT_MASK(F));                                                        \
	}                                                                                                                     \
	extern "C" __global__ void attention_bwd_dq_##variant##sfx(F *dq, const F *q, const F *k, const F *v, const F *out,  \
								  const F *grad, i64 N, i64 Hq, i64 Hk, i64 Lq, i64 Lk,      \
								  i64 E, i64 Ev, double scale, i64 causal, ATT_DROP_PARAMS,  \
								  ATT_MASK_PARAMS(F)) {                                      \
		attention_bwd_dq<F, Dropped>(dq, q, k, v, out, grad, N, Hq, Hk, Lq, Lk, E, Ev, scale, causal != 0, ATT_DROP, \
					     ATT_MASK(F));                                                                   \
	}                                                                                                                     \
	extern "C" __global__ void attention_rows_fwd_##variant##sfx(F *s, F *lse, i64 rows, i64 Lq, i64 Lk, i64 W,          \
								    double scale, i64 causal, i64 Hq, i64 row0,              \
								    ATT_DROP_PARAMS, ATT_MASK_PARAMS(F)) {                   \
		ATT_ROWS_MASKED(attention_rows_fwd, F, Dropped, s, lse, rows, Lq, Lk, W, scale, causal != 0, Hq, row0,       \
				ATT_DROP, ATT_MASK(F))                                                                       \
	}                                                                                                                     \
	extern "C" __global__ void attention_rows_bwd_##variant##sfx(F *s, F *dp, const F *lse, const F *d, i64 rows,        \
								    i64 Lq, i64 Lk, i64 W, double scale, i64 causal, i64 Hq, \
								    i64 row0, ATT_DROP_PARAMS, ATT_MASK_PARAMS(F)) {         \
		ATT_ROWS_MASKED(attention_rows_bwd, F, Dropped, s, dp, lse, d, rows, Lq, Lk, W, scale, causal != 0, Hq,      \
				row0, ATT_DROP, ATT_MASK(F))                                                                 \
	}

#define LATHE_ATTENTION(F, sfx)                                                                                       \
	ATT_ENTRIES(F, sfx, , false)                                                                                  \
	ATT_ENTRIES(F, sfx, drop_, true)                                                                              \
	extern "C" __global__ void attention_bwd_delta_##sfx(F *d, const F *out, const F *grad, i64 rows, i64 Ev) {         \
		attention_bwd_delta<F>(d, out, grad, rows, Ev);                                                              \
	}
LATHE_FLOATS(LATHE_ATTENTION)
