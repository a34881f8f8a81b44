//go:build cgo

package wgpu

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cdecl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// The binding: Dawn opened with dlopen by shim.c, whose functions cdecl.h
// declares, and one thin Go wrapper per function. This is the package's
// only file that imports "C"; no C type leaves it except as the handles
// below, which the rest of the package stores and passes back unread.
//
// The cgo rules, kept here: what the shim or Dawn's callbacks write past a
// call (the device's error reports) is C memory, as are the strings and
// message buffers of a call, freed before the wrapper returns; Go memory
// passed to C (a write's words, a read-back's destination) is read or
// written only during the call.

type (
	gpuBuffer   = C.WGPUBuffer          // a Dawn buffer
	gpuPipeline = C.WGPUComputePipeline // a compiled compute pipeline
	gpuLayout   = C.WGPUBindGroupLayout // a pipeline's bind group layout
)

// bufferUsage is a set of WebGPU buffer usage flags.
type bufferUsage uint64

const (
	usageMapRead bufferUsage = C.LW_USAGE_MAP_READ
	usageCopySrc bufferUsage = C.LW_USAGE_COPY_SRC
	usageCopyDst bufferUsage = C.LW_USAGE_COPY_DST
	usageStorage bufferUsage = C.LW_USAGE_STORAGE
)

// msgLen is the size of the buffers the shim writes its messages into.
const msgLen = 2048

// cMessage is a zeroed message buffer in C memory, for the caller to free.
func cMessage() *C.char { return (*C.char)(C.calloc(msgLen, 1)) }

// openDawn loads the Dawn library at path and looks up every function the
// shim uses (lw_open); the error is the loader's words or the missing
// symbol. Once a library is loaded, later calls do nothing.
func openDawn(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.lw_open(cpath); msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}

// preload loads a library by path, its symbols global, so that a library
// loaded later that needs its soname finds this copy (lw_preload).
func preload(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.lw_preload(cpath); msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}

// dawn is the process's Dawn instance, adapter, device and queue, with the
// errors Dawn's callbacks report (struct lw_device). It is C memory, since
// the callbacks write into it, and is never freed.
type dawn C.lw_device

func (c *dawn) ptr() *C.lw_device { return (*C.lw_device)(c) }

// newDawn makes the instance, adapter and device (lw_init); the error is
// Dawn's message, or the shim's where Dawn gave none.
func newDawn() (*dawn, error) {
	// Not freed on failure: the callbacks of a half-made device may still
	// hold it.
	c := (*C.lw_device)(C.calloc(1, C.sizeof_lw_device))
	msg := cMessage()
	defer C.free(unsafe.Pointer(msg))
	if C.lw_init(c, msg, msgLen) != 0 {
		return nil, errors.New(C.GoString(msg))
	}
	return (*dawn)(c), nil
}

// software reports whether the adapter runs on the CPU (lavapipe).
func (c *dawn) software() bool { return c.adapterType == C.WGPUAdapterType_CPU }

// deviceLimits are the device's limits that lathe reads (of WGPULimits).
type deviceLimits struct {
	maxStorageBufferBindingSize      uint64
	minStorageBufferOffsetAlignment  uint64
	maxComputeWorkgroupsPerDimension uint32
}

func (c *dawn) deviceLimits() deviceLimits {
	return deviceLimits{
		maxStorageBufferBindingSize:      uint64(c.limits.maxStorageBufferBindingSize),
		minStorageBufferOffsetAlignment:  uint64(c.limits.minStorageBufferOffsetAlignment),
		maxComputeWorkgroupsPerDimension: uint32(c.limits.maxComputeWorkgroupsPerDimension),
	}
}

// adapterInfo names the adapter, its backend and its type, for Describe.
func (c *dawn) adapterInfo() (description, backend, adapterType string) {
	switch c.backend {
	case C.WGPUBackendType_Vulkan:
		backend = "Vulkan"
	case C.WGPUBackendType_OpenGL:
		backend = "OpenGL"
	case C.WGPUBackendType_OpenGLES:
		backend = "OpenGL ES"
	default:
		backend = fmt.Sprintf("type %d", c.backend)
	}
	switch c.adapterType {
	case C.WGPUAdapterType_DiscreteGPU:
		adapterType = "discrete GPU"
	case C.WGPUAdapterType_IntegratedGPU:
		adapterType = "integrated GPU"
	case C.WGPUAdapterType_CPU:
		adapterType = "CPU"
	default:
		adapterType = "unknown adapter type"
	}
	return C.GoString(&c.description[0]), backend, adapterType
}

// report is what Dawn's callbacks left since the last takeReport.
type report int

const (
	reportNone        report = iota
	reportLost               // the device was lost, for good
	reportOutOfMemory        // an uncaptured out-of-memory error
	reportError              // any other uncaptured error
)

// errorPending reports whether Dawn has reported an error or a loss that
// no takeReport has taken yet.
func (c *dawn) errorPending() bool { return c.error_type != 0 || c.lost != 0 }

