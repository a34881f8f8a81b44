package alloc

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lathe-ml/lathe/dispatch"
)

func TestClasses(t *testing.T) {
	for _, c := range []struct {
		name    string
		classes Classes
		n, want int64
	}{
		{"cuda/1", cudaClasses, 1, 512},
		{"cuda/512", cudaClasses, 512, 512},
		{"cuda/513", cudaClasses, 513, 1024},
		{"cuda/4000", cudaClasses, 4000, 4096},
		{"cuda/1MiB", cudaClasses, 1 << 20, 1 << 20},
		{"cuda/1MiB+1", cudaClasses, 1<<20 + 1, 2 << 20},
		{"cuda/2MiB", cudaClasses, 2 << 20, 2 << 20},
		{"cuda/5MiB+3", cudaClasses, 5<<20 + 3, 6 << 20},
		{"cuda/100MiB", cudaClasses, 100 << 20, 100 << 20},
		{"wgpu/1", wgpuClasses, 1, 256},
		{"wgpu/257", wgpuClasses, 257, 512},
		{"wgpu/64KiB", wgpuClasses, 64 << 10, 64 << 10},
		{"wgpu/64KiB+1", wgpuClasses, 64<<10 + 1, 72 << 10},
		{"wgpu/100000", wgpuClasses, 100000, 106496},
		{"wgpu/1MiB", wgpuClasses, 1 << 20, 1 << 20},
		{"wgpu/1MiB+1", wgpuClasses, 1<<20 + 1, 1<<20 + 128<<10},
		{"cpu/0", cpuClasses, 0, 64},
		{"cpu/1000", cpuClasses, 1000, 1024},
		{"cpu/4000", cpuClasses, 4000, 4032},
		{"cpu/16MiB", cpuClasses, 16 << 20, 16 << 20},
		{"cpu/100MiB+1", cpuClasses, 100<<20 + 1, 100<<20 + 4<<10},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.classes.Class(c.n)
			if got != c.want {
				t.Errorf("Class(%d) = %d, want %d", c.n, got, c.want)
			}
			if c.n > c.classes.Small && got-c.n > c.n/8 && got-c.n >= c.classes.Large {
				t.Errorf("Class(%d) = %d wastes more than an eighth", c.n, got)
			}
		})
	}
	// Every class is its own class, and classes only grow.
	for _, cl := range []Classes{cudaClasses, wgpuClasses, cpuClasses} {
		prev := int64(0)
		for n := int64(1); n < 1<<30; n = n*17/16 + 1 {
			c := cl.Class(n)
			if c < n || c < prev || cl.Class(c) != c || c%cl.Align != 0 {
				t.Fatalf("%+v: Class(%d) = %d (previous %d)", cl, n, c, prev)
			}
			prev = c
		}
	}
}

func TestLargerClassesServe(t *testing.T) {
	// A large class's next ones up, while they are at most an eighth larger.
	for _, c := range []struct {
		classes Classes
		class   int64
		want    []int64
	}{
		{wgpuClasses, 512, nil},
		{wgpuClasses, 72 << 10, []int64{80 << 10}},
		{wgpuClasses, 128 << 10, []int64{144 << 10}},
		{cudaClasses, 10 << 20, nil}, // 12 MiB is a fifth larger
		{cudaClasses, 20 << 20, []int64{22 << 20}},
		{cudaClasses, 40 << 20, []int64{42 << 20, 44 << 20}},
		{cpuClasses, 1 << 20, nil}, // small
	} {
		var got []int64
		for k := c.classes.larger(c.class, c.class); k != 0; k = c.classes.larger(k, c.class) {
			got = append(got, k)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: classes serving %d: %v, want %v", c.classes, c.class, got, c.want)
		}
	}
	// In 4 KiB steps, the 32 classes up to an eighth above 1 MiB + 4 KiB.
	class, n := int64(1<<20+4<<10), 0
	for k := cpuClasses.larger(class, class); k != 0; k = cpuClasses.larger(k, class) {
		if n++; k-class > class/8 {
			t.Fatalf("class %d serves %d", k, class)
		}
	}
	if n != 32 {
		t.Errorf("%d classes serve %d in 4 KiB steps, want 32", n, class)
	}
}

