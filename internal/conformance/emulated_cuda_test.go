package conformance

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
)

// TestEmulatedCUDA runs the conformance and gradient suites on cuda:0 as
// the host emulation plays it (internal/emucuda), against PyTorch's values
// and gradients where there is no GPU: with lathe's own kernels for
// products and convolutions; with cuBLAS's and cuDNN's stand-ins, which
// check lathe's calls of the libraries; and with the kernels under
// AddressSanitizer, each tensor its own allocation, which stops at a
// read or write past a tensor's memory.
func TestEmulatedCUDA(t *testing.T) {
	emucuda.RunEach(t, "../..", "(TestConformance|TestGrad)$/^cuda:0", emucuda.Kernels, emucuda.StandIns, emucuda.Memcheck)
}
