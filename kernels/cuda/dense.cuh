// dense.cuh: what the fast forms of the elementwise families (unary.cuh,
// binary.cu, elementwise.cu) share: 16-byte vector accesses, the walk of a
// broadcast operand without a division per element, and the 32-bit layout
// whose divisions are multiplications.
//
// Why these forms exist (measured on an H200, issue 16): the plain
// contiguous loop moves 4 bytes per load and one element per thread, which
// keeps too few bytes in flight per multiprocessor to reach the memory's
// bandwidth (a+b float32 16M ran at 2.74 TB/s, PyTorch's vectorised loop at
// 4.04); and the strided walk divides in 64 bits once per dim per element,
// some 70 instructions each, so a broadcast operand (a bias, a scalar) made
// the op compute-bound. The host (backends/cuda/ops_elementwise.go) picks:
//   - the dense form (out contiguous; each input contiguous and either of
//     out's shape, a single element, or out's trailing dims, i.e. periodic
//     in the flat index): vector loop where the pointers allow, scalar rest,
//     32-bit indices (a launch past 2^31 elements is split by the host);
//   - the strided32 form (a Layout32) where n and every operand's reach fit
//     in 31 bits;
//   - the 64-bit strided form (lathe.cuh's Layout) otherwise.
// What the host emulation cannot show: that Vec accesses compile to
// ld.global.v4/v2 (kernels/ptx's tests check the PTX has them), coalescing
// (a warp's 32 Vecs are 512 consecutive bytes), occupancy (ptxas -v for
// sm_90 gave the float32 binary ops' dense form 32 registers, so all 2048
// threads of a multiprocessor can be resident; the 64-bit loop had 44),
// and the speed of any of it, which is unmeasured: the H200 run is owed.
#pragma once
#include "half.cuh"
#include "lathe.cuh"

// Vec is N elements of T moved as one access of N * sizeof(T) bytes (at
// most 16): its alignment makes NVRTC emit one vector load or store
// (ld.global.v4.f32, v2.f64, ...; 8 float16s as v4.u32) for a whole Vec.
template <typename T, int N> struct alignas(sizeof(T) * N) Vec {
	T v[N];
};

// Width is the elements per vector access for kernels whose widest operand
// type is W: 16 bytes of it.
template <typename W> struct Width {
	static const int value = 16 / (int)sizeof(W);
};

// Wider is the larger of two types, by size (which fixes a kernel's
// vector width when its input and output types differ: casts, compares).
template <typename A, typename B, bool AWider = (sizeof(A) >= sizeof(B))> struct Wider {
	typedef A type;
};
template <typename A, typename B> struct Wider<A, B, false> {
	typedef B type;
};

// aligned says whether p is on a boundary of a Vec<T, N> (N·sizeof(T)
// bytes: 16, or less where the other operands' type is wider). A view with
// an element offset (a slice, a concat's part) may not be, and then the
// kernel takes its scalar loop: a misaligned vector access faults.
template <typename T, int N> __device__ __forceinline__ bool aligned(const T *p) {
	return ((u64)p & (sizeof(Vec<T, N>) - 1)) == 0;
}

// Operand is one input of a dense kernel: its pointer and its period p,
// the number of output elements after which it repeats (p = n: of out's
// shape; p = 1: one element broadcast; p = the size of out's trailing dims:
// a row, such as a bias). It walks j = i mod p for i = start, start +
// step, ... with one division when a thread starts (none where i < p, as
// for an operand of out's shape) and none per element: a grid-stride step
// is below p once reduced, so one subtraction wraps j. cur is the vector
// last loaded. Indices are 32-bit (the host splits a launch past 2^31
// elements), which keeps the loop's registers few enough for every
// thread of a multiprocessor to be resident.
template <typename T, int N> struct Operand {
	const T *__restrict__ x;
	u32 p, j, step;
	Vec<T, N> cur;

	__device__ __forceinline__ Operand(const T *__restrict__ x, i64 p) : x(x), p((u32)p), j(0), step(0) {}
	// reduce is a mod p; p is 0 only for n = 0, where nothing is read.
	__device__ __forceinline__ u32 reduce(u32 a) const { return p <= 1 ? 0 : a < p ? a : a % p; }
	// vectorizable says whether the operand can be read as Vecs at the
	// output's vector boundaries (i a multiple of N, i + N <= n): a single
	// element always can (read once and repeated); one of out's shape, or
	// of a period of whole vectors, when x is aligned.
	__device__ __forceinline__ bool vectorizable(u32 n) const { return p == 1 || ((p == n || p % N == 0) && aligned<T, N>(x)); }
	__device__ __forceinline__ void start(u32 i, u32 stride) {
		j = reduce(i);
		step = reduce(stride);
	}
	__device__ __forceinline__ void next() {
		j += step; // below 2p - 1 < 2^32
		if (j >= p) j -= p;
	}
	__device__ __forceinline__ void load() {
		if (p == 1) {
			T v = x[0];
#pragma unroll
			for (int e = 0; e < N; e++) cur.v[e] = v;
		} else {
			cur = *reinterpret_cast<const Vec<T, N> *>(x + j);
		}
	}
	__device__ __forceinline__ T at() const { return x[j]; }
};

// LATHE_EACH evaluates expr once per operand of the pack in, in order (a
// C++14 pack expansion; the array is never read).
#define LATHE_EACH(expr)                 \
	{                                \
		int each_[] = {0, ((expr), 0)...}; \
		(void)each_;             \
	}