func TestSlabs(t *testing.T) {
	mem := newFake(1 << 30)
	p := cudaLike(mem)
	a, err := p.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Alloc(500)
	if mem.mallocs != 1 || b.Handle != a.Handle || b.Offset != a.Offset+512 {
		t.Fatalf("two 512-byte blocks: %d device allocations, places %#x+%d %#x+%d; want one slab, adjacent slots",
			mem.mallocs, a.Handle, a.Offset, b.Handle, b.Offset)
	}
	st := p.Stats()
	if st.Allocated != 1024 || st.Reserved != 2<<20 || st.Cached != 2<<20-1024 || st.Segments != 1 || st.Allocs != 2 || st.CacheHits != 1 {
		t.Fatalf("stats %+v", st)
	}
	// A freed slot is the next one handed out (most recently freed first).
	p.Free(a)
	c, _ := p.Alloc(512)
	if c != a {
		t.Fatalf("after freeing a, got the slot at %d, want a's %d", c.Offset, a.Offset)
	}
	// A full slab makes a second one: a 2 MiB slab has 4096 slots of 512 bytes.
	for range 4096 - 2 {
		if _, err := p.Alloc(512); err != nil {
			t.Fatal(err)
		}
	}
	if mem.mallocs != 1 {
		t.Fatalf("4096 slots took %d device allocations, want 1", mem.mallocs)
	}
	if _, err := p.Alloc(1); err != nil || mem.mallocs != 2 {
		t.Fatalf("slot 4097: err %v, %d device allocations, want 2", err, mem.mallocs)
	}
	// Another class gets its own slab.
	d, _ := p.Alloc(1 << 20)
	if mem.mallocs != 3 || p.Stats().PeakAllocated != (2<<20+512)+1<<20 {
		t.Fatalf("1 MiB block: %d device allocations, stats %+v", mem.mallocs, p.Stats())
	}
	p.Free(d)
	if got := p.Stats().Allocated; got != 2<<20+512 {
		t.Fatalf("allocated %d after freeing the 1 MiB block, want %d", got, 2<<20+512)
	}
	p.Free(Block[uint64]{}) // a zero block (an empty tensor's) is ignored
}

func TestLargeBestFit(t *testing.T) {
	mem := newFake(1 << 30)
	p := cudaLike(mem)
	a, _ := p.Alloc(10 << 20)
	p.Free(a)
	// 9.5 MiB rounds to 10 MiB: the cached block serves it.
	b, _ := p.Alloc(19 << 19)
	if b != (Block[uint64]{Handle: a.Handle, Size: a.Size}) || mem.mallocs != 1 {
		t.Fatalf("9.5 MiB after freeing 10 MiB: %d device allocations, block %+v", mem.mallocs, b)
	}
	p.Free(b)
	// 6 MiB is more than an eighth below 10 MiB: a new block.
	c, _ := p.Alloc(6 << 20)
	if c.Handle == a.Handle || mem.mallocs != 2 {
		t.Fatalf("6 MiB took the 10 MiB block (%v) or did not allocate (%d)", c.Handle == a.Handle, mem.mallocs)
	}
	// Of 10 and 12 MiB cached, a 9 MiB request (class 10) takes 10.
	d, _ := p.Alloc(12 << 20)
	p.Free(d)
	p.Free(c)
	e, _ := p.Alloc(9 << 20)
	if e.Handle != a.Handle {
		t.Fatalf("best fit took a %d-byte block, want the 10 MiB one", e.Size)
	}
	st := p.Stats()
	if st.Allocated != 10<<20 || st.Reserved != (10+6+12)<<20 || st.Segments != 3 || st.PeakAllocated != (6+12)<<20 {
		t.Fatalf("stats %+v", st)
	}
	// Past 16 MiB the next classes up are within an eighth: of 44 and
	// 42 MiB cached, a 40 MiB request takes 42.
	f, _ := p.Alloc(44 << 20)
	g, _ := p.Alloc(42 << 20)
	p.Free(f)
	p.Free(g)
	if h, _ := p.Alloc(39<<20 + 1); h.Handle != g.Handle || h.Size != 42<<20 {
		t.Fatalf("a 40 MiB-class request did not take the cached 42 MiB block: %+v", h)
	}
	if h, _ := p.Alloc(40 << 20); h.Handle != f.Handle {
		t.Fatalf("a second 40 MiB request did not take the cached 44 MiB block: %+v", h)
	}
}

