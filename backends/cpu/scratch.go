package cpu

import "sync"

// A kernel's workers take their scratch (attention's score blocks) from
// here and give it back when the call ends, where each made its own per
// call: examples/gpt's training step made 550 KB of them, which were
// garbage at once, and on a VM each new page of Go heap costs a fault of
// about 10 µs until the collector recycles the heap.
var scratchPools = struct {
	f32, f64 sync.Pool // of *[]float32, *[]float64
}{}

// scratchPool is T's pool.
func scratchPool[T float]() *sync.Pool {
	var z T
	if _, ok := any(z).(float32); ok {
		return &scratchPools.f32
	}
	return &scratchPools.f64
}

// getScratch returns n elements of T's scratch, contents unspecified (NaN
// under LATHE_CPU_POISON=1, as a new buffer's are).
func getScratch[T float](n int) *[]T {
	p, ok := scratchPool[T]().Get().(*[]T)
	if ok && cap(*p) >= n {
		*p = (*p)[:n]
	} else {
		s := make([]T, n)
		p = &s
	}
	if poison {
		fillPoison(*p)
	}
	return p
}

// putScratch gives scratch back; the caller no longer uses it.
func putScratch[T float](p *[]T) { scratchPool[T]().Put(p) }
