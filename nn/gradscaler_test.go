package nn

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestGradScalerTorch repeats build/torchref/gradscaler.py's steps: the
// scale each step runs with, the skipped steps and the parameters.
func TestGradScalerTorch(t *testing.T) {
	r := torchGradScaler
	w := lathe.FromSlice(lathe.CPU, r.W0, 2, 3).RequireGrad()
	b := lathe.FromSlice(lathe.CPU, r.B0, 2).RequireGrad()
	x, y := lathe.FromSlice(lathe.CPU, r.X, 4, 3), lathe.FromSlice(lathe.CPU, r.Y, 4, 2)
	l := &Linear{Weight: w, Bias: b}
	opt, err := NewSGD(l.Parameters(), 0.1)
	if err != nil {
		t.Fatal(err)
	}
	s := NewGradScaler()
	s.GrowthInterval = 2
	for step := range r.Stepped {
		opt.ZeroGrad()
		if got := s.CurrentScale(); got != float64(r.Scales[step]) {
			t.Fatalf("step %d: scale %v, torch %v", step, got, r.Scales[step])
		}
		if err := s.Scale(l.Forward(x).MSELoss(y)).Backward(); err != nil {
			t.Fatal(err)
		}
		if step == 1 || step == 4 {
			g, err := w.Grad().Float32s()
			if err != nil {
				t.Fatal(err)
			}
			g[1] = float32(math.Inf(1))
			if err := w.SetGrad(lathe.FromSlice(lathe.CPU, g, 2, 3)); err != nil {
				t.Fatal(err)
			}
		}
		stepped, err := s.Step(opt)
		if err != nil {
			t.Fatal(err)
		}
		if stepped != r.Stepped[step] {
			t.Errorf("step %d: stepped %v, torch %v", step, stepped, r.Stepped[step])
		}
		s.Update()
		for _, c := range []struct {
			name string
			p    *lathe.Tensor
			want []float32
		}{{"w", w, r.W[step*6 : step*6+6]}, {"b", b, r.B[step*2 : step*2+2]}} {
			got, err := c.p.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if d := math.Abs(float64(got[i] - c.want[i])); d > 1e-6 {
					t.Errorf("step %d: %s[%d] = %v, torch %v", step, c.name, i, got[i], c.want[i])
				}
			}
		}
	}
}

