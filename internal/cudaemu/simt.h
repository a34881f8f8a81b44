// simt.h: just enough of CUDA's device built-ins, on the host, to run
// lathe's kernels (kernels/cuda/*.cu, included unchanged) on a CPU; Load
// (build.go) compiles every module against it into one library.
//
// Blocks run one after another on the launching host thread, and a block's
// GPU threads are fibers on it: each has a stack of its own and runs until
// it waits at a barrier (__syncthreads, or its warp's in a shuffle) or
// returns, and then the next one runs, in thread order. A switch is a few
// register moves (simt_switch, below), where an OS thread per GPU thread
// cost a trip through the kernel's scheduler at every barrier: on a 2-core
// machine the attention tests spent most of their time there. Running
// one thread at a time also makes a launch deterministic, and a barrier
// that some threads of a block have left (a divergent __syncthreads, a
// hang on a GPU) ends the launch with an error instead of hanging.
//
// The launch state is global, so one launch runs at a time
// (lathe_emu_launch locks). It is slow and meant for small inputs; what it checks is the
// kernels' logic (indexing, reduction trees, NaN and tie rules), not their
// speed or the GPU's rounding of libdevice functions, which are the host
// libm's here.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>
// simt_switch is written for x86-64 ELF targets (Linux, the BSDs); the
// rest switch with ucontext, as -DSIMT_UCONTEXT does everywhere.
#if defined(__x86_64__) && defined(__ELF__) && !defined(SIMT_UCONTEXT)
#define SIMT_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __constant__ // a global of the host program, read as any other
#define __shared__ static // one block runs at a time, so statics are its shared memory

struct uint3 {
	unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
	unsigned x, y, z;
	dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};

// threadIdx is the running fiber's; the scheduler sets it at each switch.
inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

namespace simt {

// stackBytes is each fiber's stack, under a guard page that turns an
// overflow into a fault; the kernels' frames are small, but -O0 keeps every
// local in memory.
constexpr size_t stackBytes = 256 << 10;

// Context is a switched-out fiber's (or the scheduler's) saved state. With
// simt_switch it is the stack pointer, with the callee-saved registers and
// the floating-point control words pushed under it; elsewhere (and with
// -DSIMT_UCONTEXT, which tests that path on x86-64) it is POSIX's ucontext,
// whose swapcontext also saves the signal mask, a system call a switch.
#ifdef SIMT_ASM_SWITCH
struct Context {
	void *sp = nullptr;
};
extern "C" void simt_switch(void **save, void *to);
extern "C" void simt_start();
inline void switch_to(Context &from, Context &to) { simt_switch(&from.sp, to.sp); }

// start makes ctx begin in entry(arg) on the stack below top (16-aligned):
// simt_switch's pops then take the words laid out here, and its ret goes
// to simt_start, which calls entry with arg (r13 and r12).
inline void start(Context &ctx, char *top, void (*entry)(long), long arg) {
	uint32_t controls[2] = {0, 0};
	__asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(controls[0]), "=m"(controls[1]));
	uint64_t *sp = (uint64_t *)top - 10; // 8 words, 16-aligned after the ret
	std::memcpy(&sp[0], controls, 8);     // mxcsr, then the x87 control word
	sp[1] = 0;                            // r15
	sp[2] = 0;                            // r14
	sp[3] = (uint64_t)entry;              // r13
	sp[4] = (uint64_t)arg;                // r12
	sp[5] = 0;                            // rbx
	sp[6] = 0;                            // rbp
	sp[7] = (uint64_t)simt_start;         // simt_switch's return address
	ctx.sp = sp;
}
#else
struct Context {
	ucontext_t uc;
};
inline void switch_to(Context &from, Context &to) { swapcontext(&from.uc, &to.uc); }

inline void start(Context &ctx, char *top, void (*entry)(long), long arg) {
	getcontext(&ctx.uc);
	ctx.uc.uc_stack.ss_sp = top - stackBytes;
	ctx.uc.uc_stack.ss_size = stackBytes;
	ctx.uc.uc_link = nullptr;
	makecontext(&ctx.uc, (void (*)())entry, 1, arg);
}
#endif

struct Fiber {
	Context ctx;
	char *top = nullptr; // of its stack, kept for the next launch
	uint3 idx;
	bool done = false;
};

// Barrier is a barrier over n fibers: the last to arrive opens the next
// phase and goes on, the others switch out until it does.
struct Barrier {
	int n = 0, arrived = 0;
	long phase = 0;
};

inline std::vector<Fiber> fibers;
inline Context scheduler;
inline int current = -1;
// progress counts the barriers opened and the fibers finished: a round of
// the scheduler that leaves it unchanged has every live fiber waiting for
// one that will never arrive.
inline long progress = 0;
inline void (*body)(void *);
inline void *body_arg;

inline Barrier block_bar;
inline std::vector<Barrier> warp_bars;
inline int slots[1024];

inline int flat_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

inline void yield() { switch_to(fibers[current].ctx, scheduler); }

inline void wait(Barrier &b) {
	long phase = b.phase;
	if (++b.arrived == b.n) {
		b.arrived = 0;
		b.phase++;
		progress++;
		return;
	}
	while (b.phase == phase) yield();
}

