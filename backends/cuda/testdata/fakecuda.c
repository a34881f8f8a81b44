// A stand-in for libcuda.so.1, built by fake_test.go with the system's C
// compiler so that the backend's cgo code runs, end to end, on a machine
// without a GPU. It implements each entry point that lathe looks up with
// the documented signature, and checks what the real driver would refuse:
// a context made current on the calling thread before each call that works
// in one, the stream flags, host copies only from pinned memory. "Device"
// memory is host memory; kernels are C functions that run at launch.
//
// With LATHE_FAKE_CUDA_EMU naming the host emulation's library
// (internal/cudaemu, which runs kernels/cuda's sources), every kernel of the
// PTX modules the backend loads runs there instead, with its parameters as
// the PTX declares them: the backend and lathe's real kernels, end to end,
// without a GPU (internal/conformance's TestEmulatedCUDA).
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_DEVICE = 101, INVALID_CONTEXT = 201,
       INVALID_PTX = 218, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700, LAUNCH_FAILED = 719 };

static int the_ctx, the_stream, the_module;
static __thread void *current; // cuCtxSetCurrent is per thread
static CUresult sticky;        // a kernel's fault, as the real driver keeps it
static size_t capacity = 64 << 20, used; // 1 GiB on the emulation

typedef int (*emu_launch_t)(const char *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void **);
static emu_launch_t emu_launch; // lathe_emu_launch, where LATHE_FAKE_CUDA_EMU opens

// The real driver is thread-safe: every entry point that touches the
// stand-in's shared state (memory accounting, pinned blocks, the copies
// waiting to land, events, modules, the context's count) holds mu, to its
// return. The emulation's launches take a lock of their own.
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void unlock_mu(int *unused) { pthread_mutex_unlock(&mu); }
#define LOCKED() int locked_ __attribute__((cleanup(unlock_mu))) = (pthread_mutex_lock(&mu), 0)

#define NEED_CTX() do { if (current != &the_ctx) return INVALID_CONTEXT; if (sticky) return sticky; } while (0)

CUresult cuGetErrorName(CUresult r, const char **s) {
	switch (r) {
	case OK: *s = "CUDA_SUCCESS"; return OK;
	case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return OK;
	case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
	case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
	case INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; return OK;
	case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return OK;
	case ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return OK;
	case LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; return OK;
	}
	*s = NULL;
	return INVALID_VALUE;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
	switch (r) {
	case OUT_OF_MEMORY: *s = "out of memory"; return OK;
	case ILLEGAL_ADDRESS: *s = "an illegal memory access was encountered"; return OK;
	case INVALID_PTX: *s = "a PTX JIT compilation failed"; return OK;
	}
	return cuGetErrorName(r, s);
}
CUresult cuInit(unsigned int flags) {
	if (flags != 0) return INVALID_VALUE;
	const char *emu = getenv("LATHE_FAKE_CUDA_EMU");
	if (emu && *emu && !emu_launch) {
		void *h = dlopen(emu, RTLD_NOW | RTLD_LOCAL);
		if (!h || !(emu_launch = (emu_launch_t)dlsym(h, "lathe_emu_launch"))) {
			fprintf(stderr, "fakecuda: LATHE_FAKE_CUDA_EMU=%s: %s\n", emu, dlerror());
			return NOT_FOUND;
		}
		capacity = (size_t)1 << 30;
	}
	return OK;
}
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return OK; }
CUresult cuDeviceGet(int *d, int ordinal) { if (ordinal != 0) return INVALID_DEVICE; *d = 0; return OK; }
CUresult cuDeviceGetName(char *buf, int len, int d) { strncpy(buf, "Fake GPU", len); return d == 0 ? OK : INVALID_DEVICE; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
	switch (attr) {
	case 16: *v = 132; return OK; // multiprocessors
	case 75: *v = 9; return OK;   // compute capability major
	case 76: *v = 0; return OK;   // minor
	}
	return INVALID_VALUE;
}
CUresult cuDeviceTotalMem_v2(size_t *n, int d) { *n = capacity; return OK; }
// The primary context lives while retained; a call in it after the last
// release fails, as in a destroyed context.
static int retained;
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { LOCKED(); retained++; *c = &the_ctx; return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { LOCKED(); if (retained == 0) return INVALID_CONTEXT; retained--; return OK; }
CUresult cuCtxSetCurrent(void *c) { LOCKED(); current = c == &the_ctx && retained == 0 ? NULL : c; return OK; }
CUresult cuStreamCreate(void **s, unsigned int flags) {
	NEED_CTX();
	if (flags != 1) return INVALID_VALUE; // lathe asks for CU_STREAM_NON_BLOCKING
	*s = &the_stream;
	return OK;
}
static void land(void);
static void waited(unsigned long long upto);
static void add_entries(const char *ptx);
CUresult cuStreamSynchronize(void *s) {
	LOCKED();
	NEED_CTX();
	if (s != &the_stream) return INVALID_VALUE;
	land();
	waited(~0ULL);
	return OK;
}

// A module's "PTX" is text; one that contains BROKEN fails to JIT, with a
// message in the error log that options 5 and 6 (CU_JIT_ERROR_LOG_BUFFER,
// _SIZE_BYTES) give.
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned int n, int *opts, void **vals) {
	LOCKED();
	NEED_CTX();
	if (strstr(image, "BROKEN")) {
		char *log = NULL;
		size_t size = 0;
		for (unsigned int i = 0; i < n; i++) {
			if (opts[i] == 5) log = vals[i];
			if (opts[i] == 6) size = (size_t)(uintptr_t)vals[i];
		}
		if (log && size > 0) strncpy(log, "ptxas fatal : fake syntax error on line 1", size - 1);
		return INVALID_PTX;
	}
	if (emu_launch) add_entries(image);
	*m = &the_module;
	return OK;
}

