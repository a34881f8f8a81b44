package cuda

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
)

// TestEmulatedCUDA runs TestRealDevice, gpu-check's cuda-unit step, on
// cuda:0 as the host emulation plays it (internal/emucuda), with lathe's
// kernels and with the stand-ins for cuBLAS and cuDNN; and
// TestAllocationFailures (the same step's faults) and TestUseAfterClose
// with lathe's kernels.
func TestEmulatedCUDA(t *testing.T) {
	emucuda.RunEach(t, "../..", "TestRealDevice", emucuda.Kernels, emucuda.StandIns)
	t.Run("allocation failures", func(t *testing.T) { emucuda.Run(t, "../..", "TestAllocationFailures", emucuda.Kernels) })
	t.Run("use after close", func(t *testing.T) { emucuda.Run(t, "../..", "TestUseAfterClose", emucuda.Kernels) })
}
