//go:build cgo

package wgpu

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cdecl.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
)

// device is the process's one Dawn instance, adapter and device (Dawn
// leaks about half a megabyte per instance, so there is only ever one),
// with everything that lives as long as it: the buffer pools, the compiled
// pipelines, and the op names recorded since the last submission. Dawn's
// device is not safe for concurrent use, so every call goes under mu; the
// pools' calls take mu themselves, so nothing calls a pool while holding it.
type device struct {
	mu       sync.Mutex
	c        *C.lw_device // C memory: Dawn's callbacks write into it
	library  string
	driver   vulkanDriver
	limits   C.WGPULimits
	pool     *alloc.Pool[C.WGPUBuffer] // storage buffers of tensors
	cache    *alloc.Cap                // the cap on pool's cached bytes
	staging  *alloc.Pool[C.WGPUBuffer] // read-back buffers
	params   paramArena
	pipes    map[string]C.WGPUComputePipeline
	recorded []string // ops recorded since the last flush, for errors found at submission

	// The value checks queued since the last read-back (checks.go), and
	// the buffer their kernels write to. checkMu is taken before mu.
	checkMu    sync.Mutex
	checks     dispatch.CheckLog
	checkSlots *dispatch.Tensor
}

var (
	openOnce  sync.Once
	theDevice *device
	openErr   error
)

// open makes the device the first time and returns it, or why it cannot be.
func open() (*device, error) {
	openOnce.Do(func() { theDevice, openErr = newDevice() })
	return theDevice, openErr
}

func unavailable(detail string, cause error) error {
	return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: "wgpu:0 is unavailable: " + detail, Err: cause,
		Fix: "run make deps, which installs Dawn and lavapipe into " + cacheDir() + ", or set LATHE_WEBGPU_LIB"}
}

// cstr copies a C message buffer into a Go string.
func cstr(p *C.char) string { return C.GoString(p) }

const msgLen = 2048

func newDevice() (*device, error) {
	d := &device{pipes: map[string]C.WGPUComputePipeline{}}
	var tried []string
	for _, path := range libraryCandidates() {
		cpath := C.CString(path)
		msg := C.lw_open(cpath)
		C.free(unsafe.Pointer(cpath))
		if msg == nil {
			d.library = path
			break
		}
		tried = append(tried, cstr(msg))
	}
	if d.library == "" {
		return nil, unavailable("no Dawn library (tried: "+strings.Join(tried, "; ")+")", nil)
	}

	d.driver = findVulkanDriver(systemICDDirs, cacheDir())
	for k, v := range d.driver.env {
		// With cgo, os.Setenv reaches the C environment that the Vulkan
		// loader reads when Dawn first enumerates adapters.
		os.Setenv(k, v)
	}
	for _, lib := range d.driver.preload {
		clib := C.CString(lib)
		msg := C.lw_preload(clib)
		C.free(unsafe.Pointer(clib))
		if msg != nil {
			return nil, unavailable("lavapipe's libdrm could not be loaded: "+cstr(msg), nil)
		}
	}

	d.c = (*C.lw_device)(C.calloc(1, C.size_t(unsafe.Sizeof(C.lw_device{}))))
	msg := (*C.char)(C.calloc(msgLen, 1))
	defer C.free(unsafe.Pointer(msg))
	if rc := C.lw_init(d.c, msg, msgLen); rc != 0 {
		return nil, unavailable(fmt.Sprintf("Dawn (%s) opened no device: %s (%s)", d.library, cstr(msg), d.driver.note), nil)
	}
	d.limits = d.c.limits
	newPools(d)
	if err := d.params.init(d); err != nil {
		return nil, err
	}
	return d, nil
}

// describe says what serves wgpu:0.
func (d *device) describe() string {
	return fmt.Sprintf("Dawn %s; adapter %s, %s backend, %s; %s; max storage binding %d MiB",
		d.library, cstr(&d.c.description[0]), backendName(d.c.backend), adapterTypeName(d.c.adapterType),
		d.driver.note, d.limits.maxStorageBufferBindingSize>>20)
}

func backendName(b C.WGPUEnum) string {
	switch b {
	case C.WGPUBackendType_Vulkan:
		return "Vulkan"
	case C.WGPUBackendType_OpenGL:
		return "OpenGL"
	case C.WGPUBackendType_OpenGLES:
		return "OpenGL ES"
	}
	return fmt.Sprintf("type %d", b)
}

func adapterTypeName(t C.WGPUEnum) string {
	switch t {
	case C.WGPUAdapterType_DiscreteGPU:
		return "discrete GPU"
	case C.WGPUAdapterType_IntegratedGPU:
		return "integrated GPU"
	case C.WGPUAdapterType_CPU:
		return "CPU"
	}
	return "unknown adapter type"
}

// takeError returns, and clears, what Dawn reported through its callbacks
// since the last call: an uncaptured error or a lost device. op names the
// op, or the ops recorded in the batch, where Dawn found it.
func (d *device) takeError(op string) error {
	if d.c.lost != 0 {
		return &dispatch.Error{Op: op, Kind: dispatch.ErrUnavailable,
			Detail: "the wgpu device was lost: " + cstr(&d.c.lost_message[0])}
	}
	t := d.c.error_type
	if t == 0 {
		return nil
	}
	d.c.error_type = 0
	kind := dispatch.ErrUnsupported
	what := "Dawn refused the work"
	if t == C.WGPUErrorType_OutOfMemory {
		kind, what = dispatch.ErrOutOfMemory, "the wgpu device is out of memory"
	}
	return &dispatch.Error{Op: op, Kind: kind, Detail: what + ": " + cstr(&d.c.error_message[0])}
}

// flush submits what is recorded, then reports any error Dawn found in it,
// naming the ops it held.
func (d *device) flush() error {
	C.lw_flush(d.c)
	d.params.reset()
	ops := d.recorded
	d.recorded = d.recorded[:0]
	if err := d.takeError(batchName(ops)); err != nil {
		return err
	}
	return nil
}

// batchName names the ops of a submission for an error message.
func batchName(ops []string) string {
	seen := map[string]bool{}
	var names []string
	for _, op := range ops {
		if !seen[op] && len(names) < 6 {
			seen[op] = true
			names = append(names, op)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return "one of " + strings.Join(names, ", ")
}

// sync waits for every op recorded so far.
func (d *device) sync() error {
	if err := d.flush(); err != nil {
		return err
	}
	msg := (*C.char)(C.calloc(msgLen, 1))
	defer C.free(unsafe.Pointer(msg))
	if C.lw_wait(d.c, msg, msgLen) != 0 {
		return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: "waiting for wgpu:0: " + cstr(msg)}
	}
	return d.takeError("sync")
}
