package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// fakeMemory is a device of a fixed capacity that hands out addresses from
// a counter and records what the pool does with them.
type fakeMemory struct {
	capacity, used int64
	next           uint64
	live           map[uint64]int64
	mallocs, frees int
	syncs          int
	syncErr        error
}

func newFake(capacity int64) *fakeMemory {
	return &fakeMemory{capacity: capacity, next: 1 << 32, live: map[uint64]int64{}}
}

func (f *fakeMemory) malloc(n int64) (uint64, error) {
	if f.used+n > f.capacity {
		return 0, &dispatch.Error{Kind: dispatch.ErrOutOfMemory, Detail: "fake device full",
			Err: &DriverError{Library: "libcuda", Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}}
	}
	p := f.next
	f.next += uint64(n)
	f.live[p] = n
	f.used += n
	f.mallocs++
	return p, nil
}

func (f *fakeMemory) free(p uint64) error {
	n, ok := f.live[p]
	if !ok {
		panic("free of an address the pool never got")
	}
	delete(f.live, p)
	f.used -= n
	f.frees++
	return nil
}

func (f *fakeMemory) sync() error { f.syncs++; return f.syncErr }

func (f *fakeMemory) memInfo() (int64, int64, error) { return f.capacity - f.used, f.capacity, nil }

var testDev = dispatch.Device{Kind: kind}

