// simt_check.cpp: simt.h's scheduler on hand-written kernels, each checked
// against what a GPU gives (TestSimtScheduler builds and runs it). It
// prints each failure and exits 1 if there was one.
#define SIMT_MAIN
#include "simt.h"

static int failures;

static void expect(bool ok, const char *what, int i, long got, long want) {
	if (!ok) {
		std::printf("%s[%d] = %ld, want %ld\n", what, i, got, want);
		failures++;
	}
}

// Each thread of a 3-D block reads, after a barrier, what the next thread
// wrote before it.
static int neighbour[2 * 60];
__global__ void read_neighbour() {
	__shared__ int s[60];
	int t = simt::flat_thread();
	s[t] = 10 * t + threadIdx.z;
	__syncthreads();
	int nt = blockDim.x * blockDim.y * blockDim.z;
	neighbour[blockIdx.x * nt + t] = s[(t + 1) % nt] + 1000 * blockIdx.x;
}

// A hundred barriers in a loop, with shared memory rewritten between them.
static int sums[64];
__global__ void barrier_loop() {
	__shared__ int v[64];
	int acc = 0;
	for (int i = 0; i < 100; i++) {
		v[threadIdx.x] = i * threadIdx.x;
		__syncthreads();
		acc += v[63 - threadIdx.x];
		__syncthreads();
	}
	sums[threadIdx.x] = acc;
}

// Shuffles in a block of a warp and a half: the second warp has 16 lanes.
static int xors[48], downs[48];
__global__ void shuffles() {
	int t = threadIdx.x;
	xors[t] = __shfl_xor_sync(~0u, t, 5);
	downs[t] = __shfl_down_sync(~0u, t, 8);
}

// Thread 0 returns; the others wait at a barrier it will never reach.
__global__ void divergent() {
	if (threadIdx.x == 0) return;
	__syncthreads();
}

static void run(const char *name, dim3 grid, dim3 block, void (*kernel)(), int want) {
	int got = launch(grid, block, [](void *k) { ((void (*)())k)(); }, (void *)kernel);
	if (got != want) {
		std::printf("%s: launch returned %d, want %d\n", name, got, want);
		failures++;
	}
}

int main() {
	run("read_neighbour", dim3(2), dim3(3, 4, 5), read_neighbour, simt::ok);
	for (int b = 0; b < 2; b++)
		for (int t = 0; t < 60; t++) {
			int n = (t + 1) % 60;
			expect(neighbour[b * 60 + t] == 10 * n + n / 12 + 1000 * b, "neighbour", b * 60 + t, neighbour[b * 60 + t], 10 * n + n / 12 + 1000 * b);
		}

	run("barrier_loop", dim3(1), dim3(64), barrier_loop, simt::ok);
	for (int t = 0; t < 64; t++) expect(sums[t] == 4950 * (63 - t), "sums", t, sums[t], 4950 * (63 - t));

	run("shuffles", dim3(1), dim3(48), shuffles, simt::ok);
	for (int t = 0; t < 48; t++) {
		int width = t < 32 ? 32 : 16, lane = t & 31, base = t - lane;
		int x = (lane ^ 5) < width ? base + (lane ^ 5) : t;
		int d = lane + 8 < width ? t + 8 : t;
		expect(xors[t] == x, "xors", t, xors[t], x);
		expect(downs[t] == d, "downs", t, downs[t], d);
	}

	run("divergent", dim3(1), dim3(32), divergent, simt::stuck);
	// Blocks that CUDA refuses, the last one's product past 32 bits.
	run("no threads", dim3(1), dim3(0), barrier_loop, simt::bad_block);
	run("1025 threads", dim3(1), dim3(1025), barrier_loop, simt::bad_block);
	run("2^32 threads", dim3(1), dim3(4096, 1024, 1024), barrier_loop, simt::bad_block);
	// The stuck launch's fibers are abandoned; the next launch starts clean.
	run("barrier_loop after divergent", dim3(1), dim3(64), barrier_loop, simt::ok);
	expect(sums[0] == 4950 * 63, "sums", 0, sums[0], 4950 * 63);

	if (failures) return 1;
	std::printf("ok\n");
	return 0;
}
