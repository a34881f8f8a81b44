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

// TestInPieces: the pieces cover a range once, in order, each at most
// pieceCost (within a task) and all of one length but the last, shorter
// by less than the number of pieces (so never short enough for a row
// kernel's Go loop where the range is long); a short range is one piece.
func TestInPieces(t *testing.T) {
	for _, c := range []struct{ lo, hi, cost int }{
		{0, 1, 1}, {5, 6, 4}, {0, pieceCost, 1}, {0, pieceCost + 1, 1}, {3, 3*pieceCost + 7, 1},
		{0, 1 << 21, 4}, {100, 100 + 1<<20 + 13, 1}, {0, 4097, 64}, {7, 7 + streamMin - 1, 1},
	} {
		var got [][2]int
		inPieces(c.lo, c.hi, c.cost, func(lo, hi int) { got = append(got, [2]int{lo, hi}) })
		at := c.lo
		for i, p := range got {
			if p[0] != at || p[1] <= p[0] {
				t.Fatalf("%v: piece %d is %v after %d", c, i, p, at)
			}
			at = p[1]
			n, first := p[1]-p[0], got[0][1]-got[0][0]
			if n > 1 && n*c.cost > pieceCost+c.cost {
				t.Errorf("%v: piece %d has %d tasks of cost %d, past pieceCost", c, i, n, c.cost)
			}
			if i < len(got)-1 && n != first || first-n >= len(got) {
				t.Errorf("%v: piece %d has %d tasks, the first %d, of %d pieces", c, i, n, first, len(got))
			}
		}
		if at != c.hi {
			t.Errorf("%v: the pieces end at %d", c, at)
		}
	}
}

// TestInPiecesStreams: a range of streamMin tasks or more is one call, so
// that the arithmetic kernels stream its stores.
func TestInPiecesStreams(t *testing.T) {
	calls := 0
	inPieces(3, 3+streamMin, 1, func(lo, hi int) {
		calls++
		if lo != 3 || hi != 3+streamMin {
			t.Errorf("piece [%d, %d), want the whole range", lo, hi)
		}
	})
	if calls != 1 {
		t.Errorf("%d calls, want 1", calls)
	}
}
