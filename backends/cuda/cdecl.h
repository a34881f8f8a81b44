// Every C declaration of lathe's cuda backend, written from the CUDA Driver
// API reference and the cuBLAS guide so that no CUDA header is needed to
// build: the handful of types (opaque handles are pointers to incomplete
// structs, CUresult and cublasStatus_t are int enums with 0 for success,
// CUdeviceptr is 64 bits), a table of entry points per library that
// driver.go fills with dlsym, and one static function per call, because cgo
// cannot call a C function pointer from Go.
//
// Every call that works in a context takes that context and makes it
// current first, inside the same C call: a cgo call runs on one OS thread
// from start to end, so the context is current on the thread that makes the
// call, whichever thread the goroutine runs on next. cuCtxSetCurrent only
// stores a thread-local pointer, which costs far less than pinning the
// goroutine with runtime.LockOSThread around every sequence of calls.

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <dlfcn.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef int CUjit_option;
typedef struct cublasContext *cublasHandle_t;
typedef int cublasStatus_t;

// Values from the Driver API's enums.
enum {
	LATHE_CU_STREAM_NON_BLOCKING = 0x1, // CUstream_flags: no implicit sync with the legacy stream 0
	LATHE_CU_EVENT_DISABLE_TIMING = 0x2, // CUevent_flags: a cheaper event that only orders
	LATHE_CU_JIT_ERROR_LOG_BUFFER = 5, // CUjit_option, value: char *
	LATHE_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6, // value: the size, cast to a pointer
	LATHE_MAX_PARAMS = 64, // maxParams in params.go
	LATHE_CTX_FAILED = -1, // a cuBLAS shim's return when making its context current failed
};

typedef struct {
	CUresult (*getErrorName)(CUresult, const char **);
	CUresult (*getErrorString)(CUresult, const char **);
	CUresult (*init)(unsigned int);
	CUresult (*driverGetVersion)(int *);
	CUresult (*deviceGetCount)(int *);
	CUresult (*deviceGet)(CUdevice *, int);
	CUresult (*deviceGetName)(char *, int, CUdevice);
	CUresult (*deviceGetAttribute)(int *, int, CUdevice);
	CUresult (*deviceTotalMem)(size_t *, CUdevice);                 // cuDeviceTotalMem_v2
	CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*primaryCtxRelease)(CUdevice);                        // cuDevicePrimaryCtxRelease_v2
	CUresult (*ctxSetCurrent)(CUcontext);
	CUresult (*streamCreate)(CUstream *, unsigned int);
	CUresult (*streamSynchronize)(CUstream);
	CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned int, CUjit_option *, void **);
	CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*launchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
		unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
	CUresult (*memAlloc)(CUdeviceptr *, size_t);                     // cuMemAlloc_v2
	CUresult (*memFree)(CUdeviceptr);                                // cuMemFree_v2
	CUresult (*memGetInfo)(size_t *, size_t *);                      // cuMemGetInfo_v2
	CUresult (*memcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream); // _v2
	CUresult (*memcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);       // _v2
	CUresult (*memsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*memHostAlloc)(void **, size_t, unsigned int);
	CUresult (*memFreeHost)(void *);
	CUresult (*eventCreate)(CUevent *, unsigned int);
	CUresult (*eventRecord)(CUevent, CUstream);
	CUresult (*eventSynchronize)(CUevent);
	// Optional (CUDA 12.4 on): NULL where the driver is older.
	CUresult (*funcGetParamInfo)(CUfunction, size_t, size_t *, size_t *);
} lathe_cuda;

