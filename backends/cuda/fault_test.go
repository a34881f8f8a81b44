//go:build cgo

package cuda_test

import (
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/backends/cuda"
	"github.com/lathe-ml/lathe/internal/faulttest"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestAllocationFailures fails each raw allocation of a training step on
// cuda:0 in turn: the step says ErrOutOfMemory, nothing stays allocated,
// and the next step works (faulttest). It runs where cuda:0 opens: a GPU
// (gpu-check), or the host emulation (TestEmulatedCUDA).
func TestAllocationFailures(t *testing.T) {
	c, restore, err := cuda.FaultyAllocs(0)
	if err != nil {
		testenv.SkipDevice(t, "cuda:0", "cuda:0 does not open: %v", err)
	}
	defer restore()
	n := faulttest.AllocFailures(t, lathe.CUDA(0), c)
	t.Logf("failed each of a step's %d raw allocations in turn", n)
}
