package lathe

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
)

// TestEmulatedCUDA runs the package's tests again with cuda:0 as the host
// emulation plays it (internal/emucuda): hostile inputs, memory, fused
// kernels against composites on cuda:0, where there is no GPU. Only
// the tests: the fuzz targets' seeds and the examples run on the cpu
// alone. The tests' device loops leave the other devices to this run
// (testenv.ParentRuns).
func TestEmulatedCUDA(t *testing.T) {
	emucuda.Run(t, ".", "Test.*", emucuda.Kernels)
}
