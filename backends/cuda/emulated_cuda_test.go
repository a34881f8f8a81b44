package cuda

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
)

// TestEmulatedCUDA runs TestRealDevice, gpu-check's cuda-unit step, on
// cuda:0 as the host emulation plays it (internal/emucuda), with lathe's
// kernels and with the stand-ins for cuBLAS and cuDNN.
func TestEmulatedCUDA(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup emucuda.Setup
	}{{"kernels", emucuda.Kernels}, {"libraries", emucuda.StandIns}} {
		t.Run(c.name, func(t *testing.T) { emucuda.Run(t, "../..", "TestRealDevice", c.setup) })
	}
}
