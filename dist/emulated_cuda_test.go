package dist

import (
	"testing"

	"github.com/lathe-ml/lathe/internal/emucuda"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestEmulatedCUDA runs TestNCCLOneRank, gpu-check's NCCL step, on cuda:0
// as the host emulation plays it (internal/emucuda) with the stand-in
// NCCL (testdata/fakenccl.c): every collective of every dtype queued on
// the device's stream, where there is no GPU.
func TestEmulatedCUDA(t *testing.T) {
	emucuda.Run(t, "..", "TestNCCLOneRank", emucuda.Kernels, "LATHE_NCCL_LIB="+testenv.SharedLibrary(t, "testdata/fakenccl.c"))
}
