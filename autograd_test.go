package lathe_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestSetGradErrorKinds: a gradient that does not fit the tensor is the
// error of what is wrong with it, naming the argument g (issue 15, defect
// 14: one on another device was ErrShape).
func TestSetGradErrorKinds(t *testing.T) {
	x := lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3).RequireGrad()
	released := lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3)
	released.Release()
	cases := []struct {
		name string
		g    func(t *testing.T) *lathe.Tensor
		kind error
		text string
	}{
		{"shape", func(*testing.T) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Float32, 3, 2) }, lathe.ErrShape, "[3, 2]"},
		{"dtype", func(*testing.T) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Float64, 2, 3) }, lathe.ErrDType, "float64"},
		{"released", func(*testing.T) *lathe.Tensor { return released }, lathe.ErrReleased, "released"},
		{"device", func(t *testing.T) *lathe.Tensor { return lathe.Zeros(openWGPU(t), lathe.Float32, 2, 3) }, lathe.ErrDevice, "wgpu:0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := x.SetGrad(c.g(t))
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.text) || !strings.Contains(err.Error(), `"g"`) {
				t.Fatalf("SetGrad: %v, want %v naming \"g\" and %q", err, c.kind, c.text)
			}
			if x.Grad() != nil {
				t.Fatal("a refused SetGrad set the gradient")
			}
		})
	}
}

// TestOnGradZeroTensor: a hook that returns a zero Tensor (not nil, which
// keeps the gradient) returns no gradient at all: that is an error, not
// "keep" (issue 15, defect 14).
func TestOnGradZeroTensor(t *testing.T) {
	for _, tc := range []struct {
		name string
		hook func(g *lathe.Tensor) *lathe.Tensor
	}{
		{"new", func(*lathe.Tensor) *lathe.Tensor { return new(lathe.Tensor) }},
		{"value", func(*lathe.Tensor) *lathe.Tensor { var v lathe.Tensor; return &v }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
			x.OnGrad(tc.hook)
			err := x.Mul(x).Sum().Backward()
			if !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), "hook result") {
				t.Fatalf("Backward: %v, want ErrValue naming the hook result", err)
			}
			if x.Grad() != nil {
				t.Fatal("the leaf got a gradient from a failed pass")
			}
		})
	}
}
