package conformance

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
)

// TestEmulatedCUDA runs the conformance and gradient suites on cuda:0 as
// the host emulation plays it (internal/emucuda), against PyTorch's values
// and gradients where there is no GPU: once with lathe's own kernels for
// products and convolutions, once with cuBLAS's and cuDNN's stand-ins,
// which check lathe's calls of the libraries.
func TestEmulatedCUDA(t *testing.T) {
	t.Run("kernels", func(t *testing.T) {
		emucuda.Run(t, "../..", "(TestConformance|TestGrad)$/^cuda:0", emucuda.Kernels)
	})
	t.Run("libraries", func(t *testing.T) {
		emucuda.Run(t, "../..", "(TestConformance|TestGrad)$/^cuda:0", emucuda.StandIns)
	})
}