func TestEmptyCache(t *testing.T) {
	mem := newFake(1 << 30)
	p := cudaLike(mem)
	kept, _ := p.Alloc(512)    // slab 1 stays: one slot in use
	idle, _ := p.Alloc(4096)   // slab 2 goes: freed below
	big, _ := p.Alloc(8 << 20) // freed: goes
	keepBig, _ := p.Alloc(4 << 20)
	p.Free(idle)
	p.Free(big)
	if err := p.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	if mem.drains != 1 {
		t.Fatalf("EmptyCache gave memory back after %d drains, want 1", mem.drains)
	}
	st := p.Stats()
	if mem.frees != 2 || st.Segments != 2 || st.Reserved != 2<<20+4<<20 || st.Allocated != 512+4<<20 || st.Cached != 2<<20-512 {
		t.Fatalf("after EmptyCache: %d device frees, stats %+v", mem.frees, st)
	}
	if _, ok := mem.live[kept.Handle]; !ok {
		t.Fatal("EmptyCache freed a slab with a slot in use")
	}
	// The freed slab's slots are gone from the cache; the kept slab's
	// free slots still serve.
	if b, _ := p.Alloc(4096); mem.mallocs != 5 || b.Handle == idle.Handle {
		t.Fatalf("4 KiB after EmptyCache: %d device allocations, reused a freed slab: %v", mem.mallocs, b.Handle == idle.Handle)
	}
	if b, _ := p.Alloc(512); b.Handle != kept.Handle {
		t.Fatal("512 B after EmptyCache did not come from the kept slab")
	}
	// Nothing cached: no drain.
	p.Free(keepBig)
	p.EmptyCache()
	before := mem.drains
	if err := p.EmptyCache(); err != nil || mem.drains != before {
		t.Fatalf("EmptyCache with nothing cached drained (%d -> %d) or failed: %v", before, mem.drains, err)
	}
	// A failed drain (a kernel's fault) is returned, nothing is freed, and
	// the blocks stay cached.
	big2, _ := p.Alloc(8 << 20)
	p.Free(big2)
	mem.drainErr = errors.New("sticky")
	frees := mem.frees
	if err := p.EmptyCache(); err == nil || mem.frees != frees {
		t.Fatalf("EmptyCache after a failed drain: err %v, %d frees", err, mem.frees-frees)
	}
	if st := p.Stats(); st.Cached < 8<<20 {
		t.Fatalf("a failed drain lost the cached block: %+v", st)
	}
	mem.drainErr = nil
	if b, _ := p.Alloc(8 << 20); b.Handle != big2.Handle {
		t.Fatal("the block kept by a failed drain does not serve")
	}
}

func TestOutOfMemory(t *testing.T) {
	mem := newFake(64 << 20)
	p := cudaLike(mem)
	a, _ := p.Alloc(40 << 20)
	p.Free(a) // cached: the next request only fits once the cache is given back
	b, err := p.Alloc(50 << 20)
	if err != nil {
		t.Fatalf("50 MiB with 40 cached of 64: %v (want the cache emptied and a retry)", err)
	}
	if st := p.Stats(); st.OOMRetries != 1 || st.Reserved != 50<<20 {
		t.Fatalf("stats after the retry %+v", st)
	}
	_, err = p.Alloc(30 << 20)
	var e *dispatch.Error
	if !errors.As(err, &e) || !errors.Is(err, dispatch.ErrOutOfMemory) {
		t.Fatalf("30 MiB with 50 of 64 in use: %v, want ErrOutOfMemory", err)
	}
	for _, want := range []string{"fake:0: out of memory: asked for 30.0 MiB", "tensors hold 50.0 MiB", "reserves 50.0 MiB", "14.0 MiB free of 64.0 MiB", "FAKE_OUT_OF_MEMORY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("out-of-memory error %q lacks %q", err, want)
		}
	}
	if st := p.Stats(); st.OOMRetries != 2 || st.Allocated != 50<<20 || st.Collections != 1 {
		t.Fatalf("stats after the failure %+v (want one collection, at the second try)", st)
	}
	p.Free(b)
}

// TestRetryOrder: a full device makes the pool give its cache back (after
// the queued work) and try again, then collect garbage, give back what the
// cleanups returned, and try a last time.
func TestRetryOrder(t *testing.T) {
	mem := newFake(8 << 20)
	p := cudaLike(mem)
	a, _ := p.Alloc(4 << 20)
	b, _ := p.Alloc(4 << 20)
	p.Free(a)
	mem.calls = nil
	_, err := p.Alloc(6 << 20)
	got := strings.Join(mem.log(), " ")
	if want := "alloc drain free alloc alloc"; err == nil || got != want {
		t.Fatalf("6 MiB with 4 of 8 in use: %v; calls %q, want %q (the second empty cache has nothing to drain)", err, got, want)
	}
	p.Free(b)
}

