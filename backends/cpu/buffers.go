package cpu

import (
	"fmt"
	"math"
	"os"
	"sync"
	"unsafe"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// A buffer is a cpu tensor's memory: one Go slice of the dtype's type. A
// buffer that Alloc made comes from the cpu's pool (lathe's one caching
// allocator, package alloc) and goes back to it when the last tensor on it
// is released, so a training loop that makes the same shapes every step
// reuses the same memory instead of asking the garbage collector for
// megabytes per step. A buffer made around a caller's slice (Upload) is
// never pooled: the caller may still hold it.
//
// The pool's handle is the buffer itself, so a buffer from the cache costs
// no allocation at all. A small one that nobody releases is the garbage
// collector's, with no cleanup (dispatch.HeapBuffer), which would cost more
// than the small ops it runs; a large one comes back to the pool through
// its tensor's cleanup.
type buffer[T any] struct {
	data []T                     // a slice of the whole block: cap(data) elements
	home *alloc.Pool[*buffer[T]] // nil: not pooled
}

// OnGoHeap tells dispatch whether an unreleased buffer is the garbage
// collector's to reclaim with no cleanup (dispatch.HeapBuffer): a small
// one is, a large one goes back to the pool.
func (b *buffer[T]) OnGoHeap() bool { return int64(cap(b.data))*elemSize[T]() < cleanupMin }

// Slice lends the n elements from offset (dispatch.HostSlicer); every
// buffer holds its dtype's Go type, so dt adds nothing here.
func (b *buffer[T]) Slice(_ dispatch.DType, offset, n int) any {
	return b.data[offset : offset+n : offset+n] // an append cannot reach past the view
}

// cleanupMin is the size from which an unreleased buffer is worth a
// cleanup: a new buffer of that size costs Go more to allocate and zero
// (and the collector to scan past) than the cleanup costs.
const cleanupMin = 16 << 10

func (b *buffer[T]) Free() {
	if b.home != nil {
		b.home.Free(alloc.Block[*buffer[T]]{Handle: b, Size: int64(cap(b.data)) * elemSize[T]()})
	}
}

// The cpu's pool numbers: classes of a 64-byte cache line up to 1 MiB,
// then of a 4 KiB page (Go's allocator gives a large slice whole pages
// anyway), so that a buffer nobody releases, as most forward activations
// are, wastes almost nothing; up to 1 GiB cached over the element types
// (enough for the working set of a training step, not so much that an idle
// program holds gigabytes); memory past the cap goes to the garbage
// collector at once. A pool per element type, since a buffer is a typed
// slice.
var (
	classes  = alloc.Classes{Align: 64, Small: 1 << 20, Large: 4 << 10}
	cacheCap = alloc.NewCap(defaultCacheLimit)
	pools    = struct {
		f32 *alloc.Pool[*buffer[float32]]
		f64 *alloc.Pool[*buffer[float64]]
		i32 *alloc.Pool[*buffer[int32]]
		i64 *alloc.Pool[*buffer[int64]]
		b   *alloc.Pool[*buffer[bool]]
		f16 *alloc.Pool[*buffer[half.Float16]]
		bf  *alloc.Pool[*buffer[half.BFloat16]]
		i8  *alloc.Pool[*buffer[int8]]
		u8  *alloc.Pool[*buffer[uint8]]
	}{newPool[float32](), newPool[float64](), newPool[int32](), newPool[int64](), newPool[bool](),
		newPool[half.Float16](), newPool[half.BFloat16](), newPool[int8](), newPool[uint8]()}
)

// pool is what EmptyCache and MemoryStats need of a pool of any element
// type.
type pool interface {
	EmptyCache() error
	Stats() dispatch.MemoryStats
}

// allPools lists the pools, one per element type.
func allPools() []pool {
	return []pool{pools.f32, pools.f64, pools.i32, pools.i64, pools.b, pools.f16, pools.bf, pools.i8, pools.u8}
}

const defaultCacheLimit = 1 << 30

func newPool[T any]() *alloc.Pool[*buffer[T]] {
	return alloc.New[*buffer[T]](hostMemory[T]{}, alloc.Config{Device: "cpu", Classes: classes, Cap: cacheCap, Heap: true, Untracked: cleanupMin})
}

// hostMemory is the pool's view of the machine for one element type: new
// memory is a Go slice, and the garbage collector takes it back.
type hostMemory[T any] struct{}

func (hostMemory[T]) Alloc(size int64) (b *buffer[T], err error) {
	defer func() {
		if recover() != nil { // makeslice: len out of range, where no limit was known
			b, err = nil, &dispatch.Error{Kind: dispatch.ErrOutOfMemory, Detail: "cpu: a slice of " + fmt.Sprint(size) + " bytes is more than Go can allocate"}
		}
	}()
	n := size / elemSize[T]()
	if size <= smallBlock {
		// One allocation for the buffer and its elements: the smallest
		// class is most of what a small op asks for.
		s := new(smallBuffer[T])
		s.data = unsafe.Slice((*T)(unsafe.Pointer(&s.elems)), n)
		return &s.buffer, nil
	}
	return &buffer[T]{data: make([]T, n)}, nil
}

// smallBlock is the pool's smallest class (classes.Align), which a buffer
// of smallBuffer holds in itself.
const smallBlock = 64

// smallBuffer is a buffer whose elements lie in the same allocation. The
// element types hold no pointers, so the bytes can be any of them; the
// array follows two words, so it is aligned for every one.
type smallBuffer[T any] struct {
	buffer[T]
	elems [smallBlock]byte
}

func (hostMemory[T]) Free(*buffer[T]) error { return nil }
func (hostMemory[T]) Drain() error          { return nil }

// Info is the memory the cpu device may use (memoryLimit) and what is free
// of it: the machine's available memory, at most the limit.
func (hostMemory[T]) Info() (free, total int64, err error) {
	total, err = memoryLimit()
	if err != nil {
		return 0, 0, err
	}
	free = total
	if avail, _ := alloc.HostMemory(); avail > 0 {
		free = min(avail, total)
	}
	return free, total, nil
}

// memoryLimit is the memory the cpu device may use, which no single buffer
// may pass: LATHE_CPU_MEMORY where it is set (a byte count such as 16GiB,
// read once), else the machine's memory (MemTotal), else, where there is
// no /proc/meminfo, no limit.
var memoryLimit = sync.OnceValues(func() (int64, error) {
	if v, ok := os.LookupEnv("LATHE_CPU_MEMORY"); ok {
		n, err := alloc.ParseBytes(v)
		if err != nil {
			return 0, &dispatch.Error{Kind: dispatch.ErrValue, Detail: "LATHE_CPU_MEMORY: " + err.Error(),
				Fix: "set LATHE_CPU_MEMORY to the memory the cpu device may use (" + alloc.ByteCountFix + "), or unset it to use the machine's"}
		}
		return n, nil
	}
	return alloc.HostTotal(), nil
})

// EmptyCache hands every pooled buffer to the garbage collector (PyTorch's
// torch.cuda.empty_cache, for the cpu).
func (backend) EmptyCache(dispatch.Device) error {
	emptyCache()
	return nil
}

func emptyCache() {
	for _, p := range allPools() {
		p.EmptyCache() // hostMemory's Drain cannot fail
	}
}

// MemoryStats reports the pools' figures, summed over the element types
// (the peaks too, so they bound the true peak from above), with the memory
// the cpu device may use.
func (backend) MemoryStats(dispatch.Device) (dispatch.MemoryStats, error) {
	var s dispatch.MemoryStats
	for _, pl := range allPools() {
		p := pl.Stats()
		s.Allocated += p.Allocated
		s.PeakAllocated += p.PeakAllocated
		s.Cached += p.Cached
		s.Reserved += p.Reserved
		s.PeakReserved += p.PeakReserved
		s.Segments += p.Segments
		s.Allocs += p.Allocs
		s.CacheHits += p.CacheHits
		s.OOMRetries += p.OOMRetries
		s.Collections += p.Collections
		s.Free, s.Total = p.Free, p.Total
	}
	return s, nil
}

func elemSize[T any]() int64 {
	var v T
	return int64(unsafe.Sizeof(v))
}

// get returns a buffer of n elements from p, its contents unspecified
// (dispatch.Backend's contract): a reused block holds what its last tensor
// left. Most kernels write every element of their output, and clearing
// megabytes that are about to be overwritten cost an elementwise op on
// 16M floats as much as the op itself; a kernel that accumulates into its
// output clears it first. LATHE_CPU_POISON=1 fills every buffer
// with NaN bits (true for Bool) instead, which the tests run under to find
// a kernel that reads an element before writing it.
func get[T any](p *alloc.Pool[*buffer[T]], n int) (*buffer[T], error) {
	size := elemSize[T]()
	if int64(n) > math.MaxInt64/size {
		detail := fmt.Sprintf("cpu: out of memory: asked for %d elements of %d bytes, more bytes than an int64 counts", n, size)
		if free, total, err := (hostMemory[T]{}).Info(); err == nil && total > 0 {
			detail += "; the device has " + alloc.FormatBytes(free) + " free of " + alloc.FormatBytes(total)
		}
		return nil, &dispatch.Error{Kind: dispatch.ErrOutOfMemory, Detail: detail, Fix: "use a smaller tensor"}
	}
	blk, err := p.Alloc(int64(n) * size)
	if err != nil {
		return nil, err
	}
	b := blk.Handle
	b.data = b.data[:n]
	if poison {
		fillPoison(b.data)
	}
	b.home = p
	return b, nil
}

// poison is LATHE_CPU_POISON=1, read once: see get.
var poison = os.Getenv("LATHE_CPU_POISON") == "1"

// fillPoison sets every byte of v to 0xFF (a NaN in each float type, -1 in
// each signed integer), or every bool to true.
func fillPoison[T any](v []T) {
	if b, ok := any(v).([]bool); ok {
		for i := range b {
			b[i] = true
		}
		return
	}
	if len(v) == 0 {
		return
	}
	bytes := unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(elemSize[T]()))
	for i := range bytes {
		bytes[i] = 0xFF
	}
}

