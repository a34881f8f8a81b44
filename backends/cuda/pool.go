package cuda

import (
	"errors"
	"slices"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// The caching allocator: device memory is expensive to get from the driver
// (cuMemAlloc takes microseconds to milliseconds, and cuMemFree may wait
// for the device), and a training loop asks for the same sizes every step, so
// freed blocks are kept and handed out again, as PyTorch's CUDA caching
// allocator does. This file is the pool's bookkeeping in plain Go, over the
// three calls it needs of the driver (deviceMemory), so that it is tested
// on machines without a GPU.
//
// Size classes:
//   - a request of at most 1 MiB is rounded up to a multiple of 512 bytes
//     and served from a slab: one 2 MiB driver allocation cut into equal
//     slots of that class (2 to 4096 of them). Small tensors, which are
//     most tensors, then cost no driver call once their class has a slab.
//   - a larger request is rounded up to a multiple of 2 MiB and gets a
//     driver allocation of its own. A freed large block serves a later
//     request of its class or of one up to an eighth smaller (best fit), so
//     a batch of slightly varying size reuses memory without holding much
//     more than it asked for. Blocks are never split (PyTorch splits, at
//     the cost of fragmentation tracking that a pool this size does not need).
//
// Freed blocks are stream-ordered: a block goes back to the pool as soon as
// its last tensor is released, even while kernels queued on the device's
// stream still read it. That is safe because each device has one stream and
// every use of the memory, by the next owner too, is queued on it, so it
// runs after the work that used the block before. Only giving memory back
// to the driver (EmptyCache) waits for the stream first.

const (
	blockAlign = 512     // small requests round up to this
	smallLimit = 1 << 20 // the largest request served from a slab
	slabBytes  = 2 << 20 // the driver allocation that slabs are cut from
	largeAlign = 2 << 20 // large requests round up to this
	largeSlack = 8       // a cached large block serves a request down to 1/largeSlack smaller
)

// sizeClass is the size of the block that serves a request of n bytes.
func sizeClass(n int64) int64 {
	if n <= smallLimit {
		return max(blockAlign, roundUp(n, blockAlign))
	}
	return roundUp(n, largeAlign)
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// deviceMemory is what the pool needs of a device's driver.
type deviceMemory interface {
	// malloc gets bytes of device memory from the driver; a full device is
	// an error of kind ErrOutOfMemory.
	malloc(bytes int64) (uint64, error)
	// free gives a malloc'd allocation back to the driver.
	free(ptr uint64) error
	// sync waits until no work queued on the device uses any memory.
	sync() error
	// memInfo is the device's free and total memory, as the driver sees it.
	memInfo() (free, total int64, err error)
}

// Stats are a cuda device's allocator figures, in bytes and counts.
// They cover lathe's own pool; other programs' use shows only in the free
// memory that cuMemGetInfo reports.
type Stats struct {
	// Allocated is the memory in blocks that tensors hold now (each block's
	// size class, so at least the bytes asked for); PeakAllocated is its
	// highest value since the device was opened.
	Allocated, PeakAllocated int64
	// Reserved is the memory lathe holds from the driver, in use or cached;
	// PeakReserved is its highest value.
	Reserved, PeakReserved int64
	// Segments is how many driver allocations make up Reserved.
	Segments int
	// Allocs counts blocks handed out; CacheHits those that needed no new
	// driver allocation.
	Allocs, CacheHits int64
	// OOMRetries counts the times a full device made the pool give its cache
	// back to the driver and try again.
	OOMRetries int64
}

// segment is one driver allocation: a slab of equal slots, or one large block.
type segment struct {
	ptr   uint64
	size  int64
	slots []*block // a slab's slots; nil for a large block's segment
	used  int      // slots handed out
}

// block is a piece of device memory that one buffer holds at a time.
type block struct {
	ptr  uint64
	size int64 // its size class
	seg  *segment
	live bool
}

// pool is one device's caching allocator. Its methods are safe to call from
// any goroutine (a buffer is freed by whoever releases its last tensor, the
// garbage collector's cleanup goroutine included).
type pool struct {
	dev dispatch.Device
	mem deviceMemory

	mu    sync.Mutex
	small map[int64][]*block // free slab slots by class, most recently freed last
	large []*block           // free large blocks
	slabs int                // slab segments held
	stats Stats
}

func newPool(dev dispatch.Device, mem deviceMemory) *pool {
	return &pool{dev: dev, mem: mem, small: map[int64][]*block{}}
}

// alloc returns a block of at least n > 0 bytes.
func (p *pool) alloc(n int64) (*block, error) {
	class := sizeClass(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.cached(class)
	if b != nil {
		p.stats.CacheHits++
	} else {
		var err error
		if b, err = p.grow(n, class); err != nil {
			return nil, err
		}
	}
	b.live = true
	if b.seg.slots != nil {
		b.seg.used++
	}
	p.stats.Allocs++
	p.stats.Allocated += b.size
	p.stats.PeakAllocated = max(p.stats.PeakAllocated, p.stats.Allocated)
	return b, nil
}

// cached takes a free block for class out of the pool, or returns nil.
func (p *pool) cached(class int64) *block {
	if class <= smallLimit {
		list := p.small[class]
		if k := len(list); k > 0 {
			b := list[k-1]
			list[k-1] = nil
			p.small[class] = list[:k-1]
			return b
		}
		return nil
	}
	best := -1
	for i, b := range p.large {
		if b.size >= class && b.size-b.size/largeSlack <= class && (best < 0 || b.size < p.large[best].size) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := p.large[best]
	p.large = slices.Delete(p.large, best, best+1)
	return b
}

// grow gets a new segment from the driver for class and returns one block
// of it (a slab's other slots go to the free list). A full device makes
// the pool give back what it caches and try once more, as PyTorch does.
func (p *pool) grow(asked, class int64) (*block, error) {
	size := class
	if class <= smallLimit {
		size = slabBytes
	}
	ptr, err := p.mem.malloc(size)
	if errors.Is(err, dispatch.ErrOutOfMemory) {
		p.stats.OOMRetries++
		if cerr := p.emptyLocked(); cerr != nil {
			return nil, cerr
		}
		ptr, err = p.mem.malloc(size)
		if errors.Is(err, dispatch.ErrOutOfMemory) {
			return nil, p.oomError(asked, class, err)
		}
	}
	if err != nil {
		return nil, err
	}
	seg := &segment{ptr: ptr, size: size}
	p.stats.Segments++
	p.stats.Reserved += size
	p.stats.PeakReserved = max(p.stats.PeakReserved, p.stats.Reserved)
	if class > smallLimit {
		return &block{ptr: ptr, size: class, seg: seg}, nil
	}
	p.slabs++
	n := int(size / class)
	seg.slots = make([]*block, n)
	for i := range seg.slots {
		seg.slots[i] = &block{ptr: ptr + uint64(int64(i)*class), size: class, seg: seg}
	}
	// Hand out the first slot; the rest wait in the free list, lowest
	// address last so that it goes next.
	for i := n - 1; i >= 1; i-- {
		p.small[class] = append(p.small[class], seg.slots[i])
	}
	return seg.slots[0], nil
}

// oomError is ErrOutOfMemory with the figures that say where memory went.
func (p *pool) oomError(asked, class int64, cause error) error {
	detail := p.dev.String() + ": out of memory: asked for " + formatBytes(asked)
	if class != asked {
		detail += " (a block of " + formatBytes(class) + ")"
	}
	detail += "; tensors hold " + formatBytes(p.stats.Allocated) + " and lathe reserves " +
		formatBytes(p.stats.Reserved) + " in all"
	if free, total, err := p.mem.memInfo(); err == nil {
		detail += "; the device has " + formatBytes(free) + " free of " + formatBytes(total)
	}
	var e *dispatch.Error
	if errors.As(cause, &e) && e.Err != nil {
		cause = e.Err
	}
	return &dispatch.Error{Kind: dispatch.ErrOutOfMemory, Detail: detail, Err: cause,
		Fix: "release tensors that are no longer needed (Release), use a smaller batch, or free memory that other programs hold"}
}

// free puts a block back in the pool. Freeing a block twice is a bug in
// lathe, not the caller's; the second free is ignored.
func (p *pool) free(b *block) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !b.live {
		return
	}
	b.live = false
	p.stats.Allocated -= b.size
	if b.seg.slots != nil {
		b.seg.used--
		p.small[b.size] = append(p.small[b.size], b)
		return
	}
	p.large = append(p.large, b)
}

// emptyCache gives every cached large block and every slab with no slot in
// use back to the driver, once the stream is done with them.
func (p *pool) emptyCache() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.emptyLocked()
}

func (p *pool) emptyLocked() error {
	idle := 0 // slabs with no slot in use
	for _, list := range p.small {
		for _, b := range list {
			if b.seg.used == 0 && b.seg.slots[0] == b {
				idle++
			}
		}
	}
	if len(p.large) == 0 && idle == 0 {
		return nil
	}
	if err := p.mem.sync(); err != nil {
		return err
	}
	var first error
	release := func(seg *segment) {
		if err := p.mem.free(seg.ptr); err != nil && first == nil {
			first = err
		}
		p.stats.Segments--
		p.stats.Reserved -= seg.size
	}
	for _, b := range p.large {
		release(b.seg)
	}
	p.large = nil
	for class, list := range p.small {
		kept := list[:0]
		for _, b := range list {
			switch {
			case b.seg.used > 0:
				kept = append(kept, b)
			case b.seg.slots[0] == b: // once per idle slab
				release(b.seg)
				p.slabs--
			}
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(p.small, class)
		} else {
			p.small[class] = kept
		}
	}
	return first
}

// memoryStats returns a copy of the figures.
func (p *pool) memoryStats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}
