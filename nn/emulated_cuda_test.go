package nn

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
)

// TestEmulatedCUDA runs the package's tests again with cuda:0 as the host
// emulation plays it (internal/emucuda), where there is no GPU. Only
// the tests: the fuzz targets' seeds and the examples run on the cpu
// alone. The tests' device loops leave the other devices to this run
// (testenv.ParentRuns).
func TestEmulatedCUDA(t *testing.T) {
	emucuda.Run(t, "..", "Test.*", emucuda.Kernels)
}
