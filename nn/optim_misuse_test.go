package nn

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestStepAllOrNothing: a step that fails on one parameter changes none
// (values, gradients' owners, step counts), and a state made for a
// parameter of another shape is an ErrShape, not a broadcast. The step
// moved the first parameter before failing on the second, and SGD's
// momentum of shape [1] was broadcast to a parameter of shape [3].
func TestStepAllOrNothing(t *testing.T) {
	values := func(t *testing.T, x *lathe.Tensor) []float32 {
		t.Helper()
		v, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Run("a gradient of another shape", func(t *testing.T) {
		a := lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad()
		b := lathe.Ones(lathe.CPU, lathe.Float32, 3).RequireGrad()
		opt, err := NewAdam([]Param{{"a", a}, {"b", b}}, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Sum().Add(b.Sum()).Backward(); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		opt.ZeroGrad()
		*b = *lathe.Ones(lathe.CPU, lathe.Float32, 1).RequireGrad()
		if err := a.Sum().Add(b.Sum()).Backward(); err != nil {
			t.Fatal(err)
		}
		before, steps := values(t, a), slices.Clone(opt.steps)
		err = opt.Step()
		if !errors.Is(err, lathe.ErrShape) {
			t.Fatalf("a step with b's state of shape [3] and b of [1]: %v, want an ErrShape", err)
		}
		if after := values(t, a); !slices.Equal(after, before) || !slices.Equal(opt.steps, steps) {
			t.Errorf("the failed step changed a: %v -> %v, steps %v -> %v", before, after, steps, opt.steps)
		}
	})
	for name, make := range map[string]func([]Param) (Optimizer, error){
		"sgd momentum": func(ps []Param) (Optimizer, error) { return NewSGD(ps, 0.1, Momentum(0.9)) },
		"adam":         func(ps []Param) (Optimizer, error) { return NewAdam(ps, 0.1) },
		"rmsprop":      func(ps []Param) (Optimizer, error) { return NewRMSprop(ps, 0.1, Momentum(0.9), Centered()) },
		"adagrad":      func(ps []Param) (Optimizer, error) { return NewAdagrad(ps, 0.1) },
		"adam amsgrad": func(ps []Param) (Optimizer, error) { return NewAdam(ps, 0.1, AMSGrad()) },
		"adamax":       func(ps []Param) (Optimizer, error) { return NewAdamax(ps, 0.1) },
		"nadam":        func(ps []Param) (Optimizer, error) { return NewNAdam(ps, 0.1) },
		"radam":        func(ps []Param) (Optimizer, error) { return NewRAdam(ps, 0.1) },
		"adadelta":     func(ps []Param) (Optimizer, error) { return NewAdadelta(ps, 0.1) },
		"rprop":        func(ps []Param) (Optimizer, error) { return NewRprop(ps, 0.1) },
		"asgd":         func(ps []Param) (Optimizer, error) { return NewASGD(ps, 0.1, T0(0)) },
	} {
		t.Run("state of another shape/"+name, func(t *testing.T) {
			b := lathe.Ones(lathe.CPU, lathe.Float32, 1).RequireGrad()
			opt, err := make([]Param{{"b", b}})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Sum().Backward(); err != nil {
				t.Fatal(err)
			}
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
			opt.ZeroGrad()
			*b = *lathe.Ones(lathe.CPU, lathe.Float32, 3).RequireGrad()
			if err := b.Sum().Backward(); err != nil {
				t.Fatal(err)
			}
			if err := opt.Step(); !errors.Is(err, lathe.ErrShape) || !strings.Contains(err.Error(), "another shape") {
				t.Fatalf("got %v, want an ErrShape about the state's shape", err)
			}
			if v := values(t, b); !slices.Equal(v, []float32{1, 1, 1}) {
				t.Errorf("b changed to %v", v)
			}
		})
	}
}

// TestClipGradNormTiedWeight: a weight that two modules share, listed
// under both names, counts once in the norm (as torch's parameters()
// yields it once), and a nil or released parameter is an error. The norm
// was √2 times too large; the nil and released ones were skipped.
func TestClipGradNormTiedWeight(t *testing.T) {
	emb := NewEmbedding(4, 3)
	lin := NewLinear(3, 4, NoBias())
	lin.Weight = emb.Weight
	m := Sequential(emb, lin)
	if err := m.Forward(lathe.FromSlice(lathe.CPU, []int64{0, 1, 2}, 3)).Square().Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	g, err := emb.Weight.Grad().Float64s()
	if err != nil {
		g32, err := emb.Weight.Grad().Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range g32 {
			g = append(g, float64(v))
		}
	}
	want := 0.0
	for _, v := range g {
		want += v * v
	}
	want = math.Sqrt(want)
	got, err := ClipGradNorm(m.Parameters(), 1e9)
	if err != nil || math.Abs(got-want) > 1e-4*want {
		t.Errorf("norm of a tied weight: %v, %v; want %v", got, err, want)
	}
	released := lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad()
	released.Release()
	for name, ps := range map[string][]Param{"nil": {{Name: "w"}}, "released": {{Name: "w", T: released}}} {
		if _, err := ClipGradNorm(ps, 1); err == nil {
			t.Errorf("a %s parameter: no error", name)
		}
	}
}

// TestSettingsChangedAfterMaking: exported settings changed after the
// constructor are checked at the next Step as the constructor checks
// them: a StepSize or TMax of 0 panicked dividing by zero, Adam's β1 = 1
// and SGD's NaN momentum made NaN parameters, RMSNorm's negative eps NaN
// outputs.
func TestSettingsChangedAfterMaking(t *testing.T) {
	p := lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad()
	sgd, err := NewSGD([]Param{{"p", p}}, 0.1, Momentum(0.5))
	if err != nil {
		t.Fatal(err)
	}
	step, err := NewStepLR(sgd, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	cos, err := NewCosineAnnealingLR(sgd, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	linear, err := NewLinearLR(sgd, 0.5, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	step.StepSize, cos.TMax, linear.TotalIters = 0, 0, 0
	for name, s := range map[string]LRScheduler{"step_lr": step, "cosine_annealing_lr": cos, "linear_lr": linear} {
		lr := sgd.LearningRate()
		if err := s.Step(); !errors.Is(err, lathe.ErrValue) || sgd.LearningRate() != lr {
			t.Errorf("%s with a zero period: %v (lr %v -> %v), want an ErrValue and no change", name, err, lr, sgd.LearningRate())
		}
	}
	if err := p.Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	adam, err := NewAdam([]Param{{"p", p}}, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	adam.Betas[0] = 1
	sgd.Momentum = math.NaN()
	for name, opt := range map[string]Optimizer{"adam β1 = 1": adam, "sgd momentum NaN": sgd} {
		if err := opt.Step(); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("%s: %v, want an ErrValue", name, err)
		}
	}
	if v, _ := p.Float32s(); !slices.Equal(v, []float32{1, 1}) {
		t.Errorf("p changed to %v", v)
	}
	norm := NewRMSNorm([]int{2})
	for _, eps := range []float64{-1, math.NaN(), math.Inf(1)} {
		norm.Eps = eps
		if err := norm.Forward(lathe.Ones(lathe.CPU, lathe.Float32, 2)).Err(); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("RMSNorm with eps %v: %v, want an ErrValue", eps, err)
		}
	}
}

// TestOneCycleRefusesDegenerateCycles: a cycle with a phase of no steps
// (torch's ZeroDivisionError) or momenta outside [0, 1) is an ErrValue
// from the constructor, which leaves the optimizer as it was. The
// constructor succeeded and left a NaN learning rate and β1.
func TestOneCycleRefusesDegenerateCycles(t *testing.T) {
	p := lathe.Ones(lathe.CPU, lathe.Float32, 2).RequireGrad()
	for name, cfg := range map[string]func(c *OneCycleConfig){
		"pct_start 1, one step":     func(c *OneCycleConfig) { c.TotalSteps, c.PctStart = 1, 1 },
		"three phases of two steps": func(c *OneCycleConfig) { c.TotalSteps, c.PctStart, c.ThreePhase = 2, 0.5, true },
		"max momentum NaN":          func(c *OneCycleConfig) { c.MaxMomentum = math.NaN() },
		"base momentum 1.5":         func(c *OneCycleConfig) { c.BaseMomentum = 1.5 },
	} {
		adam, err := NewAdam([]Param{{"p", p}}, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		c := DefaultOneCycle(0.1, 10)
		cfg(&c)
		if _, err := NewOneCycleLR(adam, c); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("%s: %v, want an ErrValue", name, err)
		}
		if adam.LearningRate() != 0.01 || adam.Betas[0] != 0.9 || adam.hasInitialLR {
			t.Errorf("%s: the failed constructor left lr %v, β1 %v, initial lr set %v", name, adam.LearningRate(), adam.Betas[0], adam.hasInitialLR)
		}
	}
}
