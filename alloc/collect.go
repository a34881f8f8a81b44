package alloc

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// A tensor that nobody releases hands its block back from a cleanup
// (runtime.AddCleanup) when the garbage collector finds it unreachable. But
// the collector runs when the Go heap grows, and a tensor handle is a few
// hundred bytes of heap however large its device memory: 300 dropped
// 16 MiB tensors hold 4.8 GiB of a device and barely move the heap. So the
// pool runs the collector itself under pressure (Config.Pressure), and
// waits for the cleanups it queued before it looks in the cache again.

var collector struct {
	sync.Mutex
	runs atomic.Uint64
}

// HeapPressure is a Heap pool's default collection floor (Config.Pressure):
// below it the Go collector's own pace is soon enough, and a collection
// that size apart costs a small fraction of what the memory between them
// would cost in first touches.
const HeapPressure = 32 << 20

// cleanupWait bounds the wait for queued cleanups: lathe's cleanups only
// take a pool's lock, but a program's own may be slow.
const cleanupWait = 250 * time.Millisecond

// collectGarbage runs the collector and waits for the cleanups it queued.
// Pools that find themselves under pressure at once share one collection:
// one that waited while another collected returns when that one is done.
func collectGarbage() {
	seen := collector.runs.Load()
	collector.Lock()
	defer collector.Unlock()
	if collector.runs.Load() != seen {
		return
	}
	runtime.GC() // returns once the heap is swept, so every cleanup is queued
	waitForCleanups(cleanupWait)
	collector.runs.Add(1)
}

// goCollections is the number of Go collections that have ended.
func goCollections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// waitForCleanups waits until the runtime has run as many cleanups as it
// queued, or limit has passed.
func waitForCleanups(limit time.Duration) {
	s := []metrics.Sample{{Name: "/gc/cleanups/queued:cleanups"}, {Name: "/gc/cleanups/executed:cleanups"}}
	deadline := time.Now().Add(limit)
	for {
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
			time.Sleep(time.Millisecond) // a runtime without the figures: give the cleanups a moment
			return
		}
		if s[1].Value.Uint64() >= s[0].Value.Uint64() || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// Collect runs the garbage collector and waits (a moment at most) for the
// cleanups of unreachable tensors, which give their blocks back to their
// pools: for a backend that is about to hand its device back (a process's
// end), so that only the memory of live tensors remains.
func Collect() { collectGarbage() }
