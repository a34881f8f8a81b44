package cpu

import (
	"math"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// TestPoisonFills checks that LATHE_CPU_POISON=1 (poison) makes every
// buffer NaN bits, so that the suite run under it would see a kernel that
// reads its output before writing it.
func TestPoisonFills(t *testing.T) {
	saved := poison
	poison = true
	defer func() { poison = saved }()
	b, ok, err := pooled(dispatch.Float32, 5)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	for i, v := range b.(*buffer[float32]).data {
		if !math.IsNaN(float64(v)) {
			t.Errorf("element %d is %v, want NaN", i, v)
		}
	}
	b.Free()
}