typedef struct {
	cublasStatus_t (*create)(cublasHandle_t *);                     // cublasCreate_v2
	cublasStatus_t (*setStream)(cublasHandle_t, CUstream);          // cublasSetStream_v2
	cublasStatus_t (*setMathMode)(cublasHandle_t, int);
	cublasStatus_t (*getVersion)(cublasHandle_t, int *);            // cublasGetVersion_v2
	cublasStatus_t (*sgemmStridedBatched)(cublasHandle_t, int, int, int, int, int,
		const float *, const float *, int, long long, const float *, int, long long,
		const float *, float *, int, long long, int);
	cublasStatus_t (*dgemmStridedBatched)(cublasHandle_t, int, int, int, int, int,
		const double *, const double *, int, long long, const double *, int, long long,
		const double *, double *, int, long long, int);
	// Optional: NULL where the library lacks it (matmul of float16 and
	// bfloat16 then goes through float32 temporaries and the sgemm above).
	cublasStatus_t (*gemmStridedBatchedEx)(cublasHandle_t, int, int, int, int, int,
		const void *, const void *, int, int, long long, const void *, int, int, long long,
		const void *, void *, int, int, long long, int, int, int);
	// Optional (cuBLAS 11.4.2 on): NULL where the library is older.
	const char *(*getStatusName)(cublasStatus_t);
	const char *(*getStatusString)(cublasStatus_t);
	cublasStatus_t (*destroy)(cublasHandle_t);                      // cublasDestroy_v2
} lathe_cublas;

#define LATHE_IN_CTX(l, ctx) do { CUresult r_ = (l)->ctxSetCurrent(ctx); if (r_ != 0) return r_; } while (0)

static const char *lathe_cu_error_name(lathe_cuda *l, CUresult r) {
	const char *s = NULL;
	return l->getErrorName(r, &s) == 0 ? s : NULL;
}
static const char *lathe_cu_error_string(lathe_cuda *l, CUresult r) {
	const char *s = NULL;
	return l->getErrorString(r, &s) == 0 ? s : NULL;
}
static CUresult lathe_cu_init(lathe_cuda *l) { return l->init(0); } // Flags must be 0
static CUresult lathe_cu_driver_version(lathe_cuda *l, int *v) { return l->driverGetVersion(v); }
static CUresult lathe_cu_device_count(lathe_cuda *l, int *n) { return l->deviceGetCount(n); }
static CUresult lathe_cu_device_get(lathe_cuda *l, CUdevice *d, int ordinal) { return l->deviceGet(d, ordinal); }
static CUresult lathe_cu_device_name(lathe_cuda *l, char *buf, int len, CUdevice d) { return l->deviceGetName(buf, len, d); }
static CUresult lathe_cu_device_attribute(lathe_cuda *l, int *v, int attr, CUdevice d) { return l->deviceGetAttribute(v, attr, d); }
static CUresult lathe_cu_device_total_mem(lathe_cuda *l, size_t *bytes, CUdevice d) { return l->deviceTotalMem(bytes, d); }
static CUresult lathe_cu_primary_ctx_retain(lathe_cuda *l, CUcontext *c, CUdevice d) { return l->primaryCtxRetain(c, d); }
static CUresult lathe_cu_primary_ctx_release(lathe_cuda *l, CUdevice d) { return l->primaryCtxRelease(d); }

