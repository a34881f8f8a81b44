package wgpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/kernels/wgsl"
)

// TestPreludeMatchesLaunches: the workgroup size and the elements an
// invocation of a flat kernel takes are the prelude's, which the shaders
// use, and grid's and gridPer's, which the launches use; a mismatch would
// leave elements unwritten or launch invocations for nothing.
func TestPreludeMatchesLaunches(t *testing.T) {
	src, err := wgsl.Render("prelude", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("const WG: u32 = %du;", workgroup), fmt.Sprintf("const ITEM_ELEMENTS: u32 = %du;", perItem)} {
		if !strings.Contains(src, want) {
			t.Errorf("the prelude lacks %q", want)
		}
	}
	if g := gridPer(perItem*workgroup + 1); g != [3]uint32{2, 1, 1} {
		t.Errorf("gridPer of one workgroup's elements and one more: %v, want 2 workgroups", g)
	}
}
