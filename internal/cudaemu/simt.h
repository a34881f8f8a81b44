// simt.h: just enough of CUDA's device built-ins, on the host, to run
// lathe's kernels (kernels/cuda/*.cu, included unchanged) on a CPU; Load
// (build.go) compiles every module against it into one library. Each thread
// of a block is a host thread (kept in a pool), blocks run one after
// another, __syncthreads is a barrier over the block and __shfl_down_sync
// exchanges through a slot per thread with a barrier per warp. The launch
// state is global, so one launch runs at a time (Emulator.Launch locks). It
// is slow and meant for small inputs; what it checks is the kernels' logic
// (indexing, reduction trees, NaN and tie rules), not their speed or the
// GPU's rounding of libdevice functions, which are the host libm's here.
#pragma once

#include <barrier>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static // one block runs at a time, so statics are its shared memory

struct uint3 {
	unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
	unsigned x, y, z;
	dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};

inline thread_local uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

namespace simt {
inline std::unique_ptr<std::barrier<>> block_bar;
inline std::vector<std::unique_ptr<std::barrier<>>> warp_bars;
inline int slots[1024];

inline int flat_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
} // namespace simt

inline void __syncthreads() { simt::block_bar->arrive_and_wait(); }

// Lanes past the warp's end read their own value, as on the GPU.
inline int __shfl_down_sync(unsigned, int v, int delta) {
	int t = simt::flat_thread(), lane = t & 31, w = t >> 5;
	int nt = blockDim.x * blockDim.y * blockDim.z;
	int width = nt - w * 32 < 32 ? nt - w * 32 : 32;
	simt::slots[t] = v;
	simt::warp_bars[w]->arrive_and_wait();
	int r = lane + delta < width ? simt::slots[t + delta] : v;
	simt::warp_bars[w]->arrive_and_wait();
	return r;
}

// The butterfly exchange: lane l reads lane l^mask, or its own value where
// that lane is past the warp's end.
inline int __shfl_xor_sync(unsigned, int v, int mask) {
	int t = simt::flat_thread(), lane = t & 31, w = t >> 5;
	int nt = blockDim.x * blockDim.y * blockDim.z;
	int width = nt - w * 32 < 32 ? nt - w * 32 : 32;
	simt::slots[t] = v;
	simt::warp_bars[w]->arrive_and_wait();
	int r = (lane ^ mask) < width ? simt::slots[w * 32 + (lane ^ mask)] : v;
	simt::warp_bars[w]->arrive_and_wait();
	return r;
}

inline float __int_as_float(int i) {
	float f;
	std::memcpy(&f, &i, 4);
	return f;
}
inline double __longlong_as_double(long long i) {
	double d;
	std::memcpy(&d, &i, 8);
	return d;
}
inline int __float_as_int(float f) {
	int i;
	std::memcpy(&i, &f, 4);
	return i;
}
inline long long __double_as_longlong(double d) {
	long long i;
	std::memcpy(&i, &d, 8);
	return i;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// Pool keeps the threads that play a block's GPU threads between blocks
// and launches: starting a std::thread per GPU thread per block costs more
// than the kernels. It is never destroyed (its threads wait forever).
struct Pool {
	std::mutex mu;
	std::condition_variable start, done;
	std::vector<std::thread> threads;
	std::function<void(int)> job;
	long generation = 0;
	int active = 0, remaining = 0;

	// run calls f(t) on threads 0 .. n-1 at once and waits for them all.
	void run(int n, std::function<void(int)> f) {
		std::unique_lock<std::mutex> l(mu);
		while ((int)threads.size() < n) {
			int id = threads.size();
			threads.emplace_back([this, id] { work(id); });
			threads.back().detach();
		}
		job = std::move(f);
		active = remaining = n;
		generation++;
		start.notify_all();
		done.wait(l, [&] { return remaining == 0; });
	}

	void work(int id) {
		long seen = 0;
		std::unique_lock<std::mutex> l(mu);
		for (;;) {
			start.wait(l, [&] { return generation != seen; });
			seen = generation;
			if (id >= active) continue;
			std::function<void(int)> f = job;
			l.unlock();
			f(id);
			l.lock();
			if (--remaining == 0) done.notify_one();
		}
	}
};

inline Pool &pool() {
	static Pool *p = new Pool;
	return *p;
}

// launch runs body (a call of the kernel) on every thread of every block,
// one block at a time.
template <typename F>
void launch(dim3 grid, dim3 block, F body) {
	gridDim = grid;
	blockDim = block;
	int nt = block.x * block.y * block.z;
	for (unsigned bz = 0; bz < grid.z; bz++)
		for (unsigned by = 0; by < grid.y; by++)
			for (unsigned bx = 0; bx < grid.x; bx++) {
				simt::block_bar = std::make_unique<std::barrier<>>(nt);
				simt::warp_bars.clear();
				for (int w = 0; w * 32 < nt; w++) simt::warp_bars.push_back(std::make_unique<std::barrier<>>(nt - w * 32 < 32 ? nt - w * 32 : 32));
				pool().run(nt, [&](int t) {
					threadIdx.x = t % block.x;
					threadIdx.y = (t / block.x) % block.y;
					threadIdx.z = t / (block.x * block.y);
					blockIdx.x = bx;
					blockIdx.y = by;
					blockIdx.z = bz;
					body();
				});
			}
}

// atomicMin on a 64-bit word, as CUDA's (sm_35 on): the old value. The
// block's threads are host threads, so it is a compare-exchange loop.
inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) {
	unsigned long long old = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
	}
	return old;
}

// The round-to-nearest arithmetic intrinsics (the host does not contract).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
