package nn

import (
	"errors"
	"math"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

func withGrad(t *testing.T, v, g []float64) *lathe.Tensor {
	t.Helper()
	p := toDType(t, v, lathe.Float64, len(v)).RequireGrad()
	if g != nil {
		if err := p.SetGrad(toDType(t, g, lathe.Float64, len(g))); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func TestClipGradNorm(t *testing.T) {
	// Gradients (3, 4) and (12): global norm 13.
	a := withGrad(t, []float64{0, 0}, []float64{3, 4})
	b := withGrad(t, []float64{0}, []float64{12})
	c := withGrad(t, []float64{0}, nil) // no gradient: skipped
	ps := []Param{{"a", a}, {"b", b}, {"c", c}}

	total, err := ClipGradNorm(ps, 100)
	if err != nil || total != 13 {
		t.Fatalf("no clip: total %g, err %v; want 13", total, err)
	}
	assertClose(t, "a unchanged", values(t, a.Grad()), []float64{3, 4}, 0)

	total, err = ClipGradNorm(ps, 1.3)
	if err != nil || total != 13 {
		t.Fatalf("clip: total %g, err %v; want 13", total, err)
	}
	coef := 1.3 / (13 + 1e-6) // torch's clip_coef
	assertClose(t, "a", values(t, a.Grad()), []float64{3 * coef, 4 * coef}, 1e-15)
	assertClose(t, "b", values(t, b.Grad().To(lathe.CPU)), []float64{12 * coef}, 1e-15)
	if c.Grad() != nil {
		t.Fatal("a parameter without a gradient got one")
	}
	total, err = ClipGradNorm(ps, 1.3)
	if err != nil || math.Abs(total-1.3) > 1e-6 {
		t.Fatalf("after clipping the norm is %g, want 1.3", total)
	}

	if _, err := ClipGradNorm(ps, -1); !errors.Is(err, lathe.ErrValue) {
		t.Fatalf("max_norm -1: %v, want ErrValue", err)
	}
	if total, err := ClipGradNorm(nil, 1); total != 0 || err != nil {
		t.Fatalf("no params: %g, %v", total, err)
	}
	inf := withGrad(t, []float64{0}, []float64{math.Inf(1)})
	if total, err := ClipGradNorm([]Param{{"inf", inf}}, 1); err != nil || !math.IsInf(total, 1) {
		t.Fatalf("infinite gradient: total %g, err %v; want +Inf as torch returns", total, err)
	}
	// Gradients of three dtypes, interleaved, whose norms are read back a
	// dtype at a time: the total is √(2² + 3² + 6² + 0 + 12² + 24²), and
	// each gradient is scaled.
	mixed := []Param{}
	for i, g := range []struct {
		dt lathe.DType
		v  []float64
	}{{lathe.Float32, []float64{2}}, {lathe.Float64, []float64{3}}, {lathe.BFloat16, []float64{6}},
		{lathe.Float32, []float64{0, 0}}, {lathe.Float64, []float64{12}}, {lathe.Float32, []float64{24}}} {
		p := toDType(t, make([]float64, len(g.v)), g.dt, len(g.v)).RequireGrad()
		if err := p.SetGrad(toDType(t, g.v, g.dt, len(g.v))); err != nil {
			t.Fatal(err)
		}
		mixed = append(mixed, Param{string(rune('a' + i)), p})
	}
	total, err = ClipGradNorm(mixed, 1)
	if want := math.Sqrt(4 + 9 + 36 + 144 + 576); err != nil || total != want {
		t.Fatalf("mixed dtypes: total %v, err %v; want %v", total, err, want)
	}
	coef = 1 / (total + 1e-6)
	for i, want := range []float64{2, 3, 6, 0, 12, 24} {
		if got := values(t, mixed[i].T.Grad()); math.Abs(got[0]-want*coef) > 1e-2*want*coef {
			t.Errorf("parameter %d's gradient is %v, want %v", i, got[0], want*coef)
		}
	}
}

func TestSetGradChecks(t *testing.T) {
	p := toDType(t, []float64{1, 2}, lathe.Float64, 2).RequireGrad()
	if err := p.SetGrad(toDType(t, []float64{1}, lathe.Float64, 1)); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("wrong shape: %v", err)
	}
	if err := p.MulScalar(2).SetGrad(toDType(t, []float64{1, 1}, lathe.Float64, 2)); !errors.Is(err, lathe.ErrGrad) {
		t.Fatalf("non-leaf: %v", err)
	}
	if err := p.SetGrad(nil); err != nil || p.Grad() != nil {
		t.Fatalf("SetGrad(nil): %v", err)
	}
}

// wgpuOrSkip returns wgpu:0, or skips t where it does not open.
func wgpuOrSkip(t *testing.T) lathe.Device {
	t.Helper()
	dev := lathe.WGPU(0)
	for _, info := range lathe.DeviceStatus() {
		if info.Device == dev && !info.Available {
			testenv.SkipDevice(t, dev.String(), "%s is unavailable: %s", dev, info.Detail)
		}
	}
	return dev
}

// TestClipGradNormDevices: parameters on two devices (model parallelism)
// are clipped together, as torch's clip_grad_norm_ moves their norms to
// one device; stacking the cpu's and wgpu:0's norms was an ErrDevice of
// stack.
func TestClipGradNormDevices(t *testing.T) {
	dev := wgpuOrSkip(t)
	a := lathe.Zeros(lathe.CPU, lathe.Float32, 2).RequireGrad()
	b := lathe.Zeros(dev, lathe.Float32, 1).RequireGrad()
	if err := a.SetGrad(lathe.FromSlice(lathe.CPU, []float32{3, 4}, 2)); err != nil {
		t.Fatal(err)
	}
	if err := b.SetGrad(lathe.FromSlice(lathe.CPU, []float32{12}, 1).To(dev)); err != nil {
		t.Fatal(err)
	}
	total, err := ClipGradNorm([]Param{{"a", a}, {"b", b}}, 1.3)
	if err != nil || total != 13 {
		t.Fatalf("total %v, err %v; want 13", total, err)
	}
	coef := 1.3 / (13 + 1e-6)
	assertClose(t, "a", values(t, a.Grad()), []float64{3 * coef, 4 * coef}, 1e-6)
	assertClose(t, "b", values(t, b.Grad().To(lathe.CPU)), []float64{12 * coef}, 1e-6)
}
