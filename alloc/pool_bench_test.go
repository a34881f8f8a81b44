package alloc

import "testing"

// heapMemory is new Go memory, as the cpu's.
type heapMemory struct{}

func (heapMemory) Alloc(size int64) (*[]byte, error) { b := make([]byte, size); return &b, nil }
func (heapMemory) Free(*[]byte) error                { return nil }
func (heapMemory) Drain() error                      { return nil }
func (heapMemory) Info() (int64, int64, error)       { return 1 << 40, 1 << 40, nil }

// BenchmarkHeapReuse is the pool's part of a small op whose output is
// released: a block from the cache and back.
func BenchmarkHeapReuse(b *testing.B) {
	p := New[*[]byte](heapMemory{}, Config{Device: "cpu", Classes: cpuClasses, Cap: NewCap(1 << 30), Heap: true})
	for b.Loop() {
		blk, _ := p.Alloc(4)
		p.Free(blk)
	}
}

// BenchmarkHeapNew is the pool's part of a small op whose output nobody
// releases: new memory every time.
func BenchmarkHeapNew(b *testing.B) {
	p := New[*[]byte](heapMemory{}, Config{Device: "cpu", Classes: cpuClasses, Cap: NewCap(1 << 30), Heap: true})
	p.Alloc(4) // learn the device's total
	b.ReportAllocs()
	for b.Loop() {
		p.Alloc(4)
	}
}
