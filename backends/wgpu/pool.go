//go:build cgo

package wgpu

/*
#include "cdecl.h"
*/
import "C"

import (
	"sync/atomic"

	"github.com/lathe-ml/lathe/dispatch"
)

// buffer is a tensor's storage on wgpu:0: a Dawn buffer of at least the
// tensor's bytes, from the device's pool by size class.
type buffer struct {
	buf   C.WGPUBuffer
	class uint64 // the buffer's real size in bytes
	bytes uint64 // the bytes the tensor asked for
	pool  *pool
	freed atomic.Bool
}

// Free gives the buffer back to its pool. The ops already recorded that use
// it still run first: the pool hands it out again only to ops recorded
// after them, on the same queue.
func (b *buffer) Free() {
	if b.freed.CompareAndSwap(false, true) {
		d, _ := open()
		d.mu.Lock()
		b.pool.put(b.class, b.buf)
		d.mu.Unlock()
	}
}

// pool keeps freed Dawn buffers by size class for reuse, as PyTorch's
// caching allocator does, up to a cap of cached bytes past which freed
// buffers are destroyed.
type pool struct {
	usage  C.WGPUFlags
	free   map[uint64][]C.WGPUBuffer
	cached uint64 // bytes in free lists
	limit  uint64
	live   uint64 // bytes handed out and not freed
	hits   uint64 // gets served from the cache
	misses uint64 // gets that made a new Dawn buffer
}

func newPool(usage C.WGPUFlags, limit uint64) pool {
	return pool{usage: usage, free: map[uint64][]C.WGPUBuffer{}, limit: limit}
}

// get returns a buffer of class bytes: a cached one, or a new one. Called
// with the device's lock held.
func (p *pool) get(d *device, class uint64) (C.WGPUBuffer, error) {
	if list := p.free[class]; len(list) > 0 {
		b := list[len(list)-1]
		p.free[class] = list[:len(list)-1]
		p.cached -= class
		p.live += class
		p.hits++
		return b, nil
	}
	p.misses++
	b := C.lw_buffer(d.c, C.uint64_t(class), p.usage)
	if err := d.takeError("alloc"); err != nil || b == nil {
		// Out of memory: give the cache back and try once more.
		p.empty()
		if b = C.lw_buffer(d.c, C.uint64_t(class), p.usage); b == nil || d.takeError("alloc") != nil {
			return nil, &dispatch.Error{Kind: dispatch.ErrOutOfMemory,
				Detail: "wgpu:0 could not allocate a buffer of " + byteSize(class) + " (" + byteSize(p.live) + " in use)",
				Err:    err}
		}
	}
	p.live += class
	return b, nil
}

func (p *pool) put(class uint64, b C.WGPUBuffer) {
	p.live -= class
	if p.cached+class > p.limit {
		C.lw_buffer_free(b)
		return
	}
	p.free[class] = append(p.free[class], b)
	p.cached += class
}

// empty destroys every cached buffer.
func (p *pool) empty() {
	for class, list := range p.free {
		for _, b := range list {
			C.lw_buffer_free(b)
		}
		delete(p.free, class)
	}
	p.cached = 0
}

// MemoryStats reports wgpu:0's tensor buffer pool.
func (backend) MemoryStats(dispatch.Device) (dispatch.MemoryStats, error) {
	d, err := open()
	if err != nil {
		return dispatch.MemoryStats{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := &d.pool
	return dispatch.MemoryStats{Allocated: int64(p.live), Cached: int64(p.cached), Reserved: int64(p.live + p.cached),
		Allocs: int64(p.hits + p.misses), CacheHits: int64(p.hits)}, nil
}

// EmptyCache destroys the buffers wgpu:0 keeps for reuse (PyTorch's
// torch.cuda.empty_cache), after the work that may still use them.
func (backend) EmptyCache(dispatch.Device) error {
	d, err := open()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.sync(); err != nil {
		return err
	}
	d.pool.empty()
	d.staging.empty()
	return nil
}
