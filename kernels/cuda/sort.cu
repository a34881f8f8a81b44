// sort.cu: argsort, the stable permutation that sorts each row of a Rows
// description (operand 0 the int64 output, operand 1 the input; the inner
// shape is the one sorted dim) in torch's order (backends/cuda/ops_sort.go).
// Each element becomes an unsigned 64-bit key whose order is torch's: a
// float's bits made monotone (negatives complemented, the rest with the
// sign bit set), -0 taken as +0 and every NaN the largest key; an integer
// with its sign bit flipped; a bool 0 or 1. A descending sort complements
// the key. Ties are broken by the element's index in the row, so the
// sorting networks below, unstable by themselves, give the stable order.
//
// argsort_block_<dtype>(i64 *out, const T *x, Rows R, i64 nrows, i64 n,
//     i64 B, i64 nb, i32 desc, SortKey *scratch):
//   one block per task (row r = task / nb, block b = task % nb: elements
//   [b*B, b*B + B) of the row), a grid-stride loop over the nrows*nb tasks
//   (1-D grid of any size; blockDim.x any, at most 1024). B is a power of
//   two, at most LATHE_SORT_BLOCK. The block loads its elements into
//   shared memory (12 KiB), pads past the row's end with the largest
//   (key, index), and sorts them with a bitonic network: log2(B)(log2(B)+1)/2
//   steps of B/2 compare-exchanges, O(B log² B) work. With nb == 1 the row
//   is done and the indices go to out; otherwise the sorted (key, index)
//   pairs go to scratch[r*n + j] (nrows*n SortKeys), for argsort_merge.
// argsort_merge(i64 *out, const SortKey *src, SortKey *dst, Rows R,
//     i64 nrows, i64 n, i64 width, i32 last):
//   one thread per element, a grid-stride loop over nrows*n (1-D grid and
//   blocks of any size). src holds each row as sorted runs of width; an
//   element of run q finds its place in the merge of runs q and q^1 as its
//   offset in its own run plus the count of the other run's elements below
//   it (a binary search; the pairs are distinct, so the two runs agree on
//   every comparison). It writes the pair to dst, or, with last, its index
//   to out. O(n log n) per pass; the host runs ceil(log2(n/B)) passes, so a
//   long row costs O(n log² B + n log n log(n/B)).
#include "lathe.cuh"

#define LATHE_SORT_BLOCK 1024

// SortKey is one element of a row in the merge passes' scratch memory.
struct SortKey {
	u64 key;
	i64 at;
};

__device__ __forceinline__ u64 sort_key(float v) {
	if (v != v) return ~0ULL;
	u32 b = (u32)__float_as_int(v);
	if (b == 0x80000000u) b = 0; // -0 sorts as +0
	return (b & 0x80000000u) ? (u64)(~b) : (u64)(b | 0x80000000u);
}
__device__ __forceinline__ u64 sort_key(double v) {
	if (v != v) return ~0ULL;
	u64 b = (u64)__double_as_longlong(v);
	if (b == 0x8000000000000000ULL) b = 0;
	return (b & 0x8000000000000000ULL) ? ~b : (b | 0x8000000000000000ULL);
}
__device__ __forceinline__ u64 sort_key(i32 v) { return (u64)((u32)v ^ 0x80000000u); }
__device__ __forceinline__ u64 sort_key(i64 v) { return (u64)v ^ 0x8000000000000000ULL; }
__device__ __forceinline__ u64 sort_key(u8 v) { return v != 0; }

// sort_before says whether (ka, ia) sorts before (kb, ib).
__device__ __forceinline__ bool sort_before(u64 ka, i64 ia, u64 kb, i64 ib) {
	return ka < kb || (ka == kb && ia < ib);
}

template <typename T>
__device__ void argsort_block(i64 *out, const T *x, const Rows &R, i64 nrows, i64 n, i64 B, i64 nb, i32 desc,
                              SortKey *scratch) {
	__shared__ u64 keys[LATHE_SORT_BLOCK];
	__shared__ u32 idx[LATHE_SORT_BLOCK];
	u64 flip = desc ? ~0ULL : 0ULL;
	for (i64 task = blockIdx.x; task < nrows * nb; task += gridDim.x) {
		i64 r = task / nb, first = (task - r * nb) * B;
		i64 bx = row_base(R, 1, r);
		for (i64 t = threadIdx.x; t < B; t += blockDim.x) {
			i64 j = first + t;
			if (j < n) {
				keys[t] = sort_key(x[bx + row_at(R, 1, j)]) ^ flip;
				idx[t] = (u32)t;
			} else {
				keys[t] = ~0ULL;
				idx[t] = 0xffffffffu;
			}
		}
		__syncthreads();
		for (i64 k = 2; k <= B; k <<= 1) {
			for (i64 j = k >> 1; j > 0; j >>= 1) {
				for (i64 q = threadIdx.x; q < B / 2; q += blockDim.x) {
					i64 a = (q / j) * 2 * j + q % j, b = a + j;
					bool swap = sort_before(keys[b], idx[b], keys[a], idx[a]) == ((a & k) == 0);
					if (swap) {
						u64 tk = keys[a];
						keys[a] = keys[b];
						keys[b] = tk;
						u32 ti = idx[a];
						idx[a] = idx[b];
						idx[b] = ti;
					}
				}
				__syncthreads();
			}
		}
		i64 bo = row_base(R, 0, r);
		for (i64 t = threadIdx.x; t < B; t += blockDim.x) {
			if (first + t < n) {
				i64 at = first + idx[t];
				if (nb == 1) {
					out[bo + row_at(R, 0, first + t)] = at;
				} else {
					scratch[r * n + first + t] = SortKey{keys[t], at};
				}
			}
		}
		__syncthreads(); // the next task reuses keys and idx
	}
}

extern "C" __global__ void argsort_merge(i64 *out, const SortKey *src, SortKey *dst, Rows R, i64 nrows, i64 n,
                                         i64 width, i32 last) {
	LATHE_FOR(i, nrows * n) {
		i64 r = i / n, pos = i - r * n;
		const SortKey *row = src + r * n;
		SortKey me = row[pos];
		i64 run = pos / width;
		i64 lo = (run ^ 1) * width;
		if (lo > n) lo = n;
		i64 start = lo, hi = lo + width < n ? lo + width : n;
		while (lo < hi) {
			i64 mid = lo + (hi - lo) / 2;
			if (sort_before(row[mid].key, row[mid].at, me.key, me.at)) {
				lo = mid + 1;
			} else {
				hi = mid;
			}
		}
		i64 to = (run & ~(i64)1) * width + (pos - run * width) + (lo - start);
		if (last) {
			out[row_base(R, 0, r) + row_at(R, 0, to)] = me.at;
		} else {
			dst[r * n + to] = me;
		}
	}
}

#define LATHE_ARGSORT(T, sfx)                                                                                   \
	extern "C" __global__ void argsort_block_##sfx(i64 *out, const T *x, Rows R, i64 nrows, i64 n, i64 B, i64 nb, \
	                                               i32 desc, SortKey *scratch) {                                   \
		argsort_block<T>(out, x, R, nrows, n, B, nb, desc, scratch);                                              \
	}
LATHE_ALL(LATHE_ARGSORT)
