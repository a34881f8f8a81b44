//go:build cgo

package wgpu

/*
#include <stdlib.h>
#include "cdecl.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
)

// paramArena holds the small parameter blocks of the ops recorded since
// the last submission, each in a slot of its own: a queue write lands
// before the submission that follows it, so two ops of one submission
// cannot share a slot. After a submission the slots are free again, since
// the queue runs later writes after the work already submitted.
type paramArena struct {
	buf   C.WGPUBuffer
	size  uint64
	align uint64
	next  uint64
}

const arenaBytes = 1 << 20

func (a *paramArena) init(d *device) error {
	a.size = arenaBytes
	a.align = max(uint64(d.limits.minStorageBufferOffsetAlignment), 4)
	a.buf = C.lw_buffer(d.c, arenaBytes, C.LW_USAGE_STORAGE|C.LW_USAGE_COPY_DST)
	if a.buf == nil {
		return unavailable("the parameter buffer could not be made", d.takeError("init"))
	}
	return nil
}

func (a *paramArena) reset() { a.next = 0 }

// slot reserves room for n bytes, submitting first when the arena is full.
func (a *paramArena) slot(d *device, n uint64) (uint64, error) {
	if a.next+n > a.size {
		if err := d.flush(); err != nil {
			return 0, err
		}
	}
	off := a.next
	a.next = (a.next + n + a.align - 1) / a.align * a.align
	return off, nil
}

// pipeline returns the compiled pipeline of a shader, compiling it the
// first time its key is seen.
func (d *device) pipeline(op string, sh *shader) (C.WGPUComputePipeline, error) {
	if p, ok := d.pipes[sh.key]; ok {
		return p, nil
	}
	code := C.CString(sh.code)
	defer C.free(unsafe.Pointer(code))
	label := C.CString(sh.key)
	defer C.free(unsafe.Pointer(label))
	msg := (*C.char)(C.calloc(msgLen, 1))
	defer C.free(unsafe.Pointer(msg))
	p := C.lw_pipeline(d.c, code, C.size_t(len(sh.code)), label, msg, msgLen)
	if p == nil {
		return nil, &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported,
			Detail: "wgpu:0 could not compile the shader " + sh.key + ": " + cstr(msg)}
	}
	d.pipes[sh.key] = p
	return p, nil
}

// launch records one dispatch of a shader over groups workgroups, binding
// the parameter words at binding 0 and the tensors' buffers in order at
// bindings 1.. (each whole: shaders index from the tensor's offset, which
// they get in the parameters). Nothing runs until the next
// submission (a read-back, a write, Sync, or a full parameter arena).
func launch(op string, sh *shader, groups [3]uint32, params []uint32, tensors ...*dispatch.Tensor) error {
	d, err := open()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.pipeline(op, sh)
	if err != nil {
		return err
	}
	n := len(tensors) + 1
	if n > 16 {
		return fmt.Errorf("wgpu: %s binds %d buffers, more than 16", op, n)
	}
	bufs := (*[16]C.WGPUBuffer)(C.calloc(16, C.size_t(unsafe.Sizeof(C.WGPUBuffer(nil)))))
	defer C.free(unsafe.Pointer(bufs))
	offs := (*[16]C.uint64_t)(C.calloc(16, 8))
	defer C.free(unsafe.Pointer(offs))
	sizes := (*[16]C.uint64_t)(C.calloc(16, 8))
	defer C.free(unsafe.Pointer(sizes))
	words := params
	if len(words) == 0 {
		words = []uint32{0}
	}
	pbytes := uint64(len(words)) * 4
	off, err := d.params.slot(d, pbytes)
	if err != nil {
		return err
	}
	C.lw_write_params(d.c, d.params.buf, C.uint64_t(off), unsafe.Pointer(&words[0]), C.size_t(pbytes))
	bufs[0] = d.params.buf
	offs[0] = C.uint64_t(off)
	sizes[0] = C.uint64_t(pbytes)
	bindLimit := uint64(d.limits.maxStorageBufferBindingSize) &^ 3
	for i, t := range tensors {
		b := t.Storage.Buffer.(*buffer)
		bufs[1+i] = b.buf
		sizes[1+i] = C.uint64_t(min(b.class, bindLimit))
	}
	msg := (*C.char)(C.calloc(msgLen, 1))
	defer C.free(unsafe.Pointer(msg))
	if C.lw_dispatch(d.c, p, C.int(n), &bufs[0], &offs[0], &sizes[0], C.uint32_t(groups[0]), C.uint32_t(groups[1]), C.uint32_t(groups[2]), msg, msgLen) != 0 {
		return &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported, Detail: "wgpu:0 refused the dispatch of " + sh.key + ": " + cstr(msg)}
	}
	d.recorded = append(d.recorded, op)
	return d.takeError(op)
}
