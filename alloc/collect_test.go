package alloc

import (
	"runtime"
	"testing"
	"time"
)

// handle stands for a tensor: a Go object of a few bytes whose cleanup
// frees its block, as dispatch's do.
type handle struct{ _ [16]byte }

func dropped(p *Pool[uint64], n int64) error {
	b, err := p.Alloc(n)
	if err != nil {
		return err
	}
	h := &handle{}
	runtime.AddCleanup(h, func(b Block[uint64]) { p.Free(b) }, b)
	return nil
}

// TestPressureCollects: blocks of handles nobody frees come back once the
// live bytes pass the threshold, though the Go heap stays small (issue 15,
// defect 12: 300 dropped 16 MiB wgpu tensors held 4.8 GiB).
func TestPressureCollects(t *testing.T) {
	mem := newFake(1 << 40)
	p := New[uint64](mem, Config{Device: "fake:0", Classes: wgpuClasses, Pressure: 64 << 20})
	for range 100 {
		if err := dropped(p, 4<<20); err != nil {
			t.Fatal(err)
		}
	}
	st := p.Stats()
	t.Logf("100 dropped 4 MiB blocks: %d collections, %d MiB reserved, %d hits", st.Collections, st.Reserved>>20, st.CacheHits)
	if st.Collections == 0 || st.Reserved > 128<<20 {
		t.Fatalf("reserved %d MiB after 400 MiB of dropped blocks with a 64 MiB threshold (%d collections)", st.Reserved>>20, st.Collections)
	}
	if st.CacheHits == 0 {
		t.Fatal("no dropped block was reused")
	}
}

// TestPressureFollowsLiveBytes: a program that holds more than the floor
// is not collected at every allocation: the threshold doubles the live
// bytes, within half the room left.
func TestPressureFollowsLiveBytes(t *testing.T) {
	mem := newFake(1 << 30)
	p := New[uint64](mem, Config{Device: "fake:0", Classes: wgpuClasses, Pressure: 16 << 20})
	var live []Block[uint64]
	for range 64 { // 256 MiB held
		b, err := p.Alloc(4 << 20)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, b)
	}
	st := p.Stats()
	// Thresholds 16, then about 32, 64, 128, 256 MiB: a handful, not 60.
	if st.Collections < 2 || st.Collections > 8 {
		t.Fatalf("%d collections while 256 MiB were taken and held, want a few", st.Collections)
	}
	for _, b := range live {
		p.Free(b)
	}
	// Off: never, even past the floor.
	q := New[uint64](newFake(1<<30), Config{Device: "fake:0", Classes: wgpuClasses, Pressure: -1})
	for range 8 {
		q.Alloc(16 << 20)
	}
	if c := q.Stats().Collections; c != 0 {
		t.Fatalf("%d collections with pressure off", c)
	}
	// The default floor is a sixteenth of the device: 64 MiB of 1 GiB.
	r := New[uint64](newFake(1<<30), Config{Device: "fake:0", Classes: wgpuClasses})
	r.Alloc(60 << 20)
	if c := r.Stats().Collections; c != 0 {
		t.Fatalf("collected below the default floor (%d)", c)
	}
	r.Alloc(8 << 20)
	if c := r.Stats().Collections; c != 1 {
		t.Fatalf("%d collections past the default floor, want 1", c)
	}
}

// TestHeapCollectsBehind: a heap pool whose dropped blocks pass the
// threshold starts a collection without waiting for it, and the blocks
// that come back serve the next requests, so the memory it takes stays
// near the threshold instead of growing with the blocks dropped.
func TestHeapCollectsBehind(t *testing.T) {
	mem := newFake(1 << 40)
	p := New[uint64](mem, Config{Device: "cpu", Classes: cpuClasses, Heap: true, Pressure: 8 << 20})
	for range 200 { // 200 MiB dropped
		if err := dropped(p, 1<<20); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Microsecond) // a step's other work, while the collection runs
	}
	st := p.Stats()
	t.Logf("200 dropped 1 MiB blocks: %d collections, %d MiB reserved, %d hits", st.Collections, st.Reserved>>20, st.CacheHits)
	if st.Collections == 0 || st.CacheHits == 0 {
		t.Fatalf("%d collections and %d cache hits after 200 MiB dropped past an 8 MiB threshold", st.Collections, st.CacheHits)
	}
	if st.Reserved > 64<<20 {
		t.Fatalf("reserved %d MiB for 1 MiB live with an 8 MiB threshold", st.Reserved>>20)
	}
}

// TestHeapThresholdFollowsGo: a threshold set while much was live is set
// again from the live bytes once the Go collector has run, before new
// memory is taken: a small working set after a large one is collected at
// the floor, not at twice the large one.
func TestHeapThresholdFollowsGo(t *testing.T) {
	p := New[uint64](newFake(1<<40), Config{Device: "cpu", Classes: cpuClasses, Heap: true, Pressure: 4 << 20})
	big := allocMiBs(t, p, 64) // 64 MiB live
	// A collection at 64 MiB live, after any that the allocations started
	// beside the loop (one that ended early would have set a lower one).
	waitFor(t, func() bool { return !p.collecting.Load() })
	p.mu.Lock()
	p.collected()
	high := p.nextGC
	p.mu.Unlock()
	for _, b := range big {
		p.Free(b)
	}
	runtime.GC()
	if err := dropped(p, 3<<20); err != nil { // a class the cache lacks: new memory
		t.Fatal(err)
	}
	p.mu.Lock()
	low := p.nextGC
	p.mu.Unlock()
	if high < 64<<20 || low != 4<<20 {
		t.Fatalf("threshold %d MiB with 64 MiB live, then %d MiB with 3 MiB live after a Go collection; want at least 64, then the 4 MiB floor", high>>20, low>>20)
	}
}

// waitFor polls cond for up to five seconds: a heap pool's collection
// runs on its own goroutine.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a collection still running after 5 s")
		}
	}
}

// TestHeapRetargetNeverRaises: the Go collector's cleanups run after it,
// so a pool that sees a Go collection may still count what it found
// dropped as live; retarget must not raise the threshold from that (a
// transformer layer's training step, dropping a few MB a step, ratcheted
// it to 700 MB and never collected), while the pool's own collection,
// which waits for the cleanups, still sets it from the live bytes.
func TestHeapRetargetNeverRaises(t *testing.T) {
	p := New[uint64](newFake(1<<40), Config{Device: "cpu", Classes: cpuClasses, Heap: true, Pressure: 4 << 20})
	held := allocMiBs(t, p, 24) // 24 MiB counted live
	waitFor(t, func() bool { return !p.collecting.Load() })
	p.mu.Lock()
	p.nextGC = 4 << 20 // set when little was live
	p.gcSeen = goCollections() - 1
	p.retarget() // a Go collection since, its cleanups perhaps still to run
	seen := p.nextGC
	p.collected()
	own := p.nextGC
	p.mu.Unlock()
	for _, b := range held {
		p.Free(b)
	}
	if seen != 4<<20 {
		t.Fatalf("after a Go collection with 24 MiB counted live the threshold is %d MiB, want the 4 MiB it was", seen>>20)
	}
	if own < 24<<20 {
		t.Fatalf("after the pool's own collection with 24 MiB live the threshold is %d MiB, want at least 24", own>>20)
	}
}

// allocMiBs takes n blocks of 1 MiB from p.
func allocMiBs(t *testing.T, p *Pool[uint64], n int) []Block[uint64] {
	t.Helper()
	var bs []Block[uint64]
	for range n {
		b, err := p.Alloc(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	return bs
}
