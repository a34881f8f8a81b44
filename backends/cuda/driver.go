//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#include "cdecl.h"
*/
import "C"

import (
	"os"
	"strings"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
)

// The binding: libcuda and libcublas opened with dlopen, their entry points
// looked up by their versioned names (cuMemAlloc_v2, ..., as cuda.h's
// macros spell the current ABI), and one thin Go wrapper per call. No C type
// leaves this file except as the handle aliases below.

type (
	cuDevice   = C.CUdevice
	cuContext  = C.CUcontext
	cuStream   = C.CUstream
	cuModule   = C.CUmodule
	cuFunction = C.CUfunction
	cuEvent    = C.CUevent
	blasHandle = C.cublasHandle_t
)

// Device attributes (CUdevice_attribute).
const (
	attrMultiprocessorCount = 16
	attrComputeMajor        = 75
	attrComputeMinor        = 76
)

// symbol is an entry point to look up and the table slot it fills.
type symbol struct {
	name     string
	dst      unsafe.Pointer // a *C function pointer, as unsafe.Pointer
	optional bool
}

// openLibrary opens the first that dlopen loads of the library that the
// environment variable env names and then names, and fills syms from it.
// What went wrong names the library, every path tried with the loader's
// words, or the symbol missing. env set to "off" turns the library off, as
// if none opened (torch.backends.cudnn.enabled = False): lathe's own
// kernels do its work.
func openLibrary(what, env string, names []string, syms []symbol) (path string, err error) {
	candidates := names
	switch p := os.Getenv(env); p {
	case "":
	case "off":
		return "", &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: what + " is turned off (" + env + "=off)"}
	default:
		candidates = append([]string{p}, names...)
	}
	var tried []string
	var h unsafe.Pointer
	for _, c := range candidates {
		cs := C.CString(c)
		var cerr *C.char
		h = C.lathe_dlopen(cs, &cerr)
		C.free(unsafe.Pointer(cs))
		if h != nil {
			path = c
			break
		}
		tried = append(tried, C.GoString(cerr))
	}
	if h == nil {
		return "", &dispatch.Error{Kind: dispatch.ErrUnavailable,
			Detail: "cannot open " + what + " (tried " + strings.Join(candidates, ", ") + "): " + strings.Join(tried, "; ")}
	}
	for _, s := range syms {
		cs := C.CString(s.name)
		p := C.dlsym(h, cs)
		C.free(unsafe.Pointer(cs))
		if p == nil && !s.optional {
			C.dlclose(h)
			return "", &dispatch.Error{Kind: dispatch.ErrUnavailable,
				Detail: what + " " + path + " has no symbol " + s.name + " (it is older than lathe needs)"}
		}
		*(*unsafe.Pointer)(s.dst) = p
	}
	return path, nil
}

// driver is the opened libcuda.
type driver struct {
	path string
	fns  *C.lathe_cuda // C memory, filled once and never freed
}

// openDriver loads libcuda.so.1, the soname that the NVIDIA driver
// installs (libcuda.so is the development link, present with a toolkit),
// or the library that LATHE_CUDA_LIB names.
func openDriver() (*driver, error) {
	f := (*C.lathe_cuda)(C.calloc(1, C.sizeof_lathe_cuda))
	syms := []symbol{
		{"cuGetErrorName", unsafe.Pointer(&f.getErrorName), false},
		{"cuGetErrorString", unsafe.Pointer(&f.getErrorString), false},
		{"cuInit", unsafe.Pointer(&f.init), false},
		{"cuDriverGetVersion", unsafe.Pointer(&f.driverGetVersion), false},
		{"cuDeviceGetCount", unsafe.Pointer(&f.deviceGetCount), false},
		{"cuDeviceGet", unsafe.Pointer(&f.deviceGet), false},
		{"cuDeviceGetName", unsafe.Pointer(&f.deviceGetName), false},
		{"cuDeviceGetAttribute", unsafe.Pointer(&f.deviceGetAttribute), false},
		{"cuDeviceTotalMem_v2", unsafe.Pointer(&f.deviceTotalMem), false},
		{"cuDevicePrimaryCtxRetain", unsafe.Pointer(&f.primaryCtxRetain), false},
		{"cuDevicePrimaryCtxRelease_v2", unsafe.Pointer(&f.primaryCtxRelease), false},
		{"cuCtxSetCurrent", unsafe.Pointer(&f.ctxSetCurrent), false},
		{"cuStreamCreate", unsafe.Pointer(&f.streamCreate), false},
		{"cuStreamSynchronize", unsafe.Pointer(&f.streamSynchronize), false},
		{"cuModuleLoadDataEx", unsafe.Pointer(&f.moduleLoadDataEx), false},
		{"cuModuleGetFunction", unsafe.Pointer(&f.moduleGetFunction), false},
		{"cuLaunchKernel", unsafe.Pointer(&f.launchKernel), false},
		{"cuMemAlloc_v2", unsafe.Pointer(&f.memAlloc), false},
		{"cuMemFree_v2", unsafe.Pointer(&f.memFree), false},
		{"cuMemGetInfo_v2", unsafe.Pointer(&f.memGetInfo), false},
		{"cuMemcpyHtoDAsync_v2", unsafe.Pointer(&f.memcpyHtoDAsync), false},
		{"cuMemcpyDtoHAsync_v2", unsafe.Pointer(&f.memcpyDtoHAsync), false},
		{"cuMemsetD8Async", unsafe.Pointer(&f.memsetD8Async), false},
		{"cuMemHostAlloc", unsafe.Pointer(&f.memHostAlloc), false},
		{"cuMemFreeHost", unsafe.Pointer(&f.memFreeHost), false},
		{"cuEventCreate", unsafe.Pointer(&f.eventCreate), false},
		{"cuEventRecord", unsafe.Pointer(&f.eventRecord), false},
		{"cuEventSynchronize", unsafe.Pointer(&f.eventSynchronize), false},
		{"cuFuncGetParamInfo", unsafe.Pointer(&f.funcGetParamInfo), true},
	}
	path, err := openLibrary("the CUDA driver library", "LATHE_CUDA_LIB", []string{"libcuda.so.1", "libcuda.so"}, syms)
	if err != nil {
		C.free(unsafe.Pointer(f))
		return nil, err
	}
	return &driver{path: path, fns: f}, nil
}