func TestGradScalerRules(t *testing.T) {
	s := NewGradScaler()
	if s.CurrentScale() != 65536 || s.GrowthFactor != 2 || s.BackoffFactor != 0.5 || s.GrowthInterval != 2000 {
		t.Fatalf("defaults %v %v %v %v, want torch's 65536 2 0.5 2000", s.CurrentScale(), s.GrowthFactor, s.BackoffFactor, s.GrowthInterval)
	}
	w := lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad()
	opt, err := NewSGD([]Param{{Name: "w", T: w}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(); !errors.Is(err, lathe.ErrValue) || s.CurrentScale() != 65536 {
		t.Fatalf("Update before any step: %v, scale %v; want an ErrValue and 65536", err, s.CurrentScale())
	}
	cleanStep := func() {
		opt.ZeroGrad()
		if err := s.Scale(w.Sum()).Backward(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(opt); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 1999; i++ {
		cleanStep()
	}
	if s.CurrentScale() != 65536 {
		t.Fatalf("grew before 2000 clean steps: %v", s.CurrentScale())
	}
	if err := s.Update(); !errors.Is(err, lathe.ErrValue) || s.CurrentScale() != 65536 {
		t.Fatalf("a second Update after one step: %v, scale %v; want an ErrValue and no growth", err, s.CurrentScale())
	}
	cleanStep()
	if s.CurrentScale() != 131072 {
		t.Fatalf("after 2000 clean steps: %v, want 131072", s.CurrentScale())
	}
	opt.ZeroGrad()
	if err := s.Scale(w.Sum()).Backward(); err != nil {
		t.Fatal(err)
	}
	if err := s.Unscale(opt); err != nil {
		t.Fatal(err)
	}
	g, _ := w.Grad().Float32s()
	if g[0] != 1 || g[1] != 1 {
		t.Fatalf("unscaled grad %v, want [1 1]", g)
	}
	if err := s.Unscale(opt); !errors.Is(err, lathe.ErrValue) {
		t.Fatalf("second Unscale: %v, want ErrValue", err)
	}
	if stepped, err := s.Step(opt); !stepped || err != nil {
		t.Fatalf("Step: %v %v", stepped, err)
	}
}

// TestGradScalerMisuse: a second Step before Update is an ErrValue, as
// torch's "step() has already been called since the last update()"; the
// zero GradScaler is NewGradScaler's (it scaled by 0 and panicked in Step);
// factors torch refuses are ErrValues naming them, and change nothing.
func TestGradScalerMisuse(t *testing.T) {
	step := func(s *GradScaler) (*lathe.Tensor, bool, error) {
		w := lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad()
		opt, err := NewSGD([]Param{{Name: "w", T: w}}, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Scale(w.Mul(w).Sum()).Backward(); err != nil {
			t.Fatal(err)
		}
		stepped, err := s.Step(opt)
		if err == nil {
			if _, err2 := s.Step(opt); !errors.Is(err2, lathe.ErrValue) {
				t.Errorf("second Step before Update: %v, want ErrValue", err2)
			}
			s.Update()
			if _, err = s.Step(opt); err != nil { // after Update, Step runs again
				t.Errorf("Step after Update: %v", err)
			}
		}
		return w, stepped, err
	}
	want, _, err := step(NewGradScaler())
	if err != nil {
		t.Fatal(err)
	}
	var zero GradScaler
	got, stepped, err := step(&zero)
	if err != nil || !stepped || zero.CurrentScale() != 65536 || zero.GrowthInterval != 2000 {
		t.Fatalf("zero GradScaler: %v %v, scale %v, interval %d", stepped, err, zero.CurrentScale(), zero.GrowthInterval)
	}
	wv, _ := want.Float32s()
	gv, _ := got.Float32s()
	if !slices.Equal(wv, gv) {
		t.Errorf("zero GradScaler stepped to %v, NewGradScaler's to %v", gv, wv)
	}
	for _, c := range []struct {
		name string
		s    *GradScaler
	}{
		{"GrowthFactor", &GradScaler{GrowthFactor: 0.5}},
		{"BackoffFactor", &GradScaler{BackoffFactor: 1}},
		{"GrowthInterval", &GradScaler{GrowthInterval: -1}},
	} {
		w, stepped, err := step(c.s)
		var e *lathe.Error
		if stepped || !errors.Is(err, lathe.ErrValue) || !errors.As(err, &e) || e.Arg != c.name {
			t.Errorf("%s: %v %v, want an ErrValue naming it", c.name, stepped, err)
		}
		if v, _ := w.Float32s(); v[0] != 1 {
			t.Errorf("%s: the refused step moved w to %v", c.name, v)
		}
	}
}

// TestGradScalerFloat16Gradients: a float16 gradient is an ErrDType of
// Unscale (and Step) naming it, as torch's "Attempting to unscale FP16
// gradients", and nothing changes; bfloat16 ones are unscaled, as torch's.
// The loss, 16-bit, is scaled in float32 (torch's scale promotes it): in
// float16 the scaled loss read Inf.
func TestGradScalerFloat16Gradients(t *testing.T) {
	for _, dt := range []lathe.DType{lathe.Float16, lathe.BFloat16} {
		// The step is exact in bfloat16.
		w := lathe.Full(lathe.CPU, dt, 0.0625, 2).RequireGrad()
		opt, err := NewSGD([]Param{{Name: "w", T: w}}, 0.25)
		if err != nil {
			t.Fatal(err)
		}
		s := NewGradScaler()
		scaled := s.Scale(w.Mul(w).Sum())
		if scaled.DType() != lathe.Float32 {
			t.Errorf("%s: the scaled loss is %s, want float32", dt, scaled.DType())
		}
		if err := scaled.Backward(); err != nil {
			t.Fatal(err)
		}
		before, _ := w.Grad().Float32s()
		stepped, err := s.Step(opt)
		g, _ := w.Grad().Float32s()
		v, _ := w.Float32s()
		var e *lathe.Error
		if dt == lathe.Float16 {
			if stepped || !errors.Is(err, lathe.ErrDType) || !errors.As(err, &e) || e.Arg != "w.grad" {
				t.Errorf("float16: %v %v, want an ErrDType naming w.grad", stepped, err)
			}
			if !slices.Equal(g, before) || v[0] != 0.0625 {
				t.Errorf("float16: the refused step left grad %v and w %v, want %v and 0.0625", g, v, before)
			}
			continue
		}
		if !stepped || err != nil || v[0] != 0.03125 {
			t.Errorf("bfloat16: %v %v, w %v, want a step to 0.03125", stepped, err, v)
		}
	}
}

// TestReleasedGradients: a gradient the caller released is an ErrReleased
// of Unscale and ClipGradNorm naming the parameter's gradient, and
// nothing changes, where the errors named the ops inside them (mul,
// square) and their argument "lhs" or "x".
func TestReleasedGradients(t *testing.T) {
	w := lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad()
	b := lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad()
	params := []Param{{Name: "w", T: w}, {Name: "b", T: b}}
	opt, err := NewSGD(params, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	s := NewGradScaler()
	if err := s.Scale(w.Mul(b).Sum()).Backward(); err != nil {
		t.Fatal(err)
	}
	before, _ := w.Grad().Float32s()
	b.Grad().Release()
	for name, err := range map[string]error{
		"unscale":        s.Unscale(opt),
		"clip_grad_norm": func() error { _, err := ClipGradNorm(params, 1); return err }(),
	} {
		if !errors.Is(err, lathe.ErrReleased) || !strings.Contains(err.Error(), name+`: argument "b.grad"`) {
			t.Errorf("%s with b's gradient released: %v, want an ErrReleased of %s naming b.grad", name, err, name)
		}
	}
	if after, _ := w.Grad().Float32s(); !slices.Equal(before, after) {
		t.Errorf("w's gradient went from %v to %v", before, after)
	}
}

// TestGradScalerDevices: an optimizer over parameters on two devices is
// unscaled and stepped, and an Inf on either device skips the step, as
// torch's GradScaler keeps a found_inf per device; stacking the probes of
// the cpu's and wgpu:0's gradients was an ErrDevice of stack.
func TestGradScalerDevices(t *testing.T) {
	dev := wgpuOrSkip(t)
	for _, inf := range []bool{false, true} {
		a := lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad()
		b := lathe.Ones(dev, lathe.Float32, 2).RequireGrad()
		opt, err := NewSGD([]Param{{Name: "a", T: a}, {Name: "b", T: b}}, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		s := NewGradScaler()
		bGrad := []float32{65536, 65536}
		if inf {
			bGrad[1] = float32(math.Inf(1))
		}
		if err := a.SetGrad(lathe.FromSlice(lathe.CPU, []float32{65536, 65536}, 2)); err != nil {
			t.Fatal(err)
		}
		if err := b.SetGrad(lathe.FromSlice(lathe.CPU, bGrad, 2).To(dev)); err != nil {
			t.Fatal(err)
		}
		stepped, err := s.Step(opt)
		if err != nil || stepped == inf {
			t.Fatalf("Inf %v: Step = %v, %v; want stepped %v", inf, stepped, err, !inf)
		}
		s.Update()
		want, scale := []float64{0.5, 0.5}, 65536.0
		if inf {
			want, scale = []float64{1, 1}, 32768
		}
		for _, p := range []*lathe.Tensor{a, b} {
			got, err := p.Float32s()
			if err != nil || float64(got[0]) != want[0] || float64(got[1]) != want[1] {
				t.Errorf("Inf %v: parameter on %v = %v, %v; want %v", inf, p.Device(), got, err, want)
			}
		}
		if s.CurrentScale() != scale {
			t.Errorf("Inf %v: scale %v, want %v", inf, s.CurrentScale(), scale)
		}
	}
}
