package cpu

import (
	"strings"
	"sync/atomic"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// TestTurnDue: a turn is due once turnEvery has passed since the last
// one, and not again until turnEvery has passed once more.
func TestTurnDue(t *testing.T) {
	var last atomic.Int64
	now := int64(3 * turnEvery)
	last.Store(now)
	turns := 0
	for i := range 1000 {
		if turnDue(&last, now+int64(i)) {
			turns++
		}
	}
	if turns != 0 {
		t.Fatalf("%d turns within turnEvery of the last", turns)
	}
	now += int64(turnEvery)
	for i := range 1000 {
		if turnDue(&last, now+int64(i)) {
			turns++
		}
	}
	if turns != 1 || last.Load() != now {
		t.Fatalf("%d turns once turnEvery had passed (the last at %d, want %d), want 1", turns, last.Load(), now)
	}
	if !turnDue(&last, now+int64(turnEvery)) {
		t.Fatal("no turn after another turnEvery")
	}
}

// TestKernelsTakeTurns: a lone product on OpenBLAS's threads and a split
// over the crew take the caller's turn when one is due (turns.go). What a
// turn saves is measured in turns.go's comment; counting the threads that
// block is too much at the mercy of a loaded machine for a test.
func TestKernelsTakeTurns(t *testing.T) {
	n := 256
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for name, kernel := range map[string]func(){
		"a lone product": func() { sgemmWide(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n) },
		"a split":        func() { fanOut(2, func(int) {}) },
	} {
		if name == "a lone product" && strings.HasPrefix(blasName, "gonum") {
			t.Logf("%s: skipped: no OpenBLAS (%s)", name, blasName)
			continue
		}
		long := -int64(turnEvery) // the last turn long ago: one is due
		callerTurn.Store(long)
		kernel()
		if callerTurn.Load() == long {
			t.Errorf("%s took no turn when one was due", name)
		}
	}
}
