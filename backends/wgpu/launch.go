//go:build cgo

package wgpu

import (
	"fmt"

	"github.com/lathe-ml/lathe/dispatch"
)

// paramArena holds the small parameter blocks of the ops recorded since
// the last submission, each in a slot of its own: a queue write lands
// before the submission that follows it, so two ops of one submission
// cannot share a slot. After a submission the slots are free again, since
// the queue runs later writes after the work already submitted.
type paramArena struct {
	buf   gpuBuffer
	size  uint64
	align uint64
	next  uint64
}

const arenaBytes = 1 << 20

func (a *paramArena) init(d *device) error {
	a.size = arenaBytes
	a.align = max(d.limits.minStorageBufferOffsetAlignment, 4)
	a.buf = d.c.newBuffer(arenaBytes, usageStorage|usageCopyDst)
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
func (d *device) pipeline(op string, sh *shader) (gpuPipeline, error) {
	if p, ok := d.pipes[sh.key]; ok {
		return p, nil
	}
	p, err := d.c.pipeline(sh.code, sh.key)
	if err != nil {
		return nil, &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported,
			Detail: "wgpu:0 could not compile the shader " + sh.key + ": " + err.Error()}
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
	if n > maxBindings {
		return fmt.Errorf("wgpu: %s binds %d buffers, more than %d", op, n, maxBindings)
	}
	words := params
	if len(words) == 0 {
		words = []uint32{0}
	}
	pbytes := uint64(len(words)) * 4
	off, err := d.params.slot(d, pbytes)
	if err != nil {
		return err
	}
	d.c.writeParams(d.params.buf, off, words)
	var binds [maxBindings]binding
	binds[0] = binding{buf: d.params.buf, offset: off, size: pbytes}
	bindLimit := d.limits.maxStorageBufferBindingSize &^ 3
	for i, t := range tensors {
		b := t.Storage.Buffer.(*buffer)
		binds[1+i] = binding{buf: b.buf, size: min(b.class, bindLimit)}
	}
	if err := d.c.dispatch(p, binds[:n], groups); err != nil {
		return &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported, Detail: "wgpu:0 refused the dispatch of " + sh.key + ": " + err.Error()}
	}
	d.recorded = append(d.recorded, op)
	return d.takeError(op)
}