// dense_map is the dense form of every elementwise family: out[i] =
// f(in_k[i mod p_k]...) for i in [0, n), f taking and giving the operands'
// and out's compute types (half.cuh's computed), out contiguous, n < 2^31 (the
// host splits a longer launch: backends/cuda's denseChunk). Where out and
// every operand allow it, the first n - n mod N elements go as Vecs of N
// (one 16-byte access per operand at most), each thread taking whole
// vectors in a grid-stride loop; the rest (the tail, or everything when a
// pointer is misaligned) one element per thread. out may be an input
// exactly (each element is read and written by one thread, the read
// first); it must not overlap one partially. Index arithmetic is 32-bit:
// with the grid below 2^24 threads, no sum below wraps.
template <int N, typename R, typename F, typename... In>
__device__ __forceinline__ void dense_map(R *__restrict__ out, i64 n64, F f, In... in) {
	u32 n = (u32)n64;
	u32 t = blockIdx.x * blockDim.x + threadIdx.x, threads = blockDim.x * gridDim.x;
	bool vec = aligned<R, N>(out);
	LATHE_EACH(vec = vec && in.vectorizable(n));
	u32 nv = vec ? n / N : 0;
	LATHE_EACH(in.start(t * N, threads * N));
	// Not unrolled: a full grid keeps 16 bytes per operand in flight per
	// thread, which is enough, and unrolling every op and dtype's loops
	// made the modules 2.5 times as large and their JIT 4 times as slow.
#pragma unroll 1
	for (u32 v = t; v < nv; v += threads) {
		LATHE_EACH(in.load());
		Vec<R, N> r;
#pragma unroll
		for (int e = 0; e < N; e++) r.v[e] = computed<R>(f, in.cur.v[e]...);
		*reinterpret_cast<Vec<R, N> *>(out + v * N) = r;
		LATHE_EACH(in.next());
	}
	LATHE_EACH(in.start(nv * N + t, threads));
#pragma unroll 1
	for (u32 i = nv * N + t; i < n; i += threads) {
		out[i] = computed<R>(f, in.at()...);
		LATHE_EACH(in.next());
	}
}

// Layout32 is Layout for a walk where n and every operand's offsets fit
// in 31 bits: shapes, strides and offsets in 32 bits, and each dim's size
// as a divisor by multiplication (magic, shift: Granlund and Montgomery,
// "Division by invariant integers using multiplication", PLDI 1994, the
// round-up form), so unravelling an index costs a multiply-high, an add
// and a shift per dim instead of a 64-bit division. For a size d: shift is
// the least s with 2^s >= d and magic is floor(2^32 (2^s - d) / d) + 1;
// then i / d = (umulhi(i, magic) + i) >> shift for every i < 2^31. The
// host (backends/cuda/layout.go, cLayout32) writes the same bytes; every
// field is 4 bytes, so there is no padding:
//   rank    0
//   shape   4    (8 x u32)
//   magic   36   (8 x u32)
//   shift   68   (8 x u32)
//   stride  100  (4 x 8 x i32, operand-major)
//   size    228
struct Layout32 {
	i32 rank;
	u32 shape[LATHE_MAX_RANK];
	u32 magic[LATHE_MAX_RANK];
	u32 shift[LATHE_MAX_RANK];
	i32 stride[LATHE_MAX_OPERANDS][LATHE_MAX_RANK];
};
static_assert(sizeof(Layout32) == 228, "Layout32 must match backends/cuda cLayout32");

// umulhi is the high word of a 32 x 32-bit product (mul.hi.u32 on the GPU;
// spelled out so that the host emulation needs no intrinsic).
__device__ __forceinline__ u32 umulhi(u32 a, u32 b) { return (u32)(((u64)a * b) >> 32); }

// offsets32_of is offsets_of for a Layout32: i < 2^31.
template <int K>
__device__ __forceinline__ void offsets32_of(const Layout32 &L, u32 i, i32 (&off)[K]) {
#pragma unroll
	for (int k = 0; k < K; k++) off[k] = 0;
#pragma unroll
	for (int d = LATHE_MAX_RANK - 1; d >= 0; d--) {
		if (d < L.rank) {
			u32 q = (umulhi(i, L.magic[d]) + i) >> L.shift[d];
			i32 c = (i32)(i - q * L.shape[d]);
			i = q;
#pragma unroll
			for (int k = 0; k < K; k++) off[k] += c * L.stride[k][d];
		}
	}
}

// The grid-stride loop over [0, n) of the strided32 forms, in 32 bits:
// i < 2^31 and the thread count below 2^31, so i + step never wraps.
#define LATHE_FOR32(i, n)                                                  \
	for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < (u32)(n); \
	     i += blockDim.x * gridDim.x)

// for_each_strided<K>(L, n, f) is the walk of every strided form: f(off)
// for each of the n elements in a grid-stride loop, off holding the
// element offsets of its K operands. The index width is L's: 64 bits for a
// Layout (the strided forms), 32 for a Layout32 (the strided32 forms), so
// that one template of a family makes both.
template <int K, typename F>
__device__ __forceinline__ void for_each_strided(const Layout &L, i64 n, F f) {
	LATHE_FOR(i, n) {
		i64 off[K];
		offsets_of<K>(L, i, off);
		f(off);
	}
}

template <int K, typename F>
__device__ __forceinline__ void for_each_strided(const Layout32 &L, i32 n, F f) {
	LATHE_FOR32(i, n) {
		i32 off[K];
		offsets32_of<K>(L, i, off);
		f(off);
	}
}
