package alloc

import (
	"errors"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// fakeMemory is a device of a fixed capacity that hands out addresses from
// a counter and records what the pool does with them. Handles that the
// test marks as used by queued work (use) must not be freed before a Drain.
type fakeMemory struct {
	mu             sync.Mutex
	capacity, used int64
	next           uint64
	live           map[uint64]int64
	queued         map[uint64]bool // used by work not yet drained
	mallocs, frees int
	drains         int
	drainErr       error
	drainGate      chan struct{} // when not nil, Drain waits for it
	early          []uint64      // handles freed while queued work used them
	calls          []string      // "alloc", "drain", "free", in order
	noTotal        bool          // Info cannot tell the total
}

var errFakeFull = errors.New("FAKE_OUT_OF_MEMORY")

func newFake(capacity int64) *fakeMemory {
	return &fakeMemory{capacity: capacity, next: 1 << 32, live: map[uint64]int64{}, queued: map[uint64]bool{}}
}

func (f *fakeMemory) Alloc(n int64) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "alloc")
	if f.used+n > f.capacity {
		return 0, &dispatch.Error{Kind: dispatch.ErrOutOfMemory, Detail: "fake device full", Err: errFakeFull}
	}
	p := f.next
	f.next += uint64(n)
	f.live[p] = n
	f.used += n
	f.mallocs++
	return p, nil
}

func (f *fakeMemory) Free(p uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "free")
	n, ok := f.live[p]
	if !ok {
		panic("free of an address the pool never got")
	}
	for q := range f.queued {
		if q >= p && q < p+uint64(n) {
			f.early = append(f.early, q)
		}
	}
	delete(f.live, p)
	f.used -= n
	f.frees++
	return nil
}

func (f *fakeMemory) Drain() error {
	if f.drainGate != nil {
		<-f.drainGate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "drain")
	f.drains++
	if f.drainErr != nil {
		return f.drainErr
	}
	clear(f.queued)
	return nil
}

func (f *fakeMemory) Info() (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noTotal {
		return 0, 0, nil
	}
	return f.capacity - f.used, f.capacity, nil
}

// use marks an address as read by work queued on the device.
func (f *fakeMemory) use(addr uint64) {
	f.mu.Lock()
	f.queued[addr] = true
	f.mu.Unlock()
}

func (f *fakeMemory) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// The three backends' numbers.
var (
	cudaClasses = Classes{Align: 512, Small: 1 << 20, Large: 2 << 20}
	wgpuClasses = Classes{Align: 256, Small: 64 << 10}
	cpuClasses  = Classes{Align: 64, Small: 1 << 20, Large: 4 << 10}
)

// cudaLike is the cuda backend's configuration over a fake device, with
// pressure collection off unless a test turns it on.
func cudaLike(mem *fakeMemory) *Pool[uint64] {
	return New[uint64](mem, Config{Device: "fake:0", Classes: cudaClasses, Slab: 2 << 20, Pressure: -1})
}
