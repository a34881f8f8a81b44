package autodiff

import (
	"errors"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// TestMissingTensors calls every exported function of the package with a
// nil tensor and a zero dispatch.Tensor (no storage): each returns an
// error or does nothing, where they dereferenced nil before.
func TestMissingTensors(t *testing.T) {
	hook := func(g *dispatch.Tensor) (*dispatch.Tensor, error) { return g, nil }
	for _, x := range []*dispatch.Tensor{nil, {}} {
		for name, err := range map[string]error{
			"Backward":    Backward(x, Options{}),
			"RequireGrad": RequireGrad(x),
			"SetGrad":     SetGrad(x, nil),
		} {
			var e *dispatch.Error
			if !errors.As(err, &e) {
				t.Errorf("%s(%v): %v, want a lathe error", name, x, err)
			}
		}
		if _, err := GradOf(x, []*dispatch.Tensor{x}, Options{}); err == nil {
			t.Errorf("GradOf(%v): no error", x)
		}
		if x == nil && IsLeaf(x) {
			t.Errorf("IsLeaf(nil) = true")
		}
		if g := Grad(x); g != nil {
			t.Errorf("Grad(%v) = %v", x, g)
		}
		ZeroGrad(x)
		if OnGrad(x, hook) {
			t.Errorf("OnGrad(%v) added a hook", x)
		}
		if ReleaseWith(x, x) {
			t.Errorf("ReleaseWith(%v, %v) took it", x, x)
		}
		Checkpoint([]*dispatch.Tensor{x}, x, nil)
		Moved(x, x, nil)
	}
}
