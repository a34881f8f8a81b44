//go:build cgo

package wgpu_test

import (
	"sort"
	"testing"

	_ "github.com/lathe-ml/lathe" // every backend and op
	"github.com/lathe-ml/lathe/dispatch"
)

// TestCoverage: every op with a cpu kernel has a wgpu one (what it does
// for each dtype is the conformance suite's to check).
func TestCoverage(t *testing.T) {
	var missing []string
	n := 0
	for _, op := range dispatch.Ops() {
		if !op.RunsKernel() || !op.HasKernel(dispatch.Host) {
			continue
		}
		n++
		if !op.HasKernel(dispatch.Kind("wgpu")) {
			missing = append(missing, op.Name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("ops with a cpu kernel and no wgpu kernel: %v", missing)
	}
	t.Logf("%d ops with kernels, all on wgpu", n)
}
