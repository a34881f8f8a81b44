package cpu

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFanOutRunsEveryPart: each part runs once, part 0 on the caller's
// goroutine, from many goroutines at once, with more parts than the crew's
// queue holds, and with parts that fan out themselves (a part waiting on
// the crew while the crew's goroutines are all in parts must not hang).
func TestFanOutRunsEveryPart(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for round := range 50 {
					n := 1 + (g+round)%40
					counts := make([]atomic.Int32, n*n)
					fanOut(n, func(i int) {
						fanOut(n, func(j int) { counts[i*n+j].Add(1) })
					})
					for i := range counts {
						if c := counts[i].Load(); c != 1 {
							t.Errorf("%d parts squared: part %d ran %d times", n, i, c)
							return
						}
					}
				}
			})
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("fan-outs did not end within a minute")
	}
}

// TestFanOutPanicReachesCaller: a part that panics on a crew goroutine
// panics again on the caller's, after the other parts have ended, so the
// kernels' unwound sees it (a refusal becomes an error) where it would
// have ended the process; the crew goes on working.
func TestFanOutPanicReachesCaller(t *testing.T) {
	for range 20 {
		var ended atomic.Int32
		err := unwound(func() error {
			fanOut(8, func(i int) {
				defer ended.Add(1)
				if i == 5 {
					panic(refusal{errors.New("part 5 refused")})
				}
				time.Sleep(time.Millisecond)
			})
			return nil
		})
		if err == nil || err.Error() != "part 5 refused" {
			t.Fatalf("err = %v, want part 5's refusal", err)
		}
		if n := ended.Load(); n != 8 {
			t.Fatalf("%d of 8 parts had ended when the caller panicked", n)
		}
	}
	var sum atomic.Int64
	fanOut(4, func(i int) { sum.Add(int64(i)) })
	if sum.Load() != 6 {
		t.Fatalf("after the panics a fan-out summed %d, want 6", sum.Load())
	}
}

// TestFanOutBugKeepsItsStack: a part's panic that is not a refusal comes
// back on the caller's goroutine with its value and the stack where it
// happened.
func TestFanOutBugKeepsItsStack(t *testing.T) {
	defer func() {
		r := recover()
		p, ok := r.(partPanic)
		if !ok {
			t.Fatalf("recovered %T %v, want a partPanic", r, r)
		}
		if p.value != "index out of range, say" || !strings.Contains(p.Error(), "crewBug") {
			t.Fatalf("partPanic %q lacks the value or the part's frame", p.Error())
		}
	}()
	fanOut(2, crewBug)
}

func crewBug(i int) {
	if i == 1 {
		panic("index out of range, say")
	}
	time.Sleep(time.Millisecond)
}
