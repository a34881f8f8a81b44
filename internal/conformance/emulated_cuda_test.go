package conformance

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
)

// TestEmulatedCUDA runs the conformance and gradient suites on cuda:0 as
// the host emulation plays it (internal/emucuda): lathe's kernels through
// the cuda backend against PyTorch's values and gradients, where there is
// no GPU.
func TestEmulatedCUDA(t *testing.T) {
	emucuda.Run(t, "../..", "(TestConformance|TestGrad)$/^cuda:0")
}