func TestSizeClass(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{
		{1, 512}, {512, 512}, {513, 1024}, {4000, 4096}, {1 << 20, 1 << 20},
		{1<<20 + 1, 2 << 20}, {2 << 20, 2 << 20}, {5<<20 + 3, 6 << 20}, {100 << 20, 100 << 20},
	} {
		if got := sizeClass(c.n); got != c.want {
			t.Errorf("sizeClass(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestPoolSlabs(t *testing.T) {
	mem := newFake(1 << 30)
	p := newPool(testDev, mem)
	a, err := p.alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.alloc(500)
	if mem.mallocs != 1 || b.ptr != a.ptr+512 {
		t.Fatalf("two 512-byte blocks: %d driver allocations, addresses %#x %#x; want one slab, adjacent slots", mem.mallocs, a.ptr, b.ptr)
	}
	st := p.memoryStats()
	if st.Allocated != 1024 || st.Reserved != slabBytes || st.Segments != 1 || st.Allocs != 2 || st.CacheHits != 1 {
		t.Fatalf("stats %+v", st)
	}
	// A freed slot is the next one handed out (most recently freed first).
	p.free(a)
	c, _ := p.alloc(512)
	if c != a {
		t.Fatalf("after freeing a, got block at %#x, want a's %#x", c.ptr, a.ptr)
	}
	// A full slab makes a second one: a 2 MiB slab has 4096 slots of 512 bytes.
	for range slabBytes/512 - 2 {
		if _, err := p.alloc(512); err != nil {
			t.Fatal(err)
		}
	}
	if mem.mallocs != 1 {
		t.Fatalf("4096 slots took %d driver allocations, want 1", mem.mallocs)
	}
	if _, err := p.alloc(1); err != nil || mem.mallocs != 2 {
		t.Fatalf("slot 4097: err %v, %d driver allocations, want 2", err, mem.mallocs)
	}
	// Another class gets its own slab.
	d, _ := p.alloc(1 << 20)
	if mem.mallocs != 3 || p.memoryStats().PeakAllocated != (slabBytes+512)+1<<20 {
		t.Fatalf("1 MiB block: %d driver allocations, stats %+v", mem.mallocs, p.memoryStats())
	}
	p.free(d)
	p.free(d) // a second free is ignored
	if got := p.memoryStats().Allocated; got != slabBytes+512 {
		t.Fatalf("allocated %d after freeing the 1 MiB block, want %d", got, slabBytes+512)
	}
}

func TestPoolLarge(t *testing.T) {
	mem := newFake(1 << 30)
	p := newPool(testDev, mem)
	a, _ := p.alloc(10 << 20)
	p.free(a)
	// 9.5 MiB rounds to 10 MiB: the cached block serves it.
	b, _ := p.alloc(19 << 19)
	if b != a || mem.mallocs != 1 {
		t.Fatalf("9.5 MiB after freeing 10 MiB: %d driver allocations, same block %v", mem.mallocs, b == a)
	}
	p.free(b)
	// 6 MiB is more than an eighth below 10 MiB: a new block.
	c, _ := p.alloc(6 << 20)
	if c == a || mem.mallocs != 2 {
		t.Fatalf("6 MiB took the 10 MiB block (%v) or did not allocate (%d)", c == a, mem.mallocs)
	}
	// Best fit: of 10 and 12 MiB cached, a 9 MiB request (class 10) takes 10.
	d, _ := p.alloc(12 << 20)
	p.free(d)
	p.free(c)
	e, _ := p.alloc(9 << 20)
	if e != a {
		t.Fatalf("best fit took a %d-byte block, want the 10 MiB one", e.size)
	}
	st := p.memoryStats()
	if st.Allocated != 10<<20 || st.Reserved != (10+6+12)<<20 || st.Segments != 3 || st.PeakAllocated != (6+12)<<20 {
		t.Fatalf("stats %+v", st)
	}
}

func TestEmptyCache(t *testing.T) {
	mem := newFake(1 << 30)
	p := newPool(testDev, mem)
	kept, _ := p.alloc(512)    // slab 1 stays: one slot in use
	idle, _ := p.alloc(4096)   // slab 2 goes: freed below
	big, _ := p.alloc(8 << 20) // freed: goes
	keepBig, _ := p.alloc(4 << 20)
	p.free(idle)
	p.free(big)
	if err := p.emptyCache(); err != nil {
		t.Fatal(err)
	}
	if mem.syncs != 1 {
		t.Fatalf("EmptyCache gave memory back after %d stream syncs, want 1", mem.syncs)
	}
	st := p.memoryStats()
	if mem.frees != 2 || st.Segments != 2 || st.Reserved != slabBytes+4<<20 || st.Allocated != 512+4<<20 {
		t.Fatalf("after EmptyCache: %d driver frees, stats %+v", mem.frees, st)
	}
	if _, ok := mem.live[kept.seg.ptr]; !ok {
		t.Fatal("EmptyCache freed a slab with a slot in use")
	}
	// The freed slab's slots are gone from the free list; the kept slab's
	// free slots still serve.
	if b, _ := p.alloc(4096); mem.mallocs != 5 || b.seg == idle.seg {
		t.Fatalf("4 KiB after EmptyCache: %d driver allocations, reused a freed slab: %v", mem.mallocs, b.seg == idle.seg)
	}
	if b, _ := p.alloc(512); b.seg != kept.seg {
		t.Fatal("512 B after EmptyCache did not come from the kept slab")
	}
	// Nothing cached: no sync.
	p.free(keepBig)
	p.emptyCache()
	before := mem.syncs
	if err := p.emptyCache(); err != nil || mem.syncs != before {
		t.Fatalf("EmptyCache with nothing cached synced (%d -> %d) or failed: %v", before, mem.syncs, err)
	}
	// A failed sync (a kernel's fault) is returned, and nothing is freed.
	big2, _ := p.alloc(8 << 20)
	p.free(big2)
	mem.syncErr = errors.New("sticky")
	frees := mem.frees
	if err := p.emptyCache(); err == nil || mem.frees != frees {
		t.Fatalf("EmptyCache after a failed sync: err %v, %d frees", err, mem.frees-frees)
	}
}

func TestOutOfMemory(t *testing.T) {
	mem := newFake(64 << 20)
	p := newPool(testDev, mem)
	a, _ := p.alloc(40 << 20)
	p.free(a) // cached: the next request only fits once the cache is given back
	b, err := p.alloc(50 << 20)
	if err != nil {
		t.Fatalf("50 MiB with 40 cached of 64: %v (want the cache emptied and a retry)", err)
	}
	if st := p.memoryStats(); st.OOMRetries != 1 || st.Reserved != 50<<20 {
		t.Fatalf("stats after the retry %+v", st)
	}
	_, err = p.alloc(30 << 20)
	var e *dispatch.Error
	if !errors.As(err, &e) || !errors.Is(err, dispatch.ErrOutOfMemory) {
		t.Fatalf("30 MiB with 50 of 64 in use: %v, want ErrOutOfMemory", err)
	}
	for _, want := range []string{"asked for 30.0 MiB", "tensors hold 50.0 MiB", "reserves 50.0 MiB", "14.0 MiB free of 64.0 MiB", "CUDA_ERROR_OUT_OF_MEMORY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("out-of-memory error %q lacks %q", err, want)
		}
	}
	if st := p.memoryStats(); st.OOMRetries != 2 || st.Allocated != 50<<20 {
		t.Fatalf("stats after the failure %+v", st)
	}
	p.free(b)
}
