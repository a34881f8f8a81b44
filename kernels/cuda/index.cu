// index.cu: index_select, gather, scatter, scatter_add and one_hot, and the
// value checks that report their bad indices. The semantics are lathe's cpu
// kernels' (backends/cpu/index.go). Index tensors are int32 or int64 (ikind
// 3 or 4, lathe's dispatch.DType numbering), read through their own
// strides. Whether an index is in [0, size) depends on the data, which the
// host has not read: a kernel that meets one out of range does not touch
// memory with it (a gathered element is 0, a scattered one is skipped), so a
// bad index cannot corrupt or fault; the check kernels at the end of the
// file, queued before the op, record it for the host to report
// (backends/cuda/checks.go).
//
// Launch contract common to the file: a 1-D grid of 1-D blocks of any size,
// grid-stride loops; pointers with their dtype's natural alignment.
#include "lathe.cuh"

__device__ __forceinline__ i64 index_at(const void *idx, i64 off, i32 ikind) {
	return ikind == 3 ? (i64)((const i32 *)idx)[off] : ((const i64 *)idx)[off];
}

// gather_<dtype>(T *out, const T *x, const void *idx, i64 n, Layout L,
//   i64 xstep, i64 size, i32 ikind): for each of the n output elements,
//   out[off0] = x[off1 + v * xstep] with v = idx[off2], where off0..off2 are
//   L's offsets of out, x and idx. The host builds L over out's shape with
//   x's stride along the indexed dim set to 0 (xstep is that stride), and
//   idx's strides as the index tensor's (gather) or as the 1-D index's
//   stride along the indexed dim and 0 elsewhere (index_select), so one
//   kernel is both ops.
template <typename T>
__device__ void gather(T *out, const T *x, const void *idx, i64 n, const Layout &L, i64 xstep, i64 size, i32 ikind) {
	LATHE_FOR(i, n) {
		i64 off[3];
		offsets_of<3>(L, i, off);
		i64 v = index_at(idx, off[2], ikind);
		out[off[0]] = (v >= 0 && v < size) ? x[off[1] + v * xstep] : (T)0;
	}
}

// scatter_add's sum: wrapping for integers, or for bool (torch's bool add).
template <typename T> __device__ __forceinline__ T scatter_plus(T a, T b) { return a + b; }
__device__ __forceinline__ i32 scatter_plus(i32 a, i32 b) { return wrap_add(a, b); }
__device__ __forceinline__ i64 scatter_plus(i64 a, i64 b) { return wrap_add(a, b); }
__device__ __forceinline__ u8 scatter_plus(u8 a, u8 b) { return (a || b) ? 1 : 0; }

// scatter_<dtype> and scatter_add_<dtype>(T *out, const T *src,
//   const void *idx, i64 nlines, Layout L, i64 n, i64 ostep, i64 sstep,
//   i64 istep, i64 size, i32 ikind): out already holds a copy of x. The
//   index's positions are split into nlines lines along the scattered dim
//   (L over the index's shape without that dim: operand 0 out with that dim
//   dropped, 1 src, 2 idx), each n long, with steps ostep (out's stride
//   along the dim), sstep and istep. One thread per line, walking it in
//   order: lines write disjoint elements of out (they differ off the dim),
//   and the writes that can collide happen in the cpu's row-major order, so
//   scatter keeps the last of duplicate indices and scatter_add sums in the
//   same order as the cpu, deterministically and with no atomics.
template <typename T, bool Add>
__device__ void scatter(T *out, const T *src, const void *idx, i64 nlines, const Layout &L, i64 n, i64 ostep, i64 sstep,
			i64 istep, i64 size, i32 ikind) {
	LATHE_FOR(line, nlines) {
		i64 off[3];
		offsets_of<3>(L, line, off);
		for (i64 j = 0; j < n; j++) {
			i64 v = index_at(idx, off[2] + j * istep, ikind);
			if (v < 0 || v >= size) continue;
			T s = src[off[1] + j * sstep];
			T &o = out[off[0] + v * ostep];
			o = Add ? scatter_plus(o, s) : s;
		}
	}
}