// Makes c current on the calling thread for the calls that follow there
// (backend.WithStream locks the goroutine to the thread around them).
static CUresult lathe_cu_ctx_set_current(lathe_cuda *l, CUcontext c) { return l->ctxSetCurrent(c); }
static CUresult lathe_cu_stream_create(lathe_cuda *l, CUcontext c, CUstream *s) {
	LATHE_IN_CTX(l, c);
	return l->streamCreate(s, LATHE_CU_STREAM_NON_BLOCKING);
}
static CUresult lathe_cu_stream_synchronize(lathe_cuda *l, CUcontext c, CUstream s) {
	LATHE_IN_CTX(l, c);
	return l->streamSynchronize(s);
}
// The image is NUL-terminated PTX text; the JIT's error log goes to log.
static CUresult lathe_cu_module_load(lathe_cuda *l, CUcontext c, CUmodule *m, const void *image, char *log, size_t logSize) {
	CUjit_option opts[2] = {LATHE_CU_JIT_ERROR_LOG_BUFFER, LATHE_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[2] = {log, (void *)(uintptr_t)logSize};
	LATHE_IN_CTX(l, c);
	return l->moduleLoadDataEx(m, image, 2, opts, vals);
}
static CUresult lathe_cu_module_function(lathe_cuda *l, CUcontext c, CUfunction *f, CUmodule m, const char *name) {
	LATHE_IN_CTX(l, c);
	return l->moduleGetFunction(f, m, name);
}
static int lathe_cu_has_param_info(lathe_cuda *l) { return l->funcGetParamInfo != NULL; }
static CUresult lathe_cu_param_info(lathe_cuda *l, CUcontext c, CUfunction f, size_t i, size_t *off, size_t *size) {
	LATHE_IN_CTX(l, c);
	return l->funcGetParamInfo(f, i, off, size);
}
// The parameters' values lie in image at offs[i]; kernelParams points at
// them. The driver copies the values before cuLaunchKernel returns.
static CUresult lathe_cu_launch(lathe_cuda *l, CUcontext c, CUfunction f,
		unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz,
		unsigned int shared, CUstream s, unsigned char *image, const unsigned int *offs, int n) {
	void *params[LATHE_MAX_PARAMS];
	if (n < 0 || n > LATHE_MAX_PARAMS) return 1; // CUDA_ERROR_INVALID_VALUE; params.go checks first
	for (int i = 0; i < n; i++) params[i] = image + offs[i];
	LATHE_IN_CTX(l, c);
	return l->launchKernel(f, gx, gy, gz, bx, by, bz, shared, s, n > 0 ? params : NULL, NULL);
}
static CUresult lathe_cu_mem_alloc(lathe_cuda *l, CUcontext c, CUdeviceptr *p, size_t bytes) {
	LATHE_IN_CTX(l, c);
	return l->memAlloc(p, bytes);
}
static CUresult lathe_cu_mem_free(lathe_cuda *l, CUcontext c, CUdeviceptr p) {
	LATHE_IN_CTX(l, c);
	return l->memFree(p);
}
static CUresult lathe_cu_mem_info(lathe_cuda *l, CUcontext c, size_t *free, size_t *total) {
	LATHE_IN_CTX(l, c);
	return l->memGetInfo(free, total);
}
static CUresult lathe_cu_htod(lathe_cuda *l, CUcontext c, CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
	LATHE_IN_CTX(l, c);
	return l->memcpyHtoDAsync(dst, src, bytes, s);
}
static CUresult lathe_cu_dtoh(lathe_cuda *l, CUcontext c, void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
	LATHE_IN_CTX(l, c);
	return l->memcpyDtoHAsync(dst, src, bytes, s);
}
static CUresult lathe_cu_memset8(lathe_cuda *l, CUcontext c, CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
	LATHE_IN_CTX(l, c);
	return l->memsetD8Async(dst, v, n, s);
}
// Page-locked host memory for staging copies; flags 0: this context only.
static CUresult lathe_cu_host_alloc(lathe_cuda *l, CUcontext c, void **p, size_t bytes) {
	LATHE_IN_CTX(l, c);
	return l->memHostAlloc(p, bytes, 0);
}
static CUresult lathe_cu_host_free(lathe_cuda *l, CUcontext c, void *p) {
	LATHE_IN_CTX(l, c);
	return l->memFreeHost(p);
}
static CUresult lathe_cu_event_create(lathe_cuda *l, CUcontext c, CUevent *e) {
	LATHE_IN_CTX(l, c);
	return l->eventCreate(e, LATHE_CU_EVENT_DISABLE_TIMING);
}
static CUresult lathe_cu_event_record(lathe_cuda *l, CUcontext c, CUevent e, CUstream s) {
	LATHE_IN_CTX(l, c);
	return l->eventRecord(e, s);
}
static CUresult lathe_cu_event_synchronize(lathe_cuda *l, CUcontext c, CUevent e) {
	LATHE_IN_CTX(l, c);
	return l->eventSynchronize(e);
}

// cuBLAS works in the context current on the calling thread. Its shims
// return LATHE_CTX_FAILED, with the driver's code in *cuErr, when that
// context cannot be made current.
#define LATHE_BLAS_IN_CTX(l, ctx, cuErr) do { *(cuErr) = (l)->ctxSetCurrent(ctx); if (*(cuErr) != 0) return LATHE_CTX_FAILED; } while (0)

static const char *lathe_cublas_status_name(lathe_cublas *b, cublasStatus_t s) { return b->getStatusName ? b->getStatusName(s) : NULL; }
static const char *lathe_cublas_status_string(lathe_cublas *b, cublasStatus_t s) { return b->getStatusString ? b->getStatusString(s) : NULL; }

static cublasStatus_t lathe_cublas_create(lathe_cublas *b, lathe_cuda *l, CUcontext c, CUresult *cuErr, cublasHandle_t *h, CUstream s, int *version) {
	cublasStatus_t st;
	LATHE_BLAS_IN_CTX(l, c, cuErr);
	if ((st = b->create(h)) != 0) return st;
	if ((st = b->setStream(*h, s)) != 0) return st;
	return b->getVersion(*h, version);
}
static cublasStatus_t lathe_cublas_destroy(lathe_cublas *b, lathe_cuda *l, CUcontext c, CUresult *cuErr, cublasHandle_t h) {
	LATHE_BLAS_IN_CTX(l, c, cuErr);
	return b->destroy ? b->destroy(h) : 0;
}
// C = alpha·op(A)·op(B) + beta·C over a strided batch, column-major, with
// the math mode set first (0: CUBLAS_DEFAULT_MATH, which keeps float32
// products in float32; 3: CUBLAS_TF32_TENSOR_OP_MATH). Scalars are host
// values (the handle's default pointer mode).
static cublasStatus_t lathe_cublas_sgemm(lathe_cublas *b, lathe_cuda *l, CUcontext c, CUresult *cuErr,
		cublasHandle_t h, int mathMode, int ta, int tb, int m, int n, int k,
		float alpha, CUdeviceptr A, int lda, long long sA, CUdeviceptr B, int ldb, long long sB,
		float beta, CUdeviceptr C, int ldc, long long sC, int batch) {
	cublasStatus_t st;
	LATHE_BLAS_IN_CTX(l, c, cuErr);
	if ((st = b->setMathMode(h, mathMode)) != 0) return st;
	return b->sgemmStridedBatched(h, ta, tb, m, n, k, &alpha, (const float *)(uintptr_t)A, lda, sA,
		(const float *)(uintptr_t)B, ldb, sB, &beta, (float *)(uintptr_t)C, ldc, sC, batch);
}
static cublasStatus_t lathe_cublas_dgemm(lathe_cublas *b, lathe_cuda *l, CUcontext c, CUresult *cuErr,
		cublasHandle_t h, int ta, int tb, int m, int n, int k,
		double alpha, CUdeviceptr A, int lda, long long sA, CUdeviceptr B, int ldb, long long sB,
		double beta, CUdeviceptr C, int ldc, long long sC, int batch) {
	cublasStatus_t st;
	LATHE_BLAS_IN_CTX(l, c, cuErr);
	if ((st = b->setMathMode(h, 0)) != 0) return st;
	return b->dgemmStridedBatched(h, ta, tb, m, n, k, &alpha, (const double *)(uintptr_t)A, lda, sA,
		(const double *)(uintptr_t)B, ldb, sB, &beta, (double *)(uintptr_t)C, ldc, sC, batch);
}

// C = op(A)·op(B) (alpha 1, beta 0, float scalars) over a strided batch,
// column-major, with A and B of cudaDataType_t type and C of typeC
// (CUDA_R_16F 2, CUDA_R_16BF 14, CUDA_R_32F 0), computed as computeType says
// (CUBLAS_COMPUTE_32F 68: products and sums in float32) by the algorithm
// cuBLAS picks (CUBLAS_GEMM_DEFAULT, -1), with the math mode set first.
static cublasStatus_t lathe_cublas_gemm_ex(lathe_cublas *b, lathe_cuda *l, CUcontext c, CUresult *cuErr,
		cublasHandle_t h, int mathMode, int ta, int tb, int m, int n, int k,
		CUdeviceptr A, int lda, long long sA, CUdeviceptr B, int ldb, long long sB,
		CUdeviceptr C, int ldc, long long sC, int batch, int type, int typeC, int computeType) {
	cublasStatus_t st;
	float alpha = 1, beta = 0;
	LATHE_BLAS_IN_CTX(l, c, cuErr);
	if ((st = b->setMathMode(h, mathMode)) != 0) return st;
	return b->gemmStridedBatchedEx(h, ta, tb, m, n, k, &alpha, (const void *)(uintptr_t)A, type, lda, sA,
		(const void *)(uintptr_t)B, type, ldb, sB, &beta, (void *)(uintptr_t)C, typeC, ldc, sC, batch,
		computeType, -1);
}

// dlopen and dlerror in one call: dlerror's text is per thread, and two
// cgo calls may run on two threads.
static void *lathe_dlopen(const char *path, const char **err) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	*err = h == NULL ? dlerror() : NULL;
	return h;
}