// errorText is the driver's name and description of a code ("" for a code
// it does not know).
func (d *driver) errorText(r cuResult) (name, text string) {
	return goString(C.lathe_cu_error_name(d.fns, C.CUresult(r))), goString(C.lathe_cu_error_string(d.fns, C.CUresult(r)))
}

func goString(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

func (d *driver) init() cuResult { return cuResult(C.lathe_cu_init(d.fns)) }

func (d *driver) driverVersion() (int, cuResult) {
	var v C.int
	r := C.lathe_cu_driver_version(d.fns, &v)
	return int(v), cuResult(r)
}

func (d *driver) deviceCount() (int, cuResult) {
	var n C.int
	r := C.lathe_cu_device_count(d.fns, &n)
	return int(n), cuResult(r)
}

func (d *driver) deviceGet(ordinal int) (cuDevice, cuResult) {
	var dev C.CUdevice
	r := C.lathe_cu_device_get(d.fns, &dev, C.int(ordinal))
	return dev, cuResult(r)
}

func (d *driver) deviceName(dev cuDevice) (string, cuResult) {
	var buf [256]C.char
	r := C.lathe_cu_device_name(d.fns, &buf[0], C.int(len(buf)), dev)
	return C.GoString(&buf[0]), cuResult(r)
}

func (d *driver) deviceAttribute(attr int, dev cuDevice) (int, cuResult) {
	var v C.int
	r := C.lathe_cu_device_attribute(d.fns, &v, C.int(attr), dev)
	return int(v), cuResult(r)
}

func (d *driver) deviceTotalMem(dev cuDevice) (int64, cuResult) {
	var n C.size_t
	r := C.lathe_cu_device_total_mem(d.fns, &n, dev)
	return int64(n), cuResult(r)
}

// primaryCtxRetain gets the device's primary context, the one the CUDA
// runtime (and so cuBLAS and PyTorch in the same process) uses too.
func (d *driver) primaryCtxRetain(dev cuDevice) (cuContext, cuResult) {
	var c C.CUcontext
	r := C.lathe_cu_primary_ctx_retain(d.fns, &c, dev)
	return c, cuResult(r)
}

// primaryCtxRelease gives back what primaryCtxRetain took; at the last
// release the driver destroys the context with all it holds (and a memory
// checker reports what was never freed).
func (d *driver) primaryCtxRelease(dev cuDevice) cuResult {
	return cuResult(C.lathe_cu_primary_ctx_release(d.fns, dev))
}

func (d *driver) streamCreate(ctx cuContext) (cuStream, cuResult) {
	var s C.CUstream
	r := C.lathe_cu_stream_create(d.fns, ctx, &s)
	return s, cuResult(r)
}

func (d *driver) streamSynchronize(ctx cuContext, s cuStream) cuResult {
	return cuResult(C.lathe_cu_stream_synchronize(d.fns, ctx, s))
}

// moduleLoad JIT-compiles PTX text for the context's device; a failure
// comes with the JIT's error log.
func (d *driver) moduleLoad(ctx cuContext, ptx []byte) (cuModule, string, cuResult) {
	image := C.malloc(C.size_t(len(ptx) + 1)) // cuModuleLoadData reads PTX up to its NUL
	defer C.free(image)
	dst := unsafe.Slice((*byte)(image), len(ptx)+1)
	copy(dst, ptx)
	dst[len(ptx)] = 0
	const logSize = 16 << 10
	log := (*C.char)(C.calloc(logSize, 1))
	defer C.free(unsafe.Pointer(log))
	var m C.CUmodule
	r := C.lathe_cu_module_load(d.fns, ctx, &m, image, log, logSize)
	return m, strings.TrimSpace(C.GoString(log)), cuResult(r)
}

// setCurrent makes ctx current on the calling OS thread.
func (d *driver) setCurrent(ctx cuContext) cuResult {
	return cuResult(C.lathe_cu_ctx_set_current(d.fns, ctx))
}

func (d *driver) moduleFunction(ctx cuContext, m cuModule, name string) (cuFunction, cuResult) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var f C.CUfunction
	r := C.lathe_cu_module_function(d.fns, ctx, &f, m, cs)
	return f, cuResult(r)
}

