package lathe_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// openWGPU returns wgpu:0, or skips the test by name with the reason.
func openWGPU(t *testing.T) lathe.Device {
	t.Helper()
	for _, info := range lathe.DeviceStatus() {
		if info.Device == lathe.WGPU(0) {
			if !info.Available {
				testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %s", info.Detail)
			}
			return info.Device
		}
	}
	testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is not listed by lathe.DeviceStatus")
	return lathe.Device{}
}

// wantDeviceError checks that err is an ErrDevice naming the op, the
// argument and both devices.
func wantDeviceError(t *testing.T, err error, op, arg string, on, runs lathe.Device) {
	t.Helper()
	var le *lathe.Error
	switch {
	case err == nil:
		t.Fatalf("no error, want a device error from %s", op)
	case !errors.Is(err, lathe.ErrDevice) || !errors.As(err, &le):
		t.Fatalf("error %v (%T), want a *lathe.Error of kind ErrDevice", err, err)
	}
	msg := err.Error()
	for _, s := range []string{op + ":", `"` + arg + `"`, on.String(), runs.String()} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not name %q", msg, s)
		}
	}
}

// TestMixedDevicesForward puts a cpu and a wgpu tensor into one op, in
// both orders: the op runs on its first argument's device and names the
// other argument, with no silent copy.
func TestMixedDevicesForward(t *testing.T) {
	gpu := openWGPU(t)
	c := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3}, 3)
	g := lathe.FromSlice(gpu, []float32{4, 5, 6}, 3)
	wantDeviceError(t, c.Add(g).Err(), "add", "rhs", gpu, lathe.CPU)
	wantDeviceError(t, g.Add(c).Err(), "add", "rhs", lathe.CPU, gpu)
	m := lathe.FromSlice(gpu, []float32{1, 2, 3, 4, 5, 6}, 3, 2)
	wantDeviceError(t, c.Reshape(1, 3).MatMul(m).Err(), "matmul", "rhs", gpu, lathe.CPU)
	// Moving one side makes the same op valid.
	got, err := c.Add(g.To(lathe.CPU)).Float32s()
	if err != nil || got[0] != 5 || got[2] != 9 {
		t.Fatalf("c + g.To(cpu) = %v, %v; want [5 7 9]", got, err)
	}
}

// TestMixedDevicesBackward gives a backward pass a gradient on the other
// device, in both orders, and a hook that moves a gradient: each is a
// device error, not a crash and not a copy.
func TestMixedDevicesBackward(t *testing.T) {
	gpu := openWGPU(t)
	for _, tc := range []struct{ graph, seed lathe.Device }{{lathe.CPU, gpu}, {gpu, lathe.CPU}} {
		x := lathe.FromSlice(tc.graph, []float32{1, 2, 3}, 3).RequireGrad()
		y := x.Mul(x)
		seed := lathe.FromSlice(tc.seed, []float32{1, 1, 1}, 3)
		err := y.Backward(lathe.WithGradient(seed))
		if err == nil || !errors.Is(err, lathe.ErrDevice) {
			t.Errorf("graph on %s, seed on %s: %v, want an ErrDevice", tc.graph, tc.seed, err)
		} else if !strings.Contains(err.Error(), tc.graph.String()) || !strings.Contains(err.Error(), tc.seed.String()) {
			t.Errorf("graph on %s, seed on %s: %q does not name both devices", tc.graph, tc.seed, err)
		}
	}
	x := lathe.FromSlice(gpu, []float32{1, 2, 3}, 3).RequireGrad()
	x.OnGrad(func(g *lathe.Tensor) *lathe.Tensor { return g.To(lathe.CPU) })
	err := x.Mul(x).Sum().Backward()
	if err == nil || !errors.Is(err, lathe.ErrDevice) {
		t.Errorf("a hook that moves the gradient to the cpu: %v, want an ErrDevice", err)
	}
}

// TestToIsDifferentiable: a copy onto another device is recorded, as
// torch's .to(device) is, so that the gradient comes back onto the
// leaf's device, to any order; it was not recorded, and the leaf got no
// gradient (the copy required none).
func TestToIsDifferentiable(t *testing.T) {
	gpu := openWGPU(t)
	for _, c := range []struct{ from, to lathe.Device }{{lathe.CPU, gpu}, {gpu, lathe.CPU}} {
		x := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3}).To(c.from).RequireGrad()
		w := lathe.FromSlice(lathe.CPU, []float32{4, 5, 6}).To(c.to)
		moved := x.To(c.to)
		if !moved.RequiresGrad() {
			t.Fatalf("%v to %v: the copy requires no gradient", c.from, c.to)
		}
		if err := moved.Mul(w).Sum().Backward(); err != nil {
			t.Fatal(err)
		}
		g := x.Grad()
		if got, err := g.To(lathe.CPU).Float32s(); err != nil || g.Device() != c.from || !slices.Equal(got, []float32{4, 5, 6}) {
			t.Errorf("%v to %v: x's gradient %v on %v (%v), want [4 5 6] on %v", c.from, c.to, got, g.Device(), err, c.from)
		}
		// d/dx of the sum of d/dx Σ x³ = 3x² is 6x, through the copy twice.
		x2 := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3}).To(c.from).RequireGrad()
		y := x2.To(c.to).PowScalar(3).Sum()
		gs, err := lathe.Grad(y, []*lathe.Tensor{x2}, lathe.CreateGraph())
		if err != nil {
			t.Fatal(err)
		}
		ggs, err := lathe.Grad(gs[0].Sum(), []*lathe.Tensor{x2})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ggs[0].To(lathe.CPU).Float32s(); err != nil || !slices.Equal(got, []float32{6, 12, 18}) {
			t.Errorf("%v to %v: second derivative %v (%v), want [6 12 18]", c.from, c.to, got, err)
		}
	}
	var plain *lathe.Tensor
	lathe.NoGrad(func() { plain = lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad().To(gpu) })
	if plain.RequiresGrad() || lathe.Ones(lathe.CPU, lathe.Float32, 2).To(gpu).RequiresGrad() {
		t.Error("a copy under NoGrad, or of a tensor without a gradient, requires one")
	}
}
