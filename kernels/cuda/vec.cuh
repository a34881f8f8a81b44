// vec.cuh: fast access to a row's elements, for the reductions (reduce.cuh)
// and softmax (softmax.cu). row_elem, for any row, finds an element without
// dividing where it can; Vec and Split are 16-byte vector access to a
// contiguous run, for the contiguous fast paths (reduce_contig,
// softmax_contig). A GPU moves memory best in 16-byte loads per thread
// (ld.global.v4.f32, .v2.f64): a quarter of the instructions of scalar
// loads, and a warp's request is 512 contiguous bytes. Such a load must be
// 16-byte aligned, which a view's row need not be, so a run is cut into a
// scalar head up to the first 16-byte boundary, whole vectors, and a scalar
// tail.
#pragma once
#include "lathe.cuh"

// The fast paths bound their blocks' registers (__launch_bounds__), which
// NVRTC knows; the host emulation (g++, no __CUDACC__) has no register file
// to bound.
#ifndef __CUDACC__
#define __launch_bounds__(...)
#endif

// Vec is the elements of one 16-byte load or store; its alignment is what
// makes NVRTC emit the vector instruction for a copy of it.
template <typename T> struct alignas(16) Vec {
	enum { W = 16 / sizeof(T) };
	T v[W];
};

// vec_at checks, in the host emulation, that a vector access is 16-byte aligned,
// as the GPU's vector instructions require (a misaligned one is a fault
// there; the host's loads would quietly work), and aborts the test process
// if not; on the GPU it is the pointer itself.
template <typename P> __device__ __forceinline__ P *vec_at(P *p) {
#ifndef __CUDACC__
	if ((u64)p & 15) {
		fprintf(stderr, "vec.cuh: a 16-byte vector access at %p is misaligned\n", (void *)p);
		abort();
	}
#endif
	return p;
}

// Split cuts the run p[0, n) into head elements before the first 16-byte
// boundary (fewer than W, at most n), nv whole vectors from p + head, and
// tail elements after them (fewer than W). Counts are 32-bit: the host sends
// runs shorter than 2^31 elements, and 32-bit index math is a third of
// 64-bit's instructions. p must be aligned to its element's size, as every
// tensor's element is.
template <typename T> struct Split {
	i32 head, nv, tail;
	__device__ Split(const T *p, i32 n) {
		const i32 W = Vec<T>::W;
		i32 mis = (i32)(((u64)p & 15) / sizeof(T));
		head = mis ? W - mis : 0;
		if (head > n) head = n;
		nv = (n - head) / W;
		tail = n - head - nv * W;
	}
};

// aligned_like reports whether q sits at the same place within 16 bytes as
// p, so that p's split (the same head) gives aligned vectors of q too.
template <typename T> __device__ __forceinline__ bool aligned_like(const T *p, const T *q) {
	return (((u64)p ^ (u64)q) & 15) == 0;
}

// row_elem is row_at (lathe.cuh) for the rows that Collapse leaves one dim
// (a softmax's or cumsum's always, most reductions'): element j is j
// strides on, where row_at would divide j by the row's length, a 64-bit
// division (dozens of instructions) per element read.
__device__ __forceinline__ i64 row_elem(const Rows &R, int k, i64 j) {
	return R.inner_rank == 1 ? j * R.inner_stride[k][0] : row_at(R, k, j);
}
