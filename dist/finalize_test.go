//go:build cgo

package dist

import (
	"testing"
	"time"
)

// TestCallWithin: the bound that keeps Close from waiting for ever on an
// MPI_Finalize whose peer is gone. A call that returns in time gives its
// result; one that does not is left behind after the wait, and a zero
// wait waits as long as the call takes.
func TestCallWithin(t *testing.T) {
	if rc, done := callWithin(func() int { return 7 }, time.Second); !done || rc != 7 {
		t.Errorf("a quick call: %d, %v; want 7, true", rc, done)
	}
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	if _, done := callWithin(func() int { <-release; return 0 }, 50*time.Millisecond); done {
		t.Error("a call that never returns was reported done")
	}
	if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %v, want the 50ms bound", took)
	}
	if rc, done := callWithin(func() int { time.Sleep(100 * time.Millisecond); return 3 }, 0); !done || rc != 3 {
		t.Errorf("no bound: %d, %v; want 3, true", rc, done)
	}
}