// scatter_sorted_<dtype> and scatter_add_sorted_<dtype>(T *out,
//   const T *src, const void *idx, const i64 *perm, i64 pstride,
//   i64 nlines, Layout L, i64 n, i64 ostep, i64 sstep, i64 istep, i64 size,
//   i32 ikind): scatter's arguments and lines for long lines, with each
//   line's index sorted first: perm + line * pstride is the stable order
//   that sorts the line's n index values (argsort), so that the places
//   holding one value lie together, in their own order (pstride 0: one
//   order for an index that is the same on every line, as index_select's
//   backward's, so embedding's, whose lines are the columns; n: an order per
//   line, as max_pool_backward's planes). A thread per (sorted place, line),
//   line fastest (a grid-stride loop over n * nlines): the thread at the
//   start of a run of equal values writes that value's element of the
//   line's out from the run, in its order (the last src for scatter, out's
//   element plus each src in turn for scatter_add), which is the order of
//   the one-thread-per-line walk, so the bits are the same; the rest do
//   nothing. That walk took n dependent steps on each of nlines threads;
//   here the distinct values of every line run side by side.
template <typename T, bool Add>
__device__ void scatter_sorted(T *out, const T *src, const void *idx, const i64 *perm, i64 pstride, i64 nlines,
			       const Layout &L, i64 n, i64 ostep, i64 sstep, i64 istep, i64 size, i32 ikind) {
	LATHE_FOR(i, n * nlines) {
		i64 line = i % nlines, j = i / nlines;
		i64 off[3];
		offsets_of<3>(L, line, off);
		const i64 *order = perm + line * pstride;
		i64 v = index_at(idx, off[2] + order[j] * istep, ikind);
		if (v < 0 || v >= size || (j > 0 && index_at(idx, off[2] + order[j - 1] * istep, ikind) == v)) continue;
		T &o = out[off[0] + v * ostep];
		T acc = o;
		for (i64 k = j; k < n; k++) {
			i64 at = order[k];
			if (k > j && index_at(idx, off[2] + at * istep, ikind) != v) break;
			T s = src[off[1] + at * sstep];
			acc = Add ? scatter_plus(acc, s) : s;
		}
		o = acc;
	}
}

#define LATHE_MOVE_INDEX(T, sfx)                                                                                   \
	extern "C" __global__ void gather_##sfx(T *out, const T *x, const void *idx, i64 n, Layout L, i64 xstep,  \
						i64 size, i32 ikind) {                                            \
		gather<T>(out, x, idx, n, L, xstep, size, ikind);                                                 \
	}                                                                                                          \
	extern "C" __global__ void scatter_##sfx(T *out, const T *src, const void *idx, i64 nlines, Layout L, i64 n, \
						 i64 ostep, i64 sstep, i64 istep, i64 size, i32 ikind) {          \
		scatter<T, false>(out, src, idx, nlines, L, n, ostep, sstep, istep, size, ikind);                 \
	}                                                                                                          \
	extern "C" __global__ void scatter_sorted_##sfx(T *out, const T *src, const void *idx, const i64 *perm,    \
							i64 pstride, i64 nlines, Layout L, i64 n, i64 ostep,        \
							i64 sstep, i64 istep, i64 size, i32 ikind) {                \
		scatter_sorted<T, false>(out, src, idx, perm, pstride, nlines, L, n, ostep, sstep, istep, size,   \
					 ikind);                                                                  \
	}
#define LATHE_INDEX(T, sfx)                                                                                        \
	LATHE_MOVE_INDEX(T, sfx)                                                                                   \
	extern "C" __global__ void scatter_add_##sfx(T *out, const T *src, const void *idx, i64 nlines, Layout L,   \
						     i64 n, i64 ostep, i64 sstep, i64 istep, i64 size, i32 ikind) { \
		scatter<T, true>(out, src, idx, nlines, L, n, ostep, sstep, istep, size, ikind);                  \
	}                                                                                                          \
	extern "C" __global__ void scatter_add_sorted_##sfx(T *out, const T *src, const void *idx,                \
							    const i64 *perm, i64 pstride, i64 nlines, Layout L,     \
							    i64 n, i64 ostep, i64 sstep, i64 istep, i64 size,       \
							    i32 ikind) {                                            \
		scatter_sorted<T, true>(out, src, idx, perm, pstride, nlines, L, n, ostep, sstep, istep, size,    \
					ikind);                                                                   \
	}