typedef void (*kernel_t)(void **params, unsigned int grid[3], unsigned int block[3]);
// A kernel: the stand-in's own (run), or the emulation's (run is NULL).
struct fn { const char *name; kernel_t run; int nparams; size_t sizes[64]; };

// axpy(const float *x, float *y, i64 n, float alpha, struct {i64 a, b, c} s):
// y[i] = alpha*x[i] + y[i] + s.a*s.b - s.c.
static void axpy(void **p, unsigned int grid[3], unsigned int block[3]) {
	const float *x = (const float *)(uintptr_t)*(CUdeviceptr *)p[0];
	float *y = (float *)(uintptr_t)*(CUdeviceptr *)p[1];
	long long n = *(long long *)p[2];
	float alpha = *(float *)p[3];
	long long *s = p[4];
	for (long long i = 0; i < n; i++) y[i] = alpha * x[i] + y[i] + (float)(s[0] * s[1] - s[2]);
}
// fault: an illegal address, which the driver reports at the next wait.
static void fault(void **p, unsigned int grid[3], unsigned int block[3]) { sticky = ILLEGAL_ADDRESS; }

// The tiled matmul's contract (kernels/cuda/matmul.cu): A, B, C, M, N, K,
// batch, then strides {A's batch, row, col; B's; C's} in elements.
#define MATMUL(T, NAME)                                                                           \
	static void NAME(void **p, unsigned int grid[3], unsigned int block[3]) {                     \
		const T *A = (const T *)(uintptr_t)*(CUdeviceptr *)p[0];                                  \
		const T *B = (const T *)(uintptr_t)*(CUdeviceptr *)p[1];                                  \
		T *C = (T *)(uintptr_t)*(CUdeviceptr *)p[2];                                              \
		long long M = *(long long *)p[3], N = *(long long *)p[4], K = *(long long *)p[5];         \
		long long batch = *(long long *)p[6], *s = p[7];                                          \
		if (block[0] != 16 || block[1] != 16 || grid[0] * 16 < N || grid[1] * 16 < M) return;     \
		for (long long b = 0; b < batch; b++)                                                     \
			for (long long i = 0; i < M; i++)                                                     \
				for (long long j = 0; j < N; j++) {                                               \
					T acc = 0;                                                                    \
					for (long long k = 0; k < K; k++)                                             \
						acc += A[b * s[0] + i * s[1] + k * s[2]] * B[b * s[3] + k * s[4] + j * s[5]]; \
					C[b * s[6] + i * s[7] + j * s[8]] = acc;                                      \
				}                                                                                 \
	}
MATMUL(float, matmul_f32)
MATMUL(double, matmul_f64)

