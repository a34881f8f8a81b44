package cpu

import (
	"os"
	"runtime"
	"strconv"
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

// voluntarySwitches is how many times the threads of this process have
// blocked (voluntary_ctxt_switches, summed over /proc/self/task).
func voluntarySwitches(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	n := 0
	for _, task := range tasks {
		status, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread has ended
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				k, _ := strconv.Atoi(strings.TrimSpace(v))
				n += k
			}
		}
	}
	return n
}

// TestKernelsKeepTheirSlice: a goroutine that runs lone products on
// OpenBLAS's threads back to back takes its turns, so that sysmon does not
// take its P at every call, each time waking a thread that only goes back
// to sleep (turns.go): about one blocked thread a call without the turns,
// well under one with them. (Where every P is in a cgo call at once, as in
// a split over the crew, sysmon takes one anyway; turns do not change that.)
func TestKernelsKeepTheirSlice(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one P: nothing to hand the P to")
	}
	if strings.HasPrefix(blasName, "gonum") {
		t.Skip("no OpenBLAS, no cgo call to keep a slice through:", blasName)
	}
	n := 256
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%7), float32(i%5)
	}
	product := func() { sgemmWide(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n) }
	for range 100 { // past the first slice
		product()
	}
	const calls = 600
	before := voluntarySwitches(t)
	for range calls {
		product()
	}
	per := float64(voluntarySwitches(t)-before) / calls
	if per > 0.5 {
		t.Errorf("%.2f threads blocked a call", per)
	}
	t.Logf("%.2f threads blocked a call", per)
}