LATHE_ALL(LATHE_INDEX)
// The 16-bit floats' gather and scatter move their bits (u16), a
// signalling NaN's too; scatter_add computes, through float32 temporaries
// (dispatch.ViaCompute).
LATHE_MOVE_INDEX(u16, f16)
LATHE_MOVE_INDEX(u16, bf16)

// one_hot(i64 *out, const void *idx, i64 n, Layout L, i64 classes,
//   i32 ikind): out (contiguous, the index's shape + [classes], n elements
//   in all) gets 1 where the last coordinate is the index's value and 0
//   elsewhere. L is over the index's shape, operand 1 the index's strides
//   (operand 0 unused).
extern "C" __global__ void one_hot(i64 *out, const void *idx, i64 n, Layout L, i64 classes, i32 ikind) {
	LATHE_FOR(q, n) {
		i64 p = q / classes, c = q - p * classes;
		i64 off[2];
		offsets_of<2>(L, p, off);
		out[q] = index_at(idx, off[1], ikind) == c ? 1 : 0;
	}
}

// ---- Value checks (dispatch's ValueCheck; the host side is
// backends/cuda/checks.go). A check's slot is two u64 words in device
// memory: slot[0] the row-major position of the first bad value, all ones
// (no bad value) until a check writes it, and slot[1] that value as an i64.
// The host sets a slot to all ones before its check and reads it back at
// the next drain (a read-back or Synchronize), so nothing waits here.
//
// index_check_<i32|i64>(u64 *slot, const T *values, i64 n, Layout L,
//   i64 lo, i64 hi, i64 ignore, i32 flags): for each of the n values
//   (operand 0 of L, over the values' own shape, so that i is the
//   row-major position), a value outside [lo, hi] (inside it, where bit 1
//   of flags, dispatch's Outside, is set) that is not ignore (when bit 0
//   is set) takes atomicMin(slot[0], i). Any 1-D grid of 1-D
//   blocks; slot 8-byte aligned (the host's slots are 16 bytes apart),
//   values with T's alignment.
// check_fetch_<i32|i64>(u64 *slot, const T *values, Layout L): then writes
//   the value at position slot[0] to slot[1], if there is one. Launched
//   after index_check on the same stream, with the same values and L, as
//   one block of one thread.
template <typename T>
__device__ void index_check(u64 *slot, const T *values, i64 n, const Layout &L, i64 lo, i64 hi, i64 ignore,
			    i32 flags) {
	bool inside_bad = (flags & 2) != 0;
	LATHE_FOR(i, n) {
		i64 off[1];
		offsets_of<1>(L, i, off);
		i64 v = values[off[0]];
		if ((v < lo || v > hi) != inside_bad && !((flags & 1) && v == ignore)) atomicMin(slot, (u64)i);
	}
}

template <typename T>
__device__ void check_fetch(u64 *slot, const T *values, const Layout &L) {
	if (blockIdx.x != 0 || threadIdx.x != 0 || slot[0] == ~(u64)0) return;
	i64 off[1];
	offsets_of<1>(L, (i64)slot[0], off);
	slot[1] = (u64)(i64)values[off[0]];
}

#define LATHE_CHECK(T, sfx)                                                                                        \
	extern "C" __global__ void index_check_##sfx(u64 *slot, const T *values, i64 n, Layout L, i64 lo, i64 hi, \
						     i64 ignore, i32 flags) {                                     \
		index_check<T>(slot, values, n, L, lo, hi, ignore, flags);                                       \
	}                                                                                                          \
	extern "C" __global__ void check_fetch_##sfx(u64 *slot, const T *values, Layout L) {                      \
		check_fetch<T>(slot, values, L);                                                                  \
	}
LATHE_INTS(LATHE_CHECK)