// The value checks' contract (kernels/cuda/index.cu): index_check_<t>(u64
// *slot, const T *values, i64 n, Layout L, i64 lo, i64 hi, i64 ignore,
// i32 ignoring) puts the least row-major position of a bad value in
// slot[0]; check_fetch_<t>(slot, values, L) copies that value to slot[1].
struct layout { long long rank, shape[8], stride[4][8], offset[4]; };
static long long offset0(const struct layout *L, long long i) {
	long long off = L->offset[0];
	for (int d = (int)L->rank - 1; d >= 0; d--) {
		off += (i % L->shape[d]) * L->stride[0][d];
		i /= L->shape[d];
	}
	return off;
}
#define CHECK(T, SFX)                                                                                   \
	static void index_check_##SFX(void **p, unsigned int grid[3], unsigned int block[3]) {          \
		unsigned long long *slot = (unsigned long long *)(uintptr_t)*(CUdeviceptr *)p[0];       \
		const T *v = (const T *)(uintptr_t)*(CUdeviceptr *)p[1];                                \
		long long n = *(long long *)p[2];                                                       \
		const struct layout *L = p[3];                                                          \
		long long lo = *(long long *)p[4], hi = *(long long *)p[5], ignore = *(long long *)p[6]; \
		int ignoring = *(int *)p[7];                                                            \
		for (long long i = 0; i < n; i++) {                                                     \
			long long x = v[offset0(L, i)];                                                 \
			if ((x < lo || x > hi) && !(ignoring && x == ignore) && (unsigned long long)i < slot[0]) \
				slot[0] = i;                                                            \
		}                                                                                       \
	}                                                                                               \
	static void check_fetch_##SFX(void **p, unsigned int grid[3], unsigned int block[3]) {          \
		unsigned long long *slot = (unsigned long long *)(uintptr_t)*(CUdeviceptr *)p[0];       \
		const T *v = (const T *)(uintptr_t)*(CUdeviceptr *)p[1];                                \
		if (grid[0] * block[0] != 1) return;                                                    \
		if (slot[0] != ~0ULL) slot[1] = (unsigned long long)(long long)v[offset0(p[2], slot[0])]; \
	}
CHECK(int, i32)
CHECK(long long, i64)

// The narrow dtypes' conversions (kernels/cuda/narrow.cu):
// convert_<from>_<to>(To *out, const From *x, i64 n), contiguous. The
// stand-in converts float16 with the C compiler's _Float16 (round to
// nearest even), an implementation independent of narrow.cu's bits.
#define CONVERT(From, To, NAME)                                                 \
	static void NAME(void **p, unsigned int grid[3], unsigned int block[3]) { \
		To *out = (To *)(uintptr_t)*(CUdeviceptr *)p[0];                  \
		const From *x = (const From *)(uintptr_t)*(CUdeviceptr *)p[1];    \
		long long n = *(long long *)p[2];                                 \
		for (long long i = 0; i < n; i++) out[i] = (To)x[i];              \
	}
CONVERT(_Float16, float, convert_f16_f32)
CONVERT(float, _Float16, convert_f32_f16)
CONVERT(signed char, int, convert_i8_i32)
CONVERT(unsigned int, signed char, convert_i32_i8) // the low 8 bits (gcc converts out-of-range values modulo 2^8)

// bfloat16 is float32's top 16 bits: widening shifts them up; rounding
// adds half an ulp less one, plus the kept lowest bit (ties to even), and
// sets a NaN's quiet bit so that it stays a NaN.
static void convert_bf16_f32(void **p, unsigned int grid[3], unsigned int block[3]) {
	unsigned int *out = (unsigned int *)(uintptr_t)*(CUdeviceptr *)p[0];
	const unsigned short *x = (const unsigned short *)(uintptr_t)*(CUdeviceptr *)p[1];
	long long n = *(long long *)p[2];
	for (long long i = 0; i < n; i++) out[i] = (unsigned int)x[i] << 16;
}
static void convert_f32_bf16(void **p, unsigned int grid[3], unsigned int block[3]) {
	unsigned short *out = (unsigned short *)(uintptr_t)*(CUdeviceptr *)p[0];
	const unsigned int *x = (const unsigned int *)(uintptr_t)*(CUdeviceptr *)p[1];
	long long n = *(long long *)p[2];
	for (long long i = 0; i < n; i++) {
		unsigned int u = x[i];
		u = (u & 0x7fffffffu) > 0x7f800000u ? u | 0x400000u : u + 0x7fffu + ((u >> 16) & 1);
		out[i] = (unsigned short)(u >> 16);
	}
}

