package cpu

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
)

// A buffer is a cpu tensor's memory: one Go slice of the dtype's type. A
// buffer that Alloc made goes back to its pool when the last tensor on it is
// released, so
// a training loop that makes the same shapes every step reuses the same
// memory instead of asking the garbage collector for megabytes per step, as
// PyTorch's caching allocator does for its devices. A buffer made around a
// caller's slice (Upload) is never pooled: the caller may still hold it.
type buffer[T any] struct {
	data []T
	home *pool[T] // nil: not pooled
}

// OnGoHeap tells dispatch that an unreleased buffer is the garbage
// collector's to reclaim, with no cleanup needed.
func (*buffer[T]) OnGoHeap() {}

func (b *buffer[T]) Free() {
	if b.home != nil {
		b.home.put(b)
	}
}

// pool keeps freed buffers of one dtype by size class: the size rounded up
// to 16 elements. A training loop asks for the same sizes every step, so
// close classes reuse as well as coarse ones would, and a buffer that is
// never released (most forward activations) wastes almost nothing.
// (PyTorch's caching allocator rounds to 512 bytes and splits large blocks;
// a cpu pool that only serves repeats needs neither.)
type pool[T any] struct {
	mu   sync.Mutex
	free map[int][]*buffer[T] // by class, most recently freed last
}

var (
	pools = struct {
		f32 pool[float32]
		f64 pool[float64]
		i32 pool[int32]
		i64 pool[int64]
		b   pool[bool]
	}{}

	// cachedBytes is what all pools hold; a freed buffer that would take it
	// past cacheLimit is left to the garbage collector instead.
	cachedBytes atomic.Int64
	cacheLimit  atomic.Int64
	poolHits    atomic.Int64
	poolMisses  atomic.Int64
)

// defaultCacheLimit bounds the memory the pools keep: enough for the working
// set of a training step, not so much that an idle program holds gigabytes.
const defaultCacheLimit = 1 << 30

func init() { cacheLimit.Store(defaultCacheLimit) }

// sizeClass is the capacity a buffer of n elements gets.
func sizeClass(n int) int { return max(16, (n+15)&^15) }

func elemSize[T any]() int64 {
	var v T
	return int64(unsafe.Sizeof(v))
}

// get returns a zeroed buffer of n elements, from the pool when it has one
// of n's class. Zeroing keeps the contract of a fresh Go slice, which
// kernels that accumulate into their output rely on.
func (p *pool[T]) get(n int) *buffer[T] {
	class := sizeClass(n)
	p.mu.Lock()
	list := p.free[class]
	var b *buffer[T]
	if k := len(list); k > 0 {
		b, list[k-1] = list[k-1], nil
		p.free[class] = list[:k-1]
	}
	p.mu.Unlock()
	if b == nil {
		poolMisses.Add(1)
		return &buffer[T]{data: make([]T, n, class), home: p}
	}
	poolHits.Add(1)
	cachedBytes.Add(-int64(class) * elemSize[T]())
	b.data = b.data[:n]
	clear(b.data)
	return b
}

func (p *pool[T]) put(b *buffer[T]) {
	class := cap(b.data)
	size := int64(class) * elemSize[T]()
	if cachedBytes.Add(size) > cacheLimit.Load() {
		cachedBytes.Add(-size)
		return
	}
	p.mu.Lock()
	if p.free == nil {
		p.free = map[int][]*buffer[T]{}
	}
	p.free[class] = append(p.free[class], b)
	p.mu.Unlock()
}

func (p *pool[T]) empty() {
	p.mu.Lock()
	for class, list := range p.free {
		cachedBytes.Add(-int64(class*len(list)) * elemSize[T]())
	}
	p.free = nil
	p.mu.Unlock()
}

// EmptyCache hands every pooled buffer to the garbage collector (PyTorch's
// torch.cuda.empty_cache, for the cpu).
func (backend) EmptyCache(dispatch.Device) error {
	emptyCache()
	return nil
}

// MemoryStats reports what the pools hold and how they served allocations.
func (backend) MemoryStats(dispatch.Device) (dispatch.MemoryStats, error) {
	cached, hits, misses := CacheStats()
	return dispatch.MemoryStats{Cached: cached, Allocs: hits + misses, CacheHits: hits}, nil
}

func emptyCache() {
	pools.f32.empty()
	pools.f64.empty()
	pools.i32.empty()
	pools.i64.empty()
	pools.b.empty()
}

// CacheStats reports the bytes the pools hold and how many allocations they
// served (hits) or passed to the Go allocator (misses) since the start.
func CacheStats() (cached, hits, misses int64) {
	return cachedBytes.Load(), poolHits.Load(), poolMisses.Load()
}

// alloc returns a zeroed buffer of n elements of dtype dt.
func alloc(dt dispatch.DType, n int) (dispatch.Buffer, bool) {
	switch dt {
	case dispatch.Float32:
		return pools.f32.get(n), true
	case dispatch.Float64:
		return pools.f64.get(n), true
	case dispatch.Int32:
		return pools.i32.get(n), true
	case dispatch.Int64:
		return pools.i64.get(n), true
	case dispatch.Bool:
		return pools.b.get(n), true
	}
	return nil, false
}

// newBuffer is alloc for kernels' own temporaries, whose dtype is one of
// the five (bool stands in for any other, as a zero value would).
func newBuffer(dt dispatch.DType, n int) dispatch.Buffer {
	if b, ok := alloc(dt, n); ok {
		return b
	}
	return pools.b.get(n)
}
