//go:build cgo

package wgpu

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe/dispatch"
)

// paramArena holds the small parameter blocks of the ops recorded since
// the last submission, each in a slot of its own: the shim writes the
// slots used into buf with one queue write just before it submits the ops
// (lw_flush), so two ops of one submission cannot share a slot, and after
// a submission the slots are free again, since the queue runs later writes
// after the work already submitted. The words are staged in C memory that
// the Go side fills directly, so an op's parameters cost no cgo call and
// a submission one queue write, not one per op.
type paramArena struct {
	buf   gpuBuffer
	size  uint64
	align uint64
}

const arenaBytes = 1 << 20

func (a *paramArena) init(d *device) error {
	a.size = arenaBytes
	a.align = max(d.limits.minStorageBufferOffsetAlignment, 4)
	a.buf = d.c.newBuffer(arenaBytes, usageStorage|usageCopyDst)
	if a.buf == nil {
		return unavailable("the parameter buffer could not be made", d.takeError("init"))
	}
	d.c.initParams(a.buf, arenaBytes)
	return nil
}

// put copies words into a slot of their own and returns its byte offset,
// submitting first when the arena is full.
func (a *paramArena) put(d *device, words []uint32) (uint64, error) {
	n := uint64(len(words)) * 4
	if n > a.size {
		return 0, fmt.Errorf("wgpu: %d bytes of parameters, more than the arena's %d", n, a.size)
	}
	off := d.c.paramsNext()
	if off+n > a.size {
		if err := d.flush(); err != nil {
			return 0, err
		}
		off = 0
	}
	d.c.putParams(off, (off+n+a.align-1)/a.align*a.align, words)
	return off, nil
}

// pipe is a compiled shader: its pipeline, the layout of its bind group
// (asked for once: Dawn makes a new reference each time), and how many
// bindings the shader declares, which every launch of it must give.
type pipe struct {
	p        gpuPipeline
	layout   gpuLayout
	bindings int
}

// pipeline returns the compiled pipeline of a shader, compiling it the
// first time its key is seen.
func (d *device) pipeline(op string, sh *shader) (*pipe, error) {
	if p, ok := d.pipes[sh.key]; ok {
		return p, nil
	}
	p, err := d.c.pipeline(sh.code, sh.key)
	if err != nil {
		return nil, &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported,
			Detail: "wgpu:0 could not compile the shader " + sh.key + ": " + err.Error()}
	}
	pp := &pipe{p: p, layout: layoutOf(p), bindings: declaredBindings(sh.code)}
	d.pipes[sh.key] = pp
	return pp, nil
}

// declaredBindings is the number of bindings of group 0 that WGSL code
// declares: one past the highest n of "@binding(n)" (lathe's kernels use
// group 0 only and number their bindings from 0 without gaps).
func declaredBindings(code string) int {
	n := 0
	for rest := code; ; {
		i := strings.Index(rest, "@binding(")
		if i < 0 {
			return n
		}
		rest = rest[i+len("@binding("):]
		j := strings.IndexByte(rest, ')')
		if j < 0 {
			return n
		}
		if b, err := strconv.Atoi(strings.TrimSpace(rest[:j])); err == nil && b+1 > n {
			n = b + 1
		}
	}
}

// launch records one dispatch of a shader over groups workgroups, binding
// the parameter words at binding 0 and the tensors' buffers in order at
// bindings 1.. (each whole: shaders index from the tensor's offset, which
// they get in the parameters). Nothing runs until the next
// submission (a read-back, a write, Sync, or a full parameter arena).
//
// What Dawn would check of the bind group is checked here first, so that a
// mistake is an error naming the op and nothing is recorded: the number of
// bindings against the shader's, and the workgroup counts against the
// device's limit. The rest holds by construction: every tensor buffer
// comes from the pool with storage usage and is bound whole from offset 0
// (up to maxStorageBufferBindingSize, a multiple of 4, which Alloc never
// exceeds for a tensor's bytes), and parameter slots are aligned to
// minStorageBufferOffsetAlignment within the arena, a storage buffer.
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
	if n > maxBindings || n != p.bindings {
		return &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported,
			Detail: fmt.Sprintf("wgpu:0 refused the dispatch of %s: it binds %d buffers, but the shader declares %d (at most %d)", sh.key, n, p.bindings, maxBindings)}
	}
	for _, g := range groups {
		// (0 is valid: a dispatch of no workgroups does nothing.)
		if g > d.limits.maxComputeWorkgroupsPerDimension {
			return &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported,
				Detail: fmt.Sprintf("wgpu:0 refused the dispatch of %s: workgroups %v, more than maxComputeWorkgroupsPerDimension (%d) in a dimension", sh.key, groups, d.limits.maxComputeWorkgroupsPerDimension)}
		}
	}
	words := params
	if len(words) == 0 {
		words = []uint32{0}
	}
	off, err := d.params.put(d, words)
	if err != nil {
		return err
	}
	var binds [maxBindings]binding
	binds[0] = binding{buf: d.params.buf, offset: off, size: uint64(len(words)) * 4}
	bindLimit := d.limits.maxStorageBufferBindingSize &^ 3
	for i, t := range tensors {
		b := t.Storage.Buffer.(*buffer)
		binds[1+i] = binding{buf: b.buf, size: min(b.class, bindLimit)}
	}
	if err := d.c.dispatch(p.p, p.layout, binds[:n], groups); err != nil {
		return &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported, Detail: "wgpu:0 refused the dispatch of " + sh.key + ": " + err.Error()}
	}
	d.recorded = append(d.recorded, op)
	if len(d.recorded) >= maxRecorded {
		return d.flush()
	}
	return d.takeError(op)
}

// maxRecorded is the most ops a submission holds. Submitting them in
// batches lets the device start on them while more are recorded, and
// bounds what unfinished work holds: lw_flush waits for the submission
// LW_INFLIGHT back, so at most a few thousand ops' bind groups are alive.
const maxRecorded = 1024