static struct fn fns[] = {
	{"axpy", axpy, 5, {8, 8, 8, 4, 24}},
	{"fault", fault, 0, {0}},
	{"matmul_tiled_f32", matmul_f32, 8, {8, 8, 8, 8, 8, 8, 8, 72}},
	{"matmul_tiled_f64", matmul_f64, 8, {8, 8, 8, 8, 8, 8, 8, 72}},
	{"index_check_i32", index_check_i32, 8, {8, 8, 8, 360, 8, 8, 8, 4}},
	{"index_check_i64", index_check_i64, 8, {8, 8, 8, 360, 8, 8, 8, 4}},
	{"check_fetch_i32", check_fetch_i32, 3, {8, 8, 360}},
	{"check_fetch_i64", check_fetch_i64, 3, {8, 8, 360}},
	{"convert_f16_f32", convert_f16_f32, 3, {8, 8, 8}},
	{"convert_f32_f16", convert_f32_f16, 3, {8, 8, 8}},
	{"convert_bf16_f32", convert_bf16_f32, 3, {8, 8, 8}},
	{"convert_f32_bf16", convert_f32_bf16, 3, {8, 8, 8}},
	{"convert_i8_i32", convert_i8_i32, 3, {8, 8, 8}},
	{"convert_i32_i8", convert_i32_i8, 3, {8, 8, 8}},
};

// The emulation's kernels: each .entry of the modules loaded, with its
// parameters' sizes as the PTX declares them (.param .u64 x, .param .align
// 8 .b8 x[360], ...).
static struct fn emu_fns[4096];
static int nemu;

static size_t ptx_type_bytes(const char *t) {
	int bits = atoi(t + 2); // .u64, .f32, .b8, ...
	return bits >= 8 ? (size_t)bits / 8 : 0;
}

static void add_entries(const char *ptx) {
	static const char tag[] = ".visible .entry ";
	for (const char *e = strstr(ptx, tag); e && nemu < 4096; e = strstr(e, tag)) {
		e += sizeof tag - 1;
		const char *open = strchr(e, '('), *close = open ? strchr(open, ')') : NULL;
		if (!close) return;
		struct fn *k = &emu_fns[nemu];
		k->name = strndup(e, open - e);
		k->run = NULL;
		k->nparams = 0;
		for (const char *q = strstr(open, ".param"); q && q < close && k->nparams < 64; q = strstr(q, ".param")) {
			q += 6;
			while (*q == ' ') q++;
			if (strncmp(q, ".align", 6) == 0) {
				q += 6;
				while (*q == ' ' || (*q >= '0' && *q <= '9')) q++;
			}
			size_t bytes = ptx_type_bytes(q);
			const char *end = strpbrk(q, ",)\n"), *bracket = strchr(q, '[');
			if (bracket && end && bracket < end) bytes *= (size_t)atol(bracket + 1);
			k->sizes[k->nparams++] = bytes;
		}
		nemu++;
	}
}

CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
	LOCKED();
	NEED_CTX();
	if (emu_launch) {
		for (int i = 0; i < nemu; i++)
			if (strcmp(emu_fns[i].name, name) == 0) { *f = &emu_fns[i]; return OK; }
		return NOT_FOUND;
	}
	for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
		if (strcmp(fns[i].name, name) == 0) { *f = &fns[i]; return OK; }
	return NOT_FOUND;
}
CUresult cuFuncGetParamInfo(void *f, size_t i, size_t *off, size_t *size) {
	struct fn *k = f;
	if (i >= (size_t)k->nparams) return INVALID_VALUE;
	*off = 0;
	*size = k->sizes[i];
	return OK;
}
CUresult cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz,
		unsigned int shared, void *s, void **params, void **extra) {
	NEED_CTX();
	if (s != &the_stream || extra != NULL || (((struct fn *)f)->nparams > 0 && params == NULL)) return INVALID_VALUE;
	struct fn *k = f;
	if (!k->run) { // the emulation's: a launch it cannot finish is a kernel's fault
		if (emu_launch(k->name, gx, gy, gz, bx, by, bz, params) != 0) sticky = LAUNCH_FAILED;
		return OK;
	}
	unsigned int grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
	k->run(params, grid, block);
	return OK;
}

// Device memory: host memory after a header that holds the size.
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	LOCKED();
	NEED_CTX();
	if (n == 0) return INVALID_VALUE;
	if (used + n > capacity) return OUT_OF_MEMORY;
	size_t *h = malloc(n + 16);
	h[0] = n;
	used += n;
	*p = (CUdeviceptr)(uintptr_t)(h + 2);
	return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	LOCKED();
	NEED_CTX();
	size_t *h = (size_t *)(uintptr_t)p - 2;
	used -= h[0];
	free(h);
	return OK;
}
CUresult cuMemGetInfo_v2(size_t *free, size_t *total) { LOCKED(); NEED_CTX(); *free = capacity - used; *total = capacity; return OK; }