// pooled returns a buffer of n elements of dtype dt (contents unspecified:
// see get); ok is false
// for a dtype the cpu does not hold.
func pooled(dt dispatch.DType, n int) (b dispatch.Buffer, ok bool, err error) {
	switch dt {
	case dispatch.Float32:
		b, err = orNil(get(pools.f32, n))
	case dispatch.Float64:
		b, err = orNil(get(pools.f64, n))
	case dispatch.Int32:
		b, err = orNil(get(pools.i32, n))
	case dispatch.Int64:
		b, err = orNil(get(pools.i64, n))
	case dispatch.Bool:
		b, err = orNil(get(pools.b, n))
	case dispatch.Float16:
		b, err = orNil(get(pools.f16, n))
	case dispatch.BFloat16:
		b, err = orNil(get(pools.bf, n))
	case dispatch.Int8:
		b, err = orNil(get(pools.i8, n))
	case dispatch.Uint8:
		b, err = orNil(get(pools.u8, n))
	default:
		return nil, false, nil
	}
	return b, true, err
}

// orNil keeps a failed get's nil pointer out of the interface.
func orNil[T any](b *buffer[T], err error) (dispatch.Buffer, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

// newBuffer is a buffer for kernels' own temporaries, whose dtype is one
// of the cpu's (bool stands in for any other, as a zero value would). Its
// size can pass any tensor's (the contiguous copy of an expanded input),
// so the pool may refuse it; newBuffer then panics with the refusal, and
// the wrapper that registerFor gives every kernel returns it as the
// kernel's error, as encoding/json unwinds its encoder's errors: no kernel
// that makes a temporary needs an error path of its own. Call it on the
// kernel's own goroutine, not in a parallel worker.
func newBuffer(dt dispatch.DType, n int) dispatch.Buffer {
	b, ok, err := pooled(dt, n)
	if !ok {
		b, _, err = pooled(dispatch.Bool, n)
	}
	if err != nil {
		panic(refusal{err})
	}
	return b
}

// refusal is the pool's error for a kernel's temporary, on its way to the
// kernel's caller.
type refusal struct{ err error }
