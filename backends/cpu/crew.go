package cpu

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// The kernels' helper goroutines: one crew for the process, started at the
// first split, which stays awake (spinning) for a short while after each
// task so that the next op's split finds it running.
//
// A goroutine started with `go` on an idle P needs an OS thread that is
// asleep, and on a virtual machine the vCPU under it is halted: waking it
// took 50-150 µs on the 2-vCPU machine this project runs on (a goroutine
// started beside 500 µs of work on the caller's began, at the median,
// 143 µs later, and at the 90th percentile never ran beside it), so a
// split of less than a few hundred µs of work ran on one core. A crew
// goroutine that is still spinning starts a task in a few µs. OpenMP's
// threads, PyTorch's, spin too (GOMP_SPINCOUNT). The spin is spent only
// after a split, at most crewSpin, and never while OpenBLAS's threads are
// at work (wideBLAS); an idle process's crew sleeps. Against goroutines
// started per part, on that machine (lathe-bench, three alternating
// rounds): (a*b+c).relu on 4M float32s 2.61-2.70 -> 1.59-1.75 ms, the
// ResNet block's step 9.9-10.1 -> 7.7-8.3 ms, the GPT's and the MLP's
// steps and the lone GEMMs as they were.

// crewSpin is how long a crew goroutine stays awake after its last task.
const crewSpin = 200 * time.Microsecond

// waitSpin is how long a fan-out's caller stays awake waiting for its
// parts. Asleep, it would be readied onto the P of the crew goroutine
// whose part ends last, and wait there for a sleeping thread to wake for
// the other P.
const waitSpin = 200 * time.Microsecond

// wideBLAS is the number of GEMMs in flight on OpenBLAS's threads
// (blas_threads.go), during which the crew sleeps rather than spin: the
// cores are OpenBLAS's then, and a spinning crew goroutine, which Linux
// cannot tell from work, would take half of one from its thread, and the
// GEMM wait for the slower half.
var wideBLAS atomic.Int32

// A task is part i of a fan-out.
type task struct {
	fn  func(i int)
	i   int
	fan *fan
}

// A fan is one fan-out's parts in flight and the first panic among them.
type fan struct {
	left   atomic.Int32  // parts not yet ended
	done   chan struct{} // closed as the last part ends
	mu     sync.Mutex
	failed bool
	fault  any
}

var (
	crewOnce  sync.Once
	crewTasks chan task
)

// fanOut runs fn(0) .. fn(n-1), fn(0) on the calling goroutine and the
// others on the crew, and returns when all have. While it waits, the
// caller runs queued parts itself, its own or another fan-out's, so a part
// that fans out (on a crew goroutine, behind which its parts queue) always
// ends. A part that panics on another goroutine panics again on the
// caller's once the others have ended (the kernels' unwound turns a
// refusal into an error there), where a panic on a goroutine of its own
// ended the process.
func fanOut(n int, fn func(i int)) {
	if n < 2 {
		fn(0)
		return
	}
	crewOnce.Do(startCrew)
	takeTurn(&callerTurn) // before its parts start (turns.go)
	f := &fan{done: make(chan struct{})}
	f.left.Store(int32(n - 1))
	for i := 1; i < n; i++ {
		t := task{fn, i, f}
		select {
		case crewTasks <- t:
		default:
			// More parts in flight than the crew's queue holds (many
			// goroutines splitting at once, or a split inside a part):
			// this one gets a goroutine of its own, never a wait.
			go t.run()
		}
	}
	defer func() {
		// Should fn(0) panic, the other parts still end first.
		for {
			t, ok := await(f.done, waitSpin)
			if !ok {
				break
			}
			t.run()
		}
		if f.failed {
			panic(f.fault)
		}
	}()
	fn(0)
}

func (t task) run() {
	defer func() {
		if t.fan.left.Add(-1) == 0 {
			close(t.fan.done)
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(refusal); !ok {
				r = partPanic{r, debug.Stack()}
			}
			t.fan.mu.Lock()
			if !t.fan.failed {
				t.fan.failed, t.fan.fault = true, r
			}
			t.fan.mu.Unlock()
		}
	}()
	t.fn(t.i)
}

// A partPanic is a panic in a part on another goroutine than the caller's
// that is not a refusal (a bug), raised again on the caller's with the
// stack where it happened.
type partPanic struct {
	value any
	stack []byte
}

func (p partPanic) Error() string {
	return fmt.Sprintf("%v\n\n(in a part of a split kernel, on another goroutine:)\n%s", p.value, p.stack)
}

// startCrew starts GOMAXPROCS-1 crew goroutines (one fewer than the Ps,
// since the caller runs a part too), behind a queue of a few tasks each.
func startCrew() {
	n := max(runtime.GOMAXPROCS(0)-1, 1)
	crewTasks = make(chan task, 4*n)
	for range n {
		go crewMember()
	}
}

func crewMember() {
	var last atomic.Int64 // this goroutine's last turn (turns.go)
	for {
		t, _ := await(nil, crewSpin)
		takeTurn(&last)
		t.run()
	}
}

// await returns the next queued task, or false once done is closed (never,
// for a nil done): polled for until spin has passed, then waited for
// asleep. Polling, the goroutine keeps its P and its thread awake. It does
// not yield the P (Gosched) as it polls: a yielded goroutine goes to the
// global queue, where the other P's scheduler may take it, or its own
// thread find nothing and sleep, and the crew then took a median 35-52
// µs to start a part, against 3-5 without (back-to-back splits of a
// float32 sum); another goroutine waits at most the spin for this P, and
// has the others.
func await(done <-chan struct{}, spin time.Duration) (task, bool) {
	var since time.Time
	for i := 0; ; i++ {
		select {
		case <-done:
			return task{}, false
		case t := <-crewTasks:
			return t, true
		default:
		}
		if i%64 != 63 {
			continue
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) > spin || wideBLAS.Load() > 0 {
			select {
			case <-done:
				return task{}, false
			case t := <-crewTasks:
				return t, true
			}
		}
	}
}
