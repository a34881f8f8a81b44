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
// goroutine that is still spinning starts a task in under 1 µs. OpenMP's
// threads, PyTorch's, spin too (GOMP_SPINCOUNT), but a spin is not free:
// that machine has about one core of throughput between its two vCPUs,
// and OpenBLAS's threads spin as well. Against none, a spin of 50 µs
// took the ResNet block's step (lathe-bench, the medians of six
// alternating rounds) from 9.8 to 8.8 ms, bfloat16 autocast's from 10.5
// to 8.8, and left the MLP's and the GPT's steps as they were; 500 µs
// made the MLP's 5-10% slower. The spin yields the P (Gosched) so that
// other goroutines run, and an idle process's crew sleeps.

// crewSpin is how long a crew goroutine stays awake after its last task.
const crewSpin = 50 * time.Microsecond

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
		for waiting := true; waiting; {
			select {
			case <-f.done:
				waiting = false
			case t := <-crewTasks:
				t.run()
			}
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
	for {
		next().run()
	}
}

// next is the crew's next task: taken at once where one is queued, else
// polled for until crewSpin has passed since the last, else waited for
// asleep.
func next() task {
	var since time.Time
	for i := 0; ; i++ {
		select {
		case t := <-crewTasks:
			return t
		default:
		}
		if i%64 != 63 {
			continue
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) > crewSpin {
			return <-crewTasks
		}
		runtime.Gosched()
	}
}
