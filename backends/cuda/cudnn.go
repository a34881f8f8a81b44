//go:build cgo

package cuda

/*
#include "cdecl.h"
#include "cdecl_cudnn.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
)

// The cuDNN binding: libcudnn opened with dlopen once per process, a handle
// per device made at its first convolution (making one loads cuDNN's
// kernels, which a program that never convolves should not pay for), and
// convolution's three directions through the descriptor API
// (cdecl_cudnn.h). Which algorithm runs a case is cuDNN's heuristic choice
// among its deterministic ones, kept per case.

type dnnHandle = C.cudnnHandle_t

// cudnnLib is the opened libcudnn.
type cudnnLib struct {
	path string
	fns  *C.lathe_cudnn // C memory, filled once and never freed
	// version is cudnnGetVersion's: major·10000 + minor·100 + patch from
	// cuDNN 9 on, major·1000 + minor·100 + patch before.
	version int
}

// cudnnNames are where cuDNN is looked for after LATHE_CUDNN_LIB: the
// sonames of cuDNN 9 and 8 on the loader's path, then the toolkit's folder.
var cudnnNames = []string{"libcudnn.so.9", "libcudnn.so.8",
	"/usr/local/cuda/lib64/libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.8"}

func openCudnn() (*cudnnLib, error) {
	f := (*C.lathe_cudnn)(C.calloc(1, C.sizeof_lathe_cudnn))
	syms := []symbol{
		{"cudnnGetVersion", unsafe.Pointer(&f.getVersion), false},
		{"cudnnGetErrorString", unsafe.Pointer(&f.getErrorString), false},
		{"cudnnCreate", unsafe.Pointer(&f.create), false},
		{"cudnnDestroy", unsafe.Pointer(&f.destroy), false},
		{"cudnnSetStream", unsafe.Pointer(&f.setStream), false},
		{"cudnnCreateTensorDescriptor", unsafe.Pointer(&f.createTensor), false},
		{"cudnnSetTensorNdDescriptor", unsafe.Pointer(&f.setTensorNd), false},
		{"cudnnDestroyTensorDescriptor", unsafe.Pointer(&f.destroyTensor), false},
		{"cudnnCreateFilterDescriptor", unsafe.Pointer(&f.createFilter), false},
		{"cudnnSetFilterNdDescriptor", unsafe.Pointer(&f.setFilterNd), false},
		{"cudnnDestroyFilterDescriptor", unsafe.Pointer(&f.destroyFilter), false},
		{"cudnnCreateConvolutionDescriptor", unsafe.Pointer(&f.createConv), false},
		{"cudnnSetConvolutionNdDescriptor", unsafe.Pointer(&f.setConvNd), false},
		{"cudnnSetConvolutionGroupCount", unsafe.Pointer(&f.setConvGroups), false},
		{"cudnnSetConvolutionMathType", unsafe.Pointer(&f.setConvMath), false},
		{"cudnnDestroyConvolutionDescriptor", unsafe.Pointer(&f.destroyConv), false},
		{"cudnnGetConvolutionForwardAlgorithm_v7", unsafe.Pointer(&f.algos[C.LATHE_DNN_FORWARD]), false},
		{"cudnnGetConvolutionBackwardDataAlgorithm_v7", unsafe.Pointer(&f.algos[C.LATHE_DNN_DATA]), false},
		{"cudnnGetConvolutionBackwardFilterAlgorithm_v7", unsafe.Pointer(&f.algos[C.LATHE_DNN_FILTER]), false},
		{"cudnnGetConvolutionForwardWorkspaceSize", unsafe.Pointer(&f.workspace[C.LATHE_DNN_FORWARD]), false},
		{"cudnnGetConvolutionBackwardDataWorkspaceSize", unsafe.Pointer(&f.workspace[C.LATHE_DNN_DATA]), false},
		{"cudnnGetConvolutionBackwardFilterWorkspaceSize", unsafe.Pointer(&f.workspace[C.LATHE_DNN_FILTER]), false},
		{"cudnnConvolutionForward", unsafe.Pointer(&f.run[C.LATHE_DNN_FORWARD]), false},
		{"cudnnConvolutionBackwardData", unsafe.Pointer(&f.run[C.LATHE_DNN_DATA]), false},
		{"cudnnConvolutionBackwardFilter", unsafe.Pointer(&f.run[C.LATHE_DNN_FILTER]), false},
	}
	path, err := openLibrary("cuDNN", "LATHE_CUDNN_LIB", cudnnNames, syms)
	if err != nil {
		C.free(unsafe.Pointer(f))
		return nil, err
	}
	return &cudnnLib{path: path, fns: f, version: int(C.lathe_cudnn_version(f))}, nil
}

// major is the version's major number.
func (n *cudnnLib) major() int {
	if n.version >= 10000 {
		return n.version / 10000
	}
	return n.version / 1000
}

func (n *cudnnLib) versionString() string {
	if n.version >= 10000 {
		return fmt.Sprintf("%d.%d.%d", n.version/10000, n.version/100%100, n.version%100)
	}
	return fmt.Sprintf("%d.%d.%d", n.version/1000, n.version/100%10, n.version%100)
}

func (n *cudnnLib) statusName(status int) string {
	return goString(C.lathe_cudnn_status_string(n.fns, C.cudnnStatus_t(status)))
}

// cudnnLibrary is cuDNN, opened once for every device.
var cudnnLibrary = sync.OnceValues(openCudnn)

// openDNN opens the library (not yet a handle: dnnHandleLocked).
func (d *device) openDNN() {
	lib, err := cudnnLibrary()
	if err != nil {
		d.dnnWhy = err.(*dispatch.Error).Detail
		return
	}
	d.dnn = lib
}

// dnnHandleLocked returns the device's cuDNN handle, made on first use; ok
// is false where the device has no cuDNN or making the handle failed (then
// dnn is nil and dnnWhy says why). d.mu is held.
func (d *device) dnnHandleLocked() (h dnnHandle, ok bool) {
	if d.dnn == nil {
		return h, false
	}
	if d.dnnMade {
		return d.dnnH, true
	}
	var ce C.CUresult
	st := C.lathe_cudnn_create(d.dnn.fns, d.drv.fns, d.ctx, &ce, &d.dnnH, d.stream)
	if st != 0 {
		e := d.dnnError(d.dnn, "creating a cuDNN handle", "cudnnCreate", int(st), cuResult(ce))
		d.dnnWhy = e.Detail + ": " + e.Err.Error()
		d.dnn = nil
		return h, false
	}
	d.dnnMade = true
	return d.dnnH, true
}

// destroy frees a handle.
func (n *cudnnLib) destroy(drv *driver, ctx cuContext, h dnnHandle) (status int, cuErr cuResult) {
	var ce C.CUresult
	st := C.lathe_cudnn_destroy(n.fns, drv.fns, ctx, &ce, h)
	return int(st), cuResult(ce)
}

func (d *device) dnnError(lib *cudnnLib, where, call string, status int, cuErr cuResult) *dispatch.Error {
	if status == ctxFailed {
		return d.streamError(where, "cuCtxSetCurrent", cuErr)
	}
	return cudnnError(d.id, where, call, status, lib.major(), lib.statusName(status))
}

// hasDNN is whether dev opens and its cuDNN library opened.
func hasDNN(dev dispatch.Device) bool {
	d, err := opened(dev)
	if err != nil {
		return false
	}
	d.mu.Lock() // a handle that fails to be made drops the library
	defer d.mu.Unlock()
	return d.dnn != nil
}

// convolveOn runs job on dev's cuDNN (device.convolve).
func convolveOn(dev dispatch.Device, job dnnJob) (bool, error) {
	d, err := opened(dev)
	if err != nil {
		return false, err
	}
	return d.convolve(job)
}

// dnnKey is a convolution case with the TF32 switch at its call: the key
// of a device's algorithm choices.
type dnnKey struct {
	dnnCase
	tf32 bool
}

// The directions are cdecl_cudnn.h's (a build error otherwise).
var (
	_ = [1]struct{}{}[dnnForward-C.LATHE_DNN_FORWARD]
	_ = [1]struct{}{}[dnnData-C.LATHE_DNN_DATA]
	_ = [1]struct{}{}[dnnFilter-C.LATHE_DNN_FILTER]
)

// dnnCall names each direction's cuDNN call, for lastOp and errors.
var dnnCall = [...]string{dnnForward: "cudnnConvolutionForward", dnnData: "cudnnConvolutionBackwardData", dnnFilter: "cudnnConvolutionBackwardFilter"}

// convolve runs job by cuDNN: used is false, and nothing ran, where the
// device has no cuDNN, or cuDNN offers no deterministic algorithm for the
// case (a dtype the architecture lacks, a size past its limits). The
// algorithms are cuDNN's heuristic order (cudnnGet*Algorithm_v7, which
// runs nothing) with the nondeterministic ones left out, as PyTorch's
// torch.backends.cudnn.deterministic: lathe gives the same bits on each
// run, here as in its own kernels. The first whose workspace the pool can
// give runs; a workspace the device cannot hold moves on to the next.
func (d *device) convolve(job dnnJob) (used bool, err error) {
	key := dnnKey{job.dnnCase, job.dtype == dispatch.Float32 && allowTF32.Load()}
	d.mu.Lock()
	h, ok := d.dnnHandleLocked()
	if !ok {
		d.mu.Unlock()
		return false, nil
	}
	lib := d.dnn // Close sets d.dnn to nil; a library's table is never freed
	var c C.lathe_cudnn_conv
	if !d.dnnDescribe(lib, key, &c) {
		d.mu.Unlock()
		return false, nil // a case cuDNN does not describe: the other path
	}
	defer C.lathe_cudnn_conv_free(lib.fns, &c)
	algos, err := d.dnnAlgorithms(lib, h, &c, key)
	d.mu.Unlock()
	if err != nil || len(algos) == 0 {
		return err != nil, err
	}
	var short error // the last workspace the pool could not give
	for _, algo := range algos {
		if short, err = d.dnnRun(lib, h, &c, job, algo); short == nil {
			return true, err
		}
	}
	return true, short
}

// dnnDescribe makes c's descriptors for key; false where cuDNN refuses
// them. d.mu is held.
func (d *device) dnnDescribe(lib *cudnnLib, key dnnKey, c *C.lathe_cudnn_conv) bool {
	math, compute, dtype := dnnTypes(key.dtype)
	if key.tf32 {
		math = 0 // CUDNN_DEFAULT_MATH: TF32 tensor cores on Ampere and later
	}
	dims := func(s [5]int) *C.int {
		return (*C.int)(unsafe.Pointer(&[5]C.int{C.int(s[0]), C.int(s[1]), C.int(s[2]), C.int(s[3]), C.int(s[4])}))
	}
	win := func(s [3]int) *C.int {
		return (*C.int)(unsafe.Pointer(&[3]C.int{C.int(s[0]), C.int(s[1]), C.int(s[2])}))
	}
	return C.lathe_cudnn_conv_describe(lib.fns, c, C.int(dtype), C.int(compute), C.int(math), C.int(key.rank),
		dims(key.x), dims(key.w), dims(key.y), win(key.pad), win(key.stride), win(key.dilation), C.int(key.groups)) == 0
}

// dnnAlgorithms are the deterministic algorithms that cuDNN's heuristic
// lists for key, in its order, asked once per case. d.mu is held.
func (d *device) dnnAlgorithms(lib *cudnnLib, h dnnHandle, c *C.lathe_cudnn_conv, key dnnKey) ([]int, error) {
	if algos, ok := d.dnnAlgos[key]; ok {
		return algos, nil
	}
	const requested = 16 // more than any direction has (8 forward, 6 data, 7 filter)
	var perf [requested]C.lathe_cudnn_perf
	var returned C.int
	var ce C.CUresult
	st := C.lathe_cudnn_conv_algos(lib.fns, d.drv.fns, d.ctx, &ce, h, c, C.int(key.dir), requested, &returned, &perf[0])
	if st != 0 {
		return nil, d.dnnError(lib, "choosing a convolution algorithm", dnnAlgosCall[key.dir], int(st), cuResult(ce))
	}
	var algos []int
	for _, p := range perf[:min(int(returned), requested)] {
		if p.status == 0 && p.determinism == 1 {
			algos = append(algos, int(p.algo))
		}
	}
	if d.dnnAlgos == nil {
		d.dnnAlgos = map[dnnKey][]int{}
	}
	d.dnnAlgos[key] = algos
	return algos, nil
}

// dnnRun runs job with algorithm algo and a workspace from the pool; short
// is the pool's out-of-memory error where it cannot give the workspace,
// and then nothing ran.
func (d *device) dnnRun(lib *cudnnLib, h dnnHandle, c *C.lathe_cudnn_conv, job dnnJob, algo int) (short, err error) {
	closed := &dispatch.Error{Kind: dispatch.ErrDevice, Detail: d.id.String() + " was closed during a convolution"}
	d.mu.Lock()
	if !d.dnnMade { // Close ran meanwhile, which the caller must not let happen
		d.mu.Unlock()
		return nil, closed
	}
	var bytes C.size_t
	var ce C.CUresult
	st := C.lathe_cudnn_conv_workspace(lib.fns, d.drv.fns, d.ctx, &ce, h, c, C.int(job.dir), C.int(algo), &bytes)
	d.mu.Unlock()
	if st != 0 {
		return nil, d.dnnError(lib, "sizing a convolution's workspace", dnnWorkspaceCall[job.dir], int(st), cuResult(ce))
	}
	ws, free, err := borrow(d.id, int(bytes))
	if errors.Is(err, dispatch.ErrOutOfMemory) {
		return err, nil
	}
	if err != nil {
		return nil, err
	}
	defer free() // stream-ordered: the pool hands it out again to work queued after the convolution
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.dnnMade {
		return nil, closed
	}
	st = C.lathe_cudnn_conv_run(lib.fns, d.drv.fns, d.ctx, &ce, h, c, C.int(job.dir), C.int(algo),
		C.CUdeviceptr(job.a), C.CUdeviceptr(job.b), C.CUdeviceptr(job.out), C.CUdeviceptr(ws), bytes, boolInt(job.dtype == dispatch.Float64))
	if st != 0 {
		return nil, d.dnnError(lib, "a convolution", dnnCall[job.dir], int(st), cuResult(ce))
	}
	call := dnnCall[job.dir]
	d.lastOp.Store(&call)
	d.launches.Add(1)
	return nil, nil
}

var (
	dnnAlgosCall     = [...]string{"cudnnGetConvolutionForwardAlgorithm_v7", "cudnnGetConvolutionBackwardDataAlgorithm_v7", "cudnnGetConvolutionBackwardFilterAlgorithm_v7"}
	dnnWorkspaceCall = [...]string{"cudnnGetConvolutionForwardWorkspaceSize", "cudnnGetConvolutionBackwardDataWorkspaceSize", "cudnnGetConvolutionBackwardFilterWorkspaceSize"}
)

// dnnTypes are the cuDNN types of a convolution of dt: cudnnMathType_t,
// the compute and the data cudnnDataType_t. float16 and bfloat16 compute
// in float32 and round once (as lathe's other paths, and PyTorch's), on
// tensor cores; float32 on FMA units unless TF32 is allowed (convolve).
func dnnTypes(dt dispatch.DType) (math, compute, data int) {
	const (
		defaultMath, tensorOpMath, fmaMath    = 0, 1, 3
		dnnFloat, dnnDouble, dnnHalf, dnnBF16 = 0, 1, 2, 9
	)
	switch dt {
	case dispatch.Float64:
		return defaultMath, dnnDouble, dnnDouble
	case dispatch.Float16:
		return tensorOpMath, dnnFloat, dnnHalf
	case dispatch.BFloat16:
		return tensorOpMath, dnnFloat, dnnBF16
	}
	return fmaMath, dnnFloat, dnnFloat
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
