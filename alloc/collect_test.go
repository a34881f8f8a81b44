package alloc

import (
	"runtime"
	"testing"
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

// TestHeapNeverCollects: a heap pool's figures bound nothing (the garbage
// collector takes what nobody frees), so it never collects.
func TestHeapNeverCollects(t *testing.T) {
	p := New[uint64](newFake(1<<40), Config{Device: "cpu", Classes: cpuClasses, Heap: true, Pressure: 1 << 20})
	for range 8 {
		p.Alloc(1 << 20)
	}
	if c := p.Stats().Collections; c != 0 {
		t.Fatalf("a heap pool collected %d times", c)
	}
}