// Pinned host memory: copies to and from the device must use it.
static void *pinned[64];
static size_t pinnedSize[64];
static int is_pinned(const void *p, size_t n) {
	for (int i = 0; i < 64; i++)
		if (pinned[i] && (const char *)p >= (char *)pinned[i] && (const char *)p + n <= (char *)pinned[i] + pinnedSize[i]) return 1;
	return 0;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags) {
	LOCKED();
	NEED_CTX();
	for (int i = 0; i < 64; i++)
		if (!pinned[i]) { pinned[i] = *p = malloc(n); pinnedSize[i] = n; return OK; }
	return OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) {
	LOCKED();
	for (int i = 0; i < 64; i++)
		if (pinned[i] == p) { pinned[i] = NULL; free(p); return OK; }
	return INVALID_VALUE;
}
// A copy to the device reads its pinned source when the device gets to it,
// not at the call: the host may write that memory again only once it has
// waited for an event recorded after the copy, or for the stream. reading
// holds the copies not yet waited for (the latest 4096); a copy into or
// out of pinned memory that one of them still reads is the host reusing
// memory too soon, whose bytes the device would get undefined: refused,
// and said on stderr.
static struct {
	uintptr_t lo, hi;
	unsigned long long seq;
} reading[4096];
static int nreading;
static unsigned long long copies; // the copies to the device so far
static int still_read(const void *p, size_t n, const char *what) {
	uintptr_t lo = (uintptr_t)p, hi = lo + n;
	for (int i = 0; i < nreading; i++) {
		if (lo < reading[i].hi && reading[i].lo < hi) {
			fprintf(stderr, "fakecuda: %s pinned memory that a queued copy to the device still reads\n", what);
			return 1;
		}
	}
	return 0;
}
static void waited(unsigned long long upto) { // the copies up to upto are done
	int k = 0;
	for (int i = 0; i < nreading; i++)
		if (reading[i].seq > upto) reading[k++] = reading[i];
	nreading = k;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
	LOCKED();
	NEED_CTX();
	if (s != &the_stream || !is_pinned(src, n) || still_read(src, n, "a copy to the device from")) return INVALID_VALUE;
	memcpy((void *)(uintptr_t)dst, src, n);
	if (nreading == 4096) memmove(reading, reading + 1, --nreading * sizeof reading[0]);
	reading[nreading].lo = (uintptr_t)src, reading[nreading].hi = (uintptr_t)src + n, reading[nreading].seq = ++copies;
	nreading++;
	return OK;
}
// A copy to the host lands at the next wait (an event's or the stream's),
// not at the call, as a device's DMA does: a stage read before its copy is
// waited for still holds what it held before.
static struct {
	void *dst;
	const void *src;
	size_t n;
} landing[64];
static int nlanding;
static void land(void) {
	for (int i = 0; i < nlanding; i++) memcpy(landing[i].dst, landing[i].src, landing[i].n);
	nlanding = 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
	LOCKED();
	NEED_CTX();
	if (s != &the_stream || !is_pinned(dst, n) || still_read(dst, n, "a copy from the device into")) return INVALID_VALUE;
	if (nlanding == 64) land();
	landing[nlanding].dst = dst, landing[nlanding].src = (void *)(uintptr_t)src, landing[nlanding].n = n;
	nlanding++;
	return OK;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, void *s) {
	NEED_CTX();
	if (s != &the_stream) return INVALID_VALUE;
	memset((void *)(uintptr_t)dst, v, n);
	return OK;
}
static int events[8], nevents;
CUresult cuEventCreate(void **e, unsigned int flags) {
	LOCKED();
	NEED_CTX();
	if (flags != 2 || nevents == 8) return INVALID_VALUE; // CU_EVENT_DISABLE_TIMING
	*e = &events[nevents++];
	return OK;
}
static unsigned long long event_copies[8]; // each event's count of copies when recorded
CUresult cuEventRecord(void *e, void *s) {
	LOCKED();
	NEED_CTX();
	if (s != &the_stream) return INVALID_VALUE;
	event_copies[(int *)e - events] = copies;
	return OK;
}
CUresult cuEventSynchronize(void *e) {
	LOCKED();
	NEED_CTX();
	land();
	waited(event_copies[(int *)e - events]);
	return OK;
}
