//go:build cgo

package wgpu_test

import (
	"testing"

	"github.com/lathe-ml/lathe/backends/wgpu"
)

// TestMatmulTiledAgainstCPU runs TestMatmulAgainstCPU's cases on the
// kernel for a GPU (tiles in workgroup memory) where the adapter is a CPU,
// whose own kernel is another, so that both are tested on every machine.
func TestMatmulTiledAgainstCPU(t *testing.T) {
	defer wgpu.ForceTiledMatmul()()
	matmulAgainstCPU(t)
}