// takeReport returns what Dawn reported through its callbacks, with Dawn's
// message, and clears an error (a loss stays).
func (c *dawn) takeReport() (report, string) {
	if c.lost != 0 {
		return reportLost, C.GoString(&c.lost_message[0])
	}
	t := c.error_type
	if t == 0 {
		return reportNone, ""
	}
	c.error_type = 0
	if t == C.WGPUErrorType_OutOfMemory {
		return reportOutOfMemory, C.GoString(&c.error_message[0])
	}
	return reportError, C.GoString(&c.error_message[0])
}

// newBuffer makes a buffer of size bytes, or returns nil (lw_buffer).
func (c *dawn) newBuffer(size uint64, usage bufferUsage) gpuBuffer {
	return C.lw_buffer(c.ptr(), C.uint64_t(size), C.WGPUFlags(usage))
}

// freeBuffer destroys and releases b (lw_buffer_free).
func freeBuffer(b gpuBuffer) { C.lw_buffer_free(b) }

// write submits what is recorded, then writes words to b at byte offset
// through the queue (lw_write). Dawn copies the words before it returns.
func (c *dawn) write(b gpuBuffer, offset uint64, words []uint32) {
	C.lw_write(c.ptr(), b, C.uint64_t(offset), unsafe.Pointer(unsafe.SliceData(words)), C.size_t(len(words)*4))
}

// initParams makes the parameter arena's host words (C memory, never
// freed, as the device is not) and hands them and buf to the shim, which
// writes the used part into buf before each submission (lw_flush).
func (c *dawn) initParams(buf gpuBuffer, size uint64) {
	c.params_buf = buf
	c.params_host = (*C.uint32_t)(C.calloc(C.size_t(size), 1))
	c.params_next = 0
}

// paramsNext is the first byte of the arena that no recorded op uses; the
// shim sets it back to 0 when it submits.
func (c *dawn) paramsNext() uint64 { return uint64(c.params_next) }

// putParams copies words into the arena's host words at byte offset off
// (4-aligned, within the arena) and marks the arena used up to next.
func (c *dawn) putParams(off, next uint64, words []uint32) {
	host := unsafe.Slice((*uint32)(unsafe.Pointer(c.params_host)), (off/4)+uint64(len(words)))
	copy(host[off/4:], words)
	c.params_next = C.uint64_t(next)
}

// read copies len(dst) words from byte offset of src into dst through the
// read-back buffer staging, after every op recorded (lw_read). dst is Go
// memory that C writes only during the call.
func (c *dawn) read(src gpuBuffer, offset uint64, dst []uint32, staging gpuBuffer) error {
	msg := cMessage()
	defer C.free(unsafe.Pointer(msg))
	if C.lw_read(c.ptr(), src, C.uint64_t(offset), unsafe.Pointer(unsafe.SliceData(dst)), C.size_t(len(dst)*4), staging, msg, msgLen) != 0 {
		return errors.New(C.GoString(msg))
	}
	return nil
}

// pipeline compiles WGSL whose entry point is main (lw_pipeline); the
// error is Dawn's message.
func (c *dawn) pipeline(code, label string) (gpuPipeline, error) {
	ccode := C.CString(code)
	defer C.free(unsafe.Pointer(ccode))
	clabel := C.CString(label)
	defer C.free(unsafe.Pointer(clabel))
	msg := cMessage()
	defer C.free(unsafe.Pointer(msg))
	p := C.lw_pipeline(c.ptr(), ccode, C.size_t(len(code)), clabel, msg, msgLen)
	if p == nil {
		return nil, errors.New(C.GoString(msg))
	}
	return p, nil
}

// maxBindings is the most buffers one dispatch binds (lw_dispatch's).
const maxBindings = 16

// binding is a buffer bound to a shader: size bytes from offset.
type binding struct {
	buf          gpuBuffer
	offset, size uint64
}

// layoutOf returns the layout of p's bind group 0 (lw_layout), which lives
// as long as p.
func layoutOf(p gpuPipeline) gpuLayout { return C.lw_layout(p) }

// dispatch records one dispatch of p over groups workgroups, with binds[i]
// at binding i of group 0, a group of layout, p's (lw_dispatch). The
// error is Dawn's message where it refuses the bind group; then nothing
// is recorded.
func (c *dawn) dispatch(p gpuPipeline, layout gpuLayout, binds []binding, groups [3]uint32) error {
	for i, b := range binds {
		c.bind_buffers[i], c.bind_offsets[i], c.bind_sizes[i] = b.buf, C.uint64_t(b.offset), C.uint64_t(b.size)
	}
	if C.lw_dispatch(c.ptr(), p, layout, C.int(len(binds)), C.uint32_t(groups[0]), C.uint32_t(groups[1]), C.uint32_t(groups[2])) != 0 {
		return errors.New(C.GoString(&c.dispatch_message[0]))
	}
	return nil
}

// flush submits the open command encoder, if any (lw_flush).
func (c *dawn) flush() { C.lw_flush(c.ptr()) }

// wait submits what is recorded and waits for all submitted work
// (lw_wait); the error says why the wait failed.
func (c *dawn) wait() error {
	msg := cMessage()
	defer C.free(unsafe.Pointer(msg))
	if C.lw_wait(c.ptr(), msg, msgLen) != 0 {
		return errors.New(C.GoString(msg))
	}
	return nil
}
