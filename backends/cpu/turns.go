package cpu

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Go's scheduler gives a goroutine a 10 ms slice of its P, counted from
// the last time the scheduler chose it. When the slice has run out while
// the goroutine is inside a cgo call, as a kernel's goroutine mostly is,
// sysmon takes the P from it and hands the P to another thread, which
// wakes, finds nothing to run and sleeps again; and since a goroutine
// that only ever calls kernels is never chosen again, this happens on
// every call from then on, its thread waking two or three others each
// time. On 2 vCPUs those threads take the cores from the kernel's: a
// 256³ float32 GEMM on OpenBLAS's two threads took 257-327 µs a call
// from Go (about 5 context switches a call) against 231-242 µs for the
// same calls made in a loop in C. A kernel's goroutine therefore yields
// (runtime.Gosched) before a long call once turnEvery has passed since
// its last turn, which starts a new slice: the same calls then took
// 273-279 µs against 280-311 without, in the same minutes, with 400-760
// context switches in 2000 calls instead of 10,300-11,100. In lathe-bench
// (three alternating rounds, without and with the turns): bmm f32 32x128³
// 1.10-1.53 -> 0.84-0.87 ms, softmax 4096x1024 1.95-2.10 -> 1.42-1.90 ms,
// matmul 128x784·784x256 396-590 -> 382-418 µs, sum f32 16M 1.76-2.14 ->
// 1.17-1.87 ms. Where every P is in a cgo call at once (the parts of a
// split), sysmon takes one after 20 µs anyway, since no P is idle: turns
// do not change that.

// turnEvery is how often a kernel's goroutine yields: well inside the
// scheduler's 10 ms slice.
const turnEvery = 5 * time.Millisecond

// epoch is the origin of turn times, which are monotonic nanoseconds.
var epoch = time.Now()

// callerTurn is the time of the last turn that takeTurn took for callers
// (the goroutines that run ops): one clock for all of them, which is
// exact for a program with one such goroutine and, with several, yields
// no more than once per turnEvery in all.
var callerTurn atomic.Int64

// takeTurn yields if turnEvery has passed since the turn last recorded
// in last.
func takeTurn(last *atomic.Int64) {
	if turnDue(last, int64(time.Since(epoch))) {
		runtime.Gosched()
	}
}

// turnDue says whether a turn is due at now, and if so records it in last.
func turnDue(last *atomic.Int64, now int64) bool {
	prev := last.Load()
	return now-prev >= int64(turnEvery) && last.CompareAndSwap(prev, now)
}
