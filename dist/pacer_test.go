//go:build cgo

package dist

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// While its context says the caller is busy (DDP's all-reduces during the
// backward pass), the MPI wait's pacer sleeps between tests, and once the
// flag is cleared its first second of polling at full speed starts then.
func TestPacerBusy(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	p := newPacer(whileBusy(context.Background(), &busy))
	start := time.Now()
	p.pause()
	if d := time.Since(start); d < busyPause {
		t.Errorf("a busy pause took %v, want a sleep of at least %v", d, busyPause)
	}
	busy.Store(false)
	p.start = time.Now().Add(-time.Hour) // as if it had waited long: sleeps
	p.pause()
	if p.sleep == 0 {
		t.Fatal("an hour into a wait, the pacer did not back off")
	}
	busy.Store(true)
	p.pause()
	if p.sleep != 0 || time.Since(p.start) > time.Second {
		t.Errorf("after a busy pause: sleep %v, started %v ago; want the full-speed second to start again", p.sleep, time.Since(p.start))
	}
	if q := newPacer(context.Background()); q.busy != nil {
		t.Error("a context without the mark gave the pacer a busy flag")
	}
}
