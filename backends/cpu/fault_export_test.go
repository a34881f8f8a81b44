package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/internal/faultinject"
)

// FaultyAllocs puts the cpu's pools over memory that fails on demand
// (faulttest.Allocs) and returns it with what puts the pools back. Buffers
// remember their pool, so those made meanwhile go back to the faulty one.
func FaultyAllocs() (*Faults, func()) {
	f := &Faults{}
	old := pools
	pools.f32 = faultyPool[float32](f)
	pools.f64 = faultyPool[float64](f)
	pools.i32 = faultyPool[int32](f)
	pools.i64 = faultyPool[int64](f)
	pools.b = faultyPool[bool](f)
	return f, func() { emptyCache(); pools = old }
}

// Faults counts the raw allocations of the faulty pools and fails the one
// it is told to. It also counts the bytes of blocks that the garbage
// collector reclaimed with no Release (tensors nobody released), which the
// cpu's pool leaves counted as allocated: MemoryStats' Allocated less
// Collected is what tensors really hold.
type Faults struct {
	faultinject.Counter
	collected atomic.Int64
}

// Collected is the bytes of blocks that the garbage collector reclaimed
// while the pool counted them as allocated.
func (f *Faults) Collected() int64 { return f.collected.Load() }

func faultyPool[T any](f *Faults) *alloc.Pool[*buffer[T]] {
	return alloc.New[*buffer[T]](faultyMemory[T]{f, &sync.Map{}}, alloc.Config{Device: "cpu", Classes: classes, Cap: cacheCap, Heap: true})
}

// faultyMemory is hostMemory whose chosen allocation says the machine is
// full, as a real one would, and which notes each block that the garbage
// collector takes before the pool gave it back (Free).
type faultyMemory[T any] struct {
	f     *Faults
	freed *sync.Map // weak.Pointer[buffer[T]] -> *atomic.Bool, set by Free
}

type blockCleanup[T any] struct {
	key   weak.Pointer[buffer[T]]
	freed *atomic.Bool
	size  int64
}

func (m faultyMemory[T]) Alloc(size int64) (*buffer[T], error) {
	b, err := faultinject.Memory[*buffer[T]]{Memory: hostMemory[T]{}, C: &m.f.Counter, Refusal: "cpu: no memory"}.Alloc(size)
	if err != nil {
		return nil, err
	}
	c := blockCleanup[T]{weak.Make(b), new(atomic.Bool), size}
	m.freed.Store(c.key, c.freed)
	runtime.AddCleanup(b, func(c blockCleanup[T]) {
		m.freed.Delete(c.key)
		if !c.freed.Load() {
			m.f.collected.Add(c.size)
		}
	}, c)
	return b, nil
}

func (m faultyMemory[T]) Free(b *buffer[T]) error {
	if f, ok := m.freed.Load(weak.Make(b)); ok {
		f.(*atomic.Bool).Store(true)
	}
	return hostMemory[T]{}.Free(b)
}
func (faultyMemory[T]) Drain() error                         { return nil }
func (faultyMemory[T]) Info() (free, total int64, err error) { return hostMemory[T]{}.Info() }