// entry is where every fiber begins: the kernel, then back to the
// scheduler for good.
inline void entry(long t) {
	body(body_arg);
	fibers[t].done = true;
	progress++;
	yield();
	std::abort(); // a finished fiber is never resumed
}

// stack returns a fresh stack's top: a mapping with a guard page at its low
// end, reserved but not committed until used.
inline char *stack() {
	size_t page = sysconf(_SC_PAGESIZE);
	void *p = mmap(nullptr, stackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) return nullptr;
	mprotect(p, page, PROT_NONE);
	return (char *)p + page + stackBytes;
}

// Why a launch stops short: a barrier that can never open (some threads
// wait at it while the rest have returned), a stack that could not be
// mapped, or a block that CUDA refuses (no threads, or more than 1024).
enum { ok = 0, stuck = 1, no_stack = 2, bad_block = 3 };

// run_block runs one block's nt threads to the end.
inline int run_block(dim3 block, uint3 b, int nt) {
	blockIdx = b;
	if ((int)fibers.size() < nt) fibers.resize(nt);
	for (int t = 0; t < nt; t++) {
		Fiber &f = fibers[t];
		if (!f.top && !(f.top = stack())) return no_stack;
		f.idx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
		f.done = false;
		start(f.ctx, f.top, entry, t);
	}
	block_bar = Barrier{nt};
	warp_bars.assign((nt + 31) / 32, Barrier{});
	for (int w = 0; w * 32 < nt; w++) warp_bars[w].n = nt - w * 32 < 32 ? nt - w * 32 : 32;
	for (;;) {
		long before = progress;
		bool live = false;
		for (int t = 0; t < nt; t++) {
			if (fibers[t].done) continue;
			live = true;
			current = t;
			threadIdx = fibers[t].idx;
			switch_to(scheduler, fibers[t].ctx);
		}
		if (!live) return ok;
		if (progress == before) return stuck;
	}
}
} // namespace simt

inline void __syncthreads() { simt::wait(simt::block_bar); }

// Lanes past the warp's end read their own value, as on the GPU.
inline int __shfl_down_sync(unsigned, int v, int delta) {
	int t = simt::flat_thread(), lane = t & 31, w = t >> 5;
	int nt = blockDim.x * blockDim.y * blockDim.z;
	int width = nt - w * 32 < 32 ? nt - w * 32 : 32;
	simt::slots[t] = v;
	simt::wait(simt::warp_bars[w]);
	int r = lane + delta < width ? simt::slots[t + delta] : v;
	simt::wait(simt::warp_bars[w]);
	return r;
}

// The butterfly exchange: lane l reads lane l^mask, or its own value where
// that lane is past the warp's end.
inline int __shfl_xor_sync(unsigned, int v, int mask) {
	int t = simt::flat_thread(), lane = t & 31, w = t >> 5;
	int nt = blockDim.x * blockDim.y * blockDim.z;
	int width = nt - w * 32 < 32 ? nt - w * 32 : 32;
	simt::slots[t] = v;
	simt::wait(simt::warp_bars[w]);
	int r = (lane ^ mask) < width ? simt::slots[w * 32 + (lane ^ mask)] : v;
	simt::wait(simt::warp_bars[w]);
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

// launch runs body(arg) (a call of the kernel) on every thread of every
// block, one block at a time, and returns simt::ok or why a block could not
// finish.
inline int launch(dim3 grid, dim3 block, void (*body)(void *), void *arg) {
	gridDim = grid;
	blockDim = block;
	simt::body = body;
	simt::body_arg = arg;
	unsigned long long nt = (unsigned long long)block.x * block.y * block.z;
	if (nt == 0 || nt > 1024) return simt::bad_block;
	for (unsigned bz = 0; bz < grid.z; bz++)
		for (unsigned by = 0; by < grid.y; by++)
			for (unsigned bx = 0; bx < grid.x; bx++)
				if (int r = simt::run_block(block, uint3{bx, by, bz}, nt); r != simt::ok) return r;
	return simt::ok;
}

// simt_switch(save, to) saves the callee-saved registers and the
// floating-point control words on the running stack, stores its pointer in
// *save and resumes the stack at to (a context that simt_switch saved, or
// one that start laid out). simt_start calls a new fiber's entry. One
// translation unit (the library's entry point) defines them.
#if defined(SIMT_MAIN) && defined(SIMT_ASM_SWITCH)
__asm__(R"(
	.text
	.globl simt_switch
	.hidden simt_switch
	.type simt_switch, @function
simt_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	subq $8, %rsp
	stmxcsr (%rsp)
	fnstcw 4(%rsp)
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	ldmxcsr (%rsp)
	fldcw 4(%rsp)
	addq $8, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size simt_switch, .-simt_switch

	.globl simt_start
	.hidden simt_start
	.type simt_start, @function
simt_start:
	movq %r12, %rdi
	callq *%r13
	ud2
	.size simt_start, .-simt_start
)");
#endif

// atomicMin on a 64-bit word, as CUDA's (sm_35 on): the old value. The
// block's threads take turns on one host thread, so a plain
// read-modify-write would do; the compare-exchange keeps it right for any
// schedule.
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
