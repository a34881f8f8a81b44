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
// batch norm ops, whose public op, BatchNorm, runs as its composite where
// they are missing (fusedBatchNorm in the root package); argtopk, whose
// public op, TopK, narrows argsort's result where it is missing; and
// argcumextreme, whose public ops, CumMax and CumMin, double over (value,
// index) pairs where it is missing.
var owed = []string{"argcumextreme", "argtopk", "batch_norm_apply", "batch_norm_backward", "batch_norm_moments"}

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
		hasCPU[op.Key()] = true
		if !op.HasKernel(dispatch.Kind("wgpu")) && !slices.Contains(owed, op.Key()) {
			missing = append(missing, op.Key())
		}
	}
	sort.Strings(missing)
	for _, name := range owed {
		if !hasCPU[name] {
			t.Errorf("owed lists %s, which is not an op with a cpu kernel", name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("ops with a cpu kernel and no wgpu kernel (add one, or list it in owed): %v", missing)
	}
	t.Logf("%d ops with kernels, all on wgpu but the %d owed", n, len(owed))
}