func TestLargerThanTheDevice(t *testing.T) {
	for _, heap := range []bool{false, true} {
		mem := newFake(1 << 30)
		p := New[uint64](mem, Config{Device: "fake:0", Classes: cpuClasses, Heap: heap})
		_, err := p.Alloc(4 << 40)
		if !errors.Is(err, dispatch.ErrOutOfMemory) || mem.mallocs != 0 {
			t.Fatalf("heap %v: 4 TiB of a 1 GiB device: %v after %d device calls, want ErrOutOfMemory and none", heap, err, mem.mallocs)
		}
		for _, want := range []string{"asked for 4.00 TiB", "1.00 GiB free of 1.00 GiB"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
	}
	// A device that cannot tell its total lets the request through to
	// the device, which says no.
	mem := newFake(1 << 30)
	mem.noTotal = true
	p := New[uint64](mem, Config{Device: "fake:0", Classes: cpuClasses, Pressure: -1})
	if _, err := p.Alloc(4 << 40); !errors.Is(err, dispatch.ErrOutOfMemory) || !strings.Contains(err.Error(), "FAKE_OUT_OF_MEMORY") {
		t.Fatalf("4 TiB of a device of unknown size: %v", err)
	}
}

func TestNegativeRequest(t *testing.T) {
	p := cudaLike(newFake(1 << 20))
	if _, err := p.Alloc(-1); !errors.Is(err, dispatch.ErrValue) {
		t.Fatalf("Alloc(-1) = %v, want ErrValue", err)
	}
}

// TestBestFitAmongManyClasses: where an eighth above a class spans more
// fine steps than the cache has classes, the pool looks through the
// cache's classes: it finds the smallest that serves, and a huge request
// costs no walk over millions of steps.
func TestBestFitAmongManyClasses(t *testing.T) {
	mem := newFake(1 << 50)
	p := New[uint64](mem, Config{Device: "cpu", Classes: cpuClasses, Heap: true})
	var blocks []Block[uint64]
	for _, n := range []int64{1 << 30, 1<<30 + 64<<20, 1<<30 + 100<<20, 1<<30 + 200<<20, 1 << 20} {
		b, _ := p.Alloc(n)
		blocks = append(blocks, b)
	}
	for _, b := range blocks {
		p.Free(b)
	}
	if b, _ := p.Alloc(1<<30 + 32<<20); b.Size != 1<<30+64<<20 {
		t.Fatalf("1 GiB + 32 MiB took a block of %d, want the 1 GiB + 64 MiB one", b.Size)
	}
	mem.calls = nil
	start := time.Now()
	if b, _ := p.Alloc(1 << 40); !slices.Equal(mem.log(), []string{"alloc"}) || b.Size != 1<<40 {
		t.Fatalf("1 TiB: calls %v, block %d", mem.log(), b.Size)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a 1 TiB miss took %v", d)
	}
}

// TestNoCache: with the caching off every block is a device allocation of
// the bytes asked for, and Free gives it back at once, after the queued
// work that may use it; a failed drain keeps it.
func TestNoCache(t *testing.T) {
	mem := newFake(64 << 20)
	p := New[uint64](mem, Config{Device: "fake:0", Classes: cudaClasses, Slab: 2 << 20, Pressure: -1, NoCache: true})
	a, err := p.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Alloc(3 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if mem.live[a.Handle] != 100 || mem.live[b.Handle] != 3<<20 || a.seg != nil {
		t.Fatalf("allocations %v, want 100 bytes and 3 MiB, no slab", mem.live)
	}
	mem.use(a.Handle)
	p.Free(a)
	if got := mem.log(); !slices.Equal(got, []string{"alloc", "alloc", "drain", "free"}) {
		t.Errorf("calls %v, want the drain before the free", got)
	}
	if len(mem.early) != 0 {
		t.Errorf("freed while queued work used it: %v", mem.early)
	}
	c, _ := p.Alloc(100)
	if c.Handle == a.Handle || mem.mallocs != 3 {
		t.Errorf("a freed block was reused (%d mallocs)", mem.mallocs)
	}
	p.Free(c)
	mem.drainErr = errors.New("a kernel's fault")
	p.Free(b)
	if _, ok := mem.live[b.Handle]; !ok {
		t.Errorf("a block was freed after a failed drain")
	}
	st := p.Stats()
	if st.Cached != 0 || st.Allocated != 0 || st.Reserved != 0 || st.Segments != 0 {
		t.Errorf("stats %+v, want nothing cached, held or reserved", st)
	}
}