// paramSizes is the size in bytes of each of a kernel's parameters, from
// cuFuncGetParamInfo (CUDA 12.4 on), which fails with
// CUDA_ERROR_INVALID_VALUE for an index past the last; ok is false where
// the driver predates it or cannot say.
func (d *driver) paramSizes(ctx cuContext, f cuFunction) (sizes []int, ok bool) {
	if C.lathe_cu_has_param_info(d.fns) == 0 {
		return nil, false
	}
	for i := range maxParams + 1 {
		var off, size C.size_t
		switch cuResult(C.lathe_cu_param_info(d.fns, ctx, f, C.size_t(i), &off, &size)) {
		case cudaSuccess:
			sizes = append(sizes, int(size))
		case cudaErrorInvalidValue:
			return sizes, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// cMemory is a growable block of C memory, for what C must read that Go
// builds (a launch's parameter image): C never sees a Go pointer.
type cMemory struct {
	p unsafe.Pointer
	n int
}

func (m *cMemory) bytes(n int) []byte {
	if n > m.n {
		C.free(m.p)
		m.n = max(n, 2*m.n, 256)
		m.p = C.malloc(C.size_t(m.n))
	}
	return unsafe.Slice((*byte)(m.p), m.n)[:n]
}

// launch enqueues f with the packed parameters (image, offsets); mem holds
// them in C memory for the call.
func (d *driver) launch(ctx cuContext, f cuFunction, grid, block [3]uint32, shared uint32, s cuStream,
	image []byte, offsets []uint32, mem *cMemory) cuResult {
	buf := mem.bytes(len(image) + 4*len(offsets) + 8)
	imgAt := (4*len(offsets) + 7) &^ 7 // the image, 8-aligned, after the offsets
	copy(buf[imgAt:], image)
	for i, o := range offsets {
		*(*uint32)(unsafe.Pointer(&buf[4*i])) = o
	}
	base := unsafe.Pointer(unsafe.SliceData(buf))
	return cuResult(C.lathe_cu_launch(d.fns, ctx, f,
		C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]),
		C.uint(shared), s, (*C.uchar)(unsafe.Add(base, imgAt)), (*C.uint)(base), C.int(len(offsets))))
}

func (d *driver) memAlloc(ctx cuContext, bytes int64) (uint64, cuResult) {
	var p C.CUdeviceptr
	r := C.lathe_cu_mem_alloc(d.fns, ctx, &p, C.size_t(bytes))
	return uint64(p), cuResult(r)
}

func (d *driver) memFree(ctx cuContext, p uint64) cuResult {
	return cuResult(C.lathe_cu_mem_free(d.fns, ctx, C.CUdeviceptr(p)))
}

func (d *driver) memInfo(ctx cuContext) (free, total int64, r cuResult) {
	var f, t C.size_t
	res := C.lathe_cu_mem_info(d.fns, ctx, &f, &t)
	return int64(f), int64(t), cuResult(res)
}

// htod and dtoh copy between pinned host memory (C memory from hostAlloc)
// and the device, queued on s.
func (d *driver) htod(ctx cuContext, dst uint64, src unsafe.Pointer, bytes int, s cuStream) cuResult {
	return cuResult(C.lathe_cu_htod(d.fns, ctx, C.CUdeviceptr(dst), src, C.size_t(bytes), s))
}

func (d *driver) dtoh(ctx cuContext, dst unsafe.Pointer, src uint64, bytes int, s cuStream) cuResult {
	return cuResult(C.lathe_cu_dtoh(d.fns, ctx, dst, C.CUdeviceptr(src), C.size_t(bytes), s))
}

func (d *driver) memset8(ctx cuContext, dst uint64, v byte, n int, s cuStream) cuResult {
	return cuResult(C.lathe_cu_memset8(d.fns, ctx, C.CUdeviceptr(dst), C.uchar(v), C.size_t(n), s))
}

func (d *driver) hostAlloc(ctx cuContext, bytes int) (unsafe.Pointer, cuResult) {
	var p unsafe.Pointer
	r := C.lathe_cu_host_alloc(d.fns, ctx, &p, C.size_t(bytes))
	return p, cuResult(r)
}

func (d *driver) hostFree(ctx cuContext, p unsafe.Pointer) cuResult {
	return cuResult(C.lathe_cu_host_free(d.fns, ctx, p))
}

func (d *driver) eventCreate(ctx cuContext) (cuEvent, cuResult) {
	var e C.CUevent
	r := C.lathe_cu_event_create(d.fns, ctx, &e)
	return e, cuResult(r)
}

func (d *driver) eventRecord(ctx cuContext, e cuEvent, s cuStream) cuResult {
	return cuResult(C.lathe_cu_event_record(d.fns, ctx, e, s))
}

func (d *driver) eventSynchronize(ctx cuContext, e cuEvent) cuResult {
	return cuResult(C.lathe_cu_event_synchronize(d.fns, ctx, e))
}

// cublas is the opened libcublas.
type cublas struct {
	path string
	fns  *C.lathe_cublas
	// ex is whether it has cublasGemmStridedBatchedEx, which multiplies
	// float16 and bfloat16 in place; a variable, not a test of fns, so
	// that the tests can take the path without it too.
	ex bool
}

// cublasNames are where cuBLAS is looked for after LATHE_CUBLAS_LIB: the
// sonames of CUDA 13, 12 and 11 on the loader's path, then the toolkit's
// default folder.
func cublasNames() []string {
	var names []string
	for _, v := range []string{"13", "12", "11"} {
		names = append(names, "libcublas.so."+v)
	}
	for _, v := range []string{"13", "12", "11"} {
		names = append(names, "/usr/local/cuda/lib64/libcublas.so."+v)
	}
	return append(names, "/usr/local/cuda/lib64/libcublas.so")
}

func openCublas() (*cublas, error) {
	f := (*C.lathe_cublas)(C.calloc(1, C.sizeof_lathe_cublas))
	syms := []symbol{
		{"cublasCreate_v2", unsafe.Pointer(&f.create), false},
		{"cublasSetStream_v2", unsafe.Pointer(&f.setStream), false},
		{"cublasSetMathMode", unsafe.Pointer(&f.setMathMode), false},
		{"cublasGetVersion_v2", unsafe.Pointer(&f.getVersion), false},
		{"cublasSgemmStridedBatched", unsafe.Pointer(&f.sgemmStridedBatched), false},
		{"cublasDgemmStridedBatched", unsafe.Pointer(&f.dgemmStridedBatched), false},
		{"cublasGemmStridedBatchedEx", unsafe.Pointer(&f.gemmStridedBatchedEx), true},
		{"cublasGetStatusName", unsafe.Pointer(&f.getStatusName), true},
		{"cublasGetStatusString", unsafe.Pointer(&f.getStatusString), true},
		{"cublasDestroy_v2", unsafe.Pointer(&f.destroy), true},
	}
	path, err := openLibrary("cuBLAS", "LATHE_CUBLAS_LIB", cublasNames(), syms)
	if err != nil {
		C.free(unsafe.Pointer(f))
		return nil, err
	}
	return &cublas{path: path, fns: f, ex: f.gemmStridedBatchedEx != nil}, nil
}

func (b *cublas) statusText(status int) (name, text string) {
	s := C.cublasStatus_t(status)
	return goString(C.lathe_cublas_status_name(b.fns, s)), goString(C.lathe_cublas_status_string(b.fns, s))
}

// create makes a cuBLAS handle in ctx that queues its work on s. status is
// cuBLAS's; cuErr is the driver's when ctx could not be made current.
func (b *cublas) create(d *driver, ctx cuContext, s cuStream) (h blasHandle, version, status int, cuErr cuResult) {
	var v C.int
	var ce C.CUresult
	st := C.lathe_cublas_create(b.fns, d.fns, ctx, &ce, &h, s, &v)
	return h, int(v), int(st), cuResult(ce)
}

// destroy frees the handle and its workspace.
func (b *cublas) destroy(d *driver, ctx cuContext, h blasHandle) (status int, cuErr cuResult) {
	var ce C.CUresult
	st := C.lathe_cublas_destroy(b.fns, d.fns, ctx, &ce, h)
	return int(st), cuResult(ce)
}

func blasOp(t bool) C.int {
	if t {
		return 1 // CUBLAS_OP_T
	}
	return 0 // CUBLAS_OP_N
}

// sgemm runs C = A·B (alpha 1, beta 0) in float32; tf32 allows tensor
// cores to round the inputs to TF32.
func (b *cublas) sgemm(d *driver, ctx cuContext, h blasHandle, tf32 bool, g gemmArgs) (status int, cuErr cuResult) {
	mode := C.int(0) // CUBLAS_DEFAULT_MATH
	if tf32 {
		mode = 3 // CUBLAS_TF32_TENSOR_OP_MATH
	}
	var ce C.CUresult
	st := C.lathe_cublas_sgemm(b.fns, d.fns, ctx, &ce, h, mode, blasOp(g.transA), blasOp(g.transB),
		C.int(g.m), C.int(g.n), C.int(g.k),
		1, C.CUdeviceptr(g.a), C.int(g.lda), C.longlong(g.strideA),
		C.CUdeviceptr(g.b), C.int(g.ldb), C.longlong(g.strideB),
		0, C.CUdeviceptr(g.c), C.int(g.ldc), C.longlong(g.strideC), C.int(g.batch))
	return int(st), cuResult(ce)
}

// dgemm runs C = A·B (alpha 1, beta 0) in float64.
func (b *cublas) dgemm(d *driver, ctx cuContext, h blasHandle, g gemmArgs) (status int, cuErr cuResult) {
	var ce C.CUresult
	st := C.lathe_cublas_dgemm(b.fns, d.fns, ctx, &ce, h, blasOp(g.transA), blasOp(g.transB),
		C.int(g.m), C.int(g.n), C.int(g.k),
		1, C.CUdeviceptr(g.a), C.int(g.lda), C.longlong(g.strideA),
		C.CUdeviceptr(g.b), C.int(g.ldb), C.longlong(g.strideB),
		0, C.CUdeviceptr(g.c), C.int(g.ldc), C.longlong(g.strideC), C.int(g.batch))
	return int(st), cuResult(ce)
}

// The cuBLAS enums that gemmEx passes, from the cuBLAS guide
// (cudaDataType_t, cublasComputeType_t, cublasMath_t).
const (
	cudaR32F  = 0  // CUDA_R_32F
	cudaR16F  = 2  // CUDA_R_16F
	cudaR16BF = 14 // CUDA_R_16BF
	// cublasCompute32F: products and sums in float32, the result rounded
	// once to C's type; what at::mm does for torch.half and torch.bfloat16,
	// and what the cpu's half matmul does.
	cublasCompute32F = 68
	// mathNoReducedReduction is CUBLAS_DEFAULT_MATH (0) with
	// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION (16): without it
	// cuBLAS may add the partial sums of a split-K product in C's 16-bit
	// type, rounding more than once. PyTorch allows that by default
	// (allow_fp16_reduced_precision_reduction); lathe's contract is one
	// rounding at the end (dispatch.ViaCompute), the same on every device.
	mathNoReducedReduction = 16
)

// gemmEx runs C = A·B (alpha 1, beta 0) with A and B of cuBLAS data type
// typ (cudaR16F or cudaR16BF) and C of typC (typ, or cudaR32F: the sums
// kept in float32), accumulating in float32.
func (b *cublas) gemmEx(d *driver, ctx cuContext, h blasHandle, typ, typC int, g gemmArgs) (status int, cuErr cuResult) {
	var ce C.CUresult
	st := C.lathe_cublas_gemm_ex(b.fns, d.fns, ctx, &ce, h, mathNoReducedReduction, blasOp(g.transA), blasOp(g.transB),
		C.int(g.m), C.int(g.n), C.int(g.k),
		C.CUdeviceptr(g.a), C.int(g.lda), C.longlong(g.strideA),
		C.CUdeviceptr(g.b), C.int(g.ldb), C.longlong(g.strideB),
		C.CUdeviceptr(g.c), C.int(g.ldc), C.longlong(g.strideC), C.int(g.batch),
		C.int(typ), C.int(typC), cublasCompute32F)
	return int(st), cuResult(ce)
}

// ctxFailed is the cuBLAS shims' status when the context could not be made
// current (cuErr then holds the driver's code).
const ctxFailed = int(C.LATHE_CTX_FAILED)
