//go:build cgo

package wgpu_test

import (
	"slices"
	"sort"
	"testing"

	_ "github.com/lathe-ml/lathe" // every backend and op
	"github.com/lathe-ml/lathe/dispatch"
)

// owed are the ops that have a cpu kernel and no wgpu kernel: the fused
// layer norm, whose public op, Tensor.LayerNorm, runs as its composite on
// wgpu.
var owed = []string{"native_layer_norm", "native_layer_norm_backward"}

// TestCoverage: every op with a cpu kernel has a wgpu one, but for those
// listed in owed (what it does for each dtype is the conformance suite's
// to check).
func TestCoverage(t *testing.T) {
	var missing []string
	n := 0
	hasCPU := map[string]bool{}
	for _, op := range dispatch.Ops() {
		if !op.RunsKernel() || !op.HasKernel(dispatch.Host) {
			continue
		}
		n++
		hasCPU[op.Name] = true
		if !op.HasKernel(dispatch.Kind("wgpu")) && !slices.Contains(owed, op.Name) {
			missing = append(missing, op.Name)
		}
	}
	sort.Strings(missing)
	for _, name := range owed {
		if !hasCPU[name] {
			t.Errorf("owed lists %s, which is not an op with a cpu kernel", name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("ops with a cpu kernel and no wgpu kernel: %v", missing)
	}
	t.Logf("%d ops with kernels, all on wgpu but the %d owed", n, len(owed))
}
