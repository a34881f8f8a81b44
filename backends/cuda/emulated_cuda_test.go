package cuda

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
)

// TestEmulatedCUDA runs TestRealDevice, gpu-check's cuda-unit step, on
// cuda:0 as the host emulation plays it (internal/emucuda), with lathe's
// kernels and with the stand-ins for cuBLAS and cuDNN.
func TestEmulatedCUDA(t *testing.T) {
	emucuda.RunEach(t, "../..", "TestRealDevice", emucuda.Kernels, emucuda.StandIns)
}
