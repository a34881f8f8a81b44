package nn

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe"
)

// optimCases are the cases of build/torchref/optim_ref.py, by the same
// names; optimRef (nn/optim_torchref_test.go) holds torch's values.
var optimCases = map[string]func([]Param) (Optimizer, error){
	"sgd": func(ps []Param) (Optimizer, error) { return NewSGD(ps, 0.1) },
	"sgd/momentum/dampening/wd": func(ps []Param) (Optimizer, error) {
		return NewSGD(ps, 0.1, Momentum(0.9), Dampening(0.1), WeightDecay(0.01))
	},
	"sgd/nesterov/wd": func(ps []Param) (Optimizer, error) {
		return NewSGD(ps, 0.1, Momentum(0.9), Nesterov(), WeightDecay(0.01))
	},
	"adam": func(ps []Param) (Optimizer, error) { return NewAdam(ps, 0.01) },
	"adam/wd": func(ps []Param) (Optimizer, error) {
		return NewAdam(ps, 0.01, Betas(0.8, 0.99), Eps(1e-6), WeightDecay(0.1))
	},
	"adamw":             func(ps []Param) (Optimizer, error) { return NewAdamW(ps, 0.01, WeightDecay(0.1)) },
	"rmsprop":           func(ps []Param) (Optimizer, error) { return NewRMSprop(ps, 0.01) },
	"rmsprop/alpha/eps": func(ps []Param) (Optimizer, error) { return NewRMSprop(ps, 0.01, Alpha(0.9), Eps(1e-3)) },
	"rmsprop/wd":        func(ps []Param) (Optimizer, error) { return NewRMSprop(ps, 0.01, WeightDecay(0.1)) },
	"rmsprop/momentum":  func(ps []Param) (Optimizer, error) { return NewRMSprop(ps, 0.01, Momentum(0.9)) },
	"rmsprop/centered":  func(ps []Param) (Optimizer, error) { return NewRMSprop(ps, 0.01, Centered()) },
	"rmsprop/centered/momentum/wd": func(ps []Param) (Optimizer, error) {
		return NewRMSprop(ps, 0.02, Alpha(0.95), Momentum(0.5), Centered(), WeightDecay(0.05))
	},
	"adagrad":          func(ps []Param) (Optimizer, error) { return NewAdagrad(ps, 0.1) },
	"adagrad/lr_decay": func(ps []Param) (Optimizer, error) { return NewAdagrad(ps, 0.1, LRDecay(0.5)) },
	"adagrad/wd":       func(ps []Param) (Optimizer, error) { return NewAdagrad(ps, 0.1, WeightDecay(0.1)) },
	"adagrad/initial_accumulator_value/eps": func(ps []Param) (Optimizer, error) {
		return NewAdagrad(ps, 0.1, InitialAccumulator(0.3), Eps(1e-3))
	},
}

func toDType(t *testing.T, v []float64, dt lathe.DType, shape ...int) *lathe.Tensor {
	t.Helper()
	x := lathe.FromSlice(lathe.CPU, v, shape...).Cast(dt)
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	return x
}

func values(t testing.TB, x *lathe.Tensor) []float64 {
	t.Helper()
	x = x.Cast(lathe.Float64)
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func assertClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s: [%d] = %.17g, want %.17g (diff %.3g)\n got %v\nwant %v", what, i, got[i], want[i], d, got, want)
		}
	}
}

// TestOptimizersMatchTorch runs five steps with gradients fed through
// Backward of a leaf with a given seed (so grad = G exactly) and compares
// each step with PyTorch's, computed in the same dtype. The updates follow
// torch's single-tensor code op for op; what is left is that torch fuses
// a + α·b into one FMA where lathe rounds twice, a few units in the last
// place after five steps, which the test allows twice over.
func TestOptimizersMatchTorch(t *testing.T) {
	for name, mk := range optimCases {
		if optimRef[name] == nil {
			t.Errorf("%s: no reference in optim_torchref_test.go; run build/torchref/optim_ref.py", name)
			continue
		}
		for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
			t.Run(name+"/"+dt.String(), func(t *testing.T) {
				ulp := 0x1p-52
				if dt == lathe.Float32 {
					ulp = 0x1p-23
				}
				p := toDType(t, optimP0, dt, 2, 3).RequireGrad()
				handle := p // the optimizer must rebind this very pointer
				opt, err := mk([]Param{{Name: "p", T: p}})
				if err != nil {
					t.Fatal(err)
				}
				refs := optimRef[name][dt.String()]
				if len(refs) != len(optimG) {
					t.Fatalf("%d reference steps for %d gradients", len(refs), len(optimG))
				}
				for s, g := range optimG {
					opt.ZeroGrad()
					if err := p.Backward(lathe.WithGradient(toDType(t, g, dt, 2, 3))); err != nil {
						t.Fatal(err)
					}
					if err := opt.Step(); err != nil {
						t.Fatal(err)
					}
					if !handle.RequiresGrad() || !handle.IsLeaf() {
						t.Fatalf("step %d: the parameter is no longer a leaf that requires a gradient", s+1)
					}
					if handle.DType() != dt {
						t.Fatalf("step %d: dtype became %v", s+1, handle.DType())
					}
					assertClose(t, "step "+strconv.Itoa(s+1), values(t, handle), refs[s], 2*ulp)
				}
			})
		}
	}
	for name := range optimRef {
		if optimCases[name] == nil {
			t.Errorf("%s: a reference without a case", name)
		}
	}
}

// TestOptimizerKeepsGradAfterStep checks that, as in torch, the gradient is
// still there after Step (so a second Step without backward repeats it) and
// that ZeroGrad clears it.
func TestOptimizerKeepsGradAfterStep(t *testing.T) {
	p := toDType(t, []float64{1, 2}, lathe.Float64, 2).RequireGrad()
	opt, err := NewSGD([]Param{{"p", p}}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(lathe.WithGradient(toDType(t, []float64{1, -1}, lathe.Float64, 2))); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	assertClose(t, "p", values(t, p), []float64{0, 3}, 0)
	opt.ZeroGrad()
	if p.Grad() != nil {
		t.Fatal("ZeroGrad left a gradient")
	}
	if err := opt.Step(); err != nil { // no gradient: nothing to do
		t.Fatal(err)
	}
	assertClose(t, "p", values(t, p), []float64{0, 3}, 0)
}

// TestOptimizerUpdatesModel checks that a step on a module's Parameters is
// what the module computes with next (the handles are shared).
func TestOptimizerUpdatesModel(t *testing.T) {
	l := NewLinear(2, 1, WithDType(lathe.Float64))
	opt, err := NewSGD(l.Parameters(), 1)
	if err != nil {
		t.Fatal(err)
	}
	w0 := values(t, l.Weight)
	if err := l.Weight.Backward(lathe.WithGradient(toDType(t, []float64{1, 2}, lathe.Float64, 1, 2))); err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	assertClose(t, "weight", values(t, l.Parameters()[0].T), []float64{w0[0] - 1, w0[1] - 2}, 1e-15)
	b := values(t, l.Bias)
	y := values(t, l.Forward(toDType(t, []float64{1, 0}, lathe.Float64, 1, 2)))
	assertClose(t, "forward", y, []float64{w0[0] - 1 + b[0]}, 1e-15)
}

// TestOptimizerStepIsAtomic: a step whose second parameter's gradient is
// unusable (released) fails and leaves the first parameter unchanged too.
func TestOptimizerStepIsAtomic(t *testing.T) {
	a := toDType(t, []float64{1, 2}, lathe.Float64, 2).RequireGrad()
	b := toDType(t, []float64{3, 4}, lathe.Float64, 2).RequireGrad()
	opt, err := NewAdam([]Param{{"a", a}, {"b", b}}, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Backward(lathe.WithGradient(toDType(t, []float64{1, 1}, lathe.Float64, 2))); err != nil {
		t.Fatal(err)
	}
	if err := b.Backward(lathe.WithGradient(toDType(t, []float64{1, 1}, lathe.Float64, 2))); err != nil {
		t.Fatal(err)
	}
	b.Grad().Release()
	if err := opt.Step(); !errors.Is(err, lathe.ErrReleased) {
		t.Fatalf("Step with a released gradient: got %v, want ErrReleased", err)
	}
	assertClose(t, "a", values(t, a), []float64{1, 2}, 0)
	assertClose(t, "b", values(t, b), []float64{3, 4}, 0)
}

func TestOptimizerErrors(t *testing.T) {
	p := []Param{{"p", toDType(t, []float64{1}, lathe.Float32, 1).RequireGrad()}}
	bad := NewLinear(-1, 2)
	cases := map[string]func() error{
		"sgd/empty":             func() error { _, err := NewSGD(nil, 0.1); return err },
		"sgd/lr<0":              func() error { _, err := NewSGD(p, -1); return err },
		"sgd/nesterov/nomom":    func() error { _, err := NewSGD(p, 0.1, Nesterov()); return err },
		"sgd/nesterov/dampened": func() error { _, err := NewSGD(p, 0.1, Momentum(0.9), Dampening(0.5), Nesterov()); return err },
		"sgd/momentum<0":        func() error { _, err := NewSGD(p, 0.1, Momentum(-1)); return err },
		"adam/beta1=1":          func() error { _, err := NewAdam(p, 0.1, Betas(1, 0.999)); return err },
		"adam/eps=nan":          func() error { _, err := NewAdam(p, 0.1, Eps(math.NaN())); return err },
		"adamw/wd<0":            func() error { _, err := NewAdamW(p, 0.1, WeightDecay(-1)); return err },
		"adam/int": func() error {
			_, err := NewAdam([]Param{{"i", lathe.Zeros(lathe.CPU, lathe.Int32, 2)}}, 0.1)
			return err
		},
		"adam/nil":              func() error { _, err := NewAdam([]Param{{"n", nil}}, 0.1); return err },
		"rmsprop/alpha<0":       func() error { _, err := NewRMSprop(p, 0.1, Alpha(-0.1)); return err },
		"rmsprop/momentum<0":    func() error { _, err := NewRMSprop(p, 0.1, Momentum(-1)); return err },
		"rmsprop/lr=nan":        func() error { _, err := NewRMSprop(p, math.NaN()); return err },
		"adagrad/lr_decay<0":    func() error { _, err := NewAdagrad(p, 0.1, LRDecay(-1)); return err },
		"adagrad/initial_acc<0": func() error { _, err := NewAdagrad(p, 0.1, InitialAccumulator(-1)); return err },
		"adagrad/eps<0":         func() error { _, err := NewAdagrad(p, 0.1, Eps(-1)); return err },
		"sgd/zero-option":       func() error { _, err := NewSGD(p, 0.1, OptimOption{}); return err },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			err := f()
			if !errors.Is(err, lathe.ErrValue) {
				t.Fatalf("got %v, want ErrValue", err)
			}
			// Each says what would do (a bad hyperparameter once said only
			// `argument "lr" is -1`).
			if e := (*lathe.Error)(nil); !errors.As(err, &e) || e.Fix == "" {
				t.Errorf("%v: no fix", err)
			}
		})
	}
	t.Run("sgd/failed-layer", func(t *testing.T) {
		if _, err := NewSGD(bad.Parameters(), 0.1); !errors.Is(err, lathe.ErrShape) {
			t.Fatalf("got %v, want the layer's ErrShape", err)
		}
	})
}

// TestOptimizerRefusesOthersOptions: an option the optimizer does not take
// is an ErrValue that names it, as torch refuses an unknown keyword.
func TestOptimizerRefusesOthersOptions(t *testing.T) {
	p := []Param{{"p", toDType(t, []float64{1}, lathe.Float32, 1).RequireGrad()}}
	cases := []struct {
		name, arg string
		make      func() error
	}{
		{"sgd/betas", "betas", func() error { _, err := NewSGD(p, 0.1, Betas(0.9, 0.99)); return err }},
		{"sgd/eps", "eps", func() error { _, err := NewSGD(p, 0.1, Eps(1e-8)); return err }},
		{"adam/momentum", "momentum", func() error { _, err := NewAdam(p, 0.1, Momentum(0.9)); return err }},
		{"adamw/centered", "centered", func() error { _, err := NewAdamW(p, 0.1, Centered()); return err }},
		{"rmsprop/nesterov", "nesterov", func() error { _, err := NewRMSprop(p, 0.1, Nesterov()); return err }},
		{"rmsprop/lr_decay", "lr_decay", func() error { _, err := NewRMSprop(p, 0.1, LRDecay(0.1)); return err }},
		{"adagrad/momentum", "momentum", func() error { _, err := NewAdagrad(p, 0.1, Momentum(0.9)); return err }},
		{"adagrad/alpha", "alpha", func() error { _, err := NewAdagrad(p, 0.1, Alpha(0.9)); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.make()
			var e *lathe.Error
			if !errors.Is(err, lathe.ErrValue) || !errors.As(err, &e) || e.Arg != c.arg {
				t.Fatalf("got %v, want an ErrValue naming %s", err, c.arg)
			}
		})
	}
}

// TestGradientAccumulation: Backward adds to the gradient a parameter
// already has, as PyTorch's does, so that two half batches' backward
// passes, each loss halved, before one Step give the step of the whole
// batch; ZeroGrad is what starts a new sum.
func TestGradientAccumulation(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float64{0.5, -1, 2, 1.5, 0.25, -0.75, -2, 1}, 4, 2)
	y := lathe.FromSlice(lathe.CPU, []float64{1, 0, 0, 1}, 4, 1)
	run := func(accumulate bool) [][]float64 {
		lathe.Seed(7)
		m := NewLinear(2, 1, WithDType(lathe.Float64))
		opt, err := NewSGD(m.Parameters(), 0.1, Momentum(0.9)) // a step linear in the gradient
		mustOK(t, err)
		for range 3 {
			opt.ZeroGrad()
			if accumulate {
				for _, rows := range [][2]int{{0, 2}, {2, 2}} {
					xs, ys := x.Narrow(0, rows[0], rows[1]), y.Narrow(0, rows[0], rows[1])
					mustOK(t, MSE(m.Forward(xs), ys).MulScalar(0.5).Backward())
				}
			} else {
				mustOK(t, MSE(m.Forward(x), y).Backward())
			}
			mustOK(t, opt.Step())
		}
		return [][]float64{values(t, m.Weight), values(t, m.Bias)}
	}
	whole, halves := run(false), run(true)
	for i := range whole {
		assertClose(t, "parameter", halves[i], whole[i], 1e-15)
	}
}

// TestStepRefusesReleased: a parameter or a gradient released before Step
// is an ErrReleased naming it, from every optimizer, and the step changes
// no parameter. (Grad of a released parameter is nil, which a step once
// took for "no gradient" and skipped, returning nil.)
func TestStepRefusesReleased(t *testing.T) {
	makers := map[string]func([]Param) (Optimizer, error){
		"sgd":     func(p []Param) (Optimizer, error) { return NewSGD(p, 0.1, Momentum(0.9)) },
		"adam":    func(p []Param) (Optimizer, error) { return NewAdam(p, 0.1) },
		"adamw":   func(p []Param) (Optimizer, error) { return NewAdamW(p, 0.1) },
		"rmsprop": func(p []Param) (Optimizer, error) { return NewRMSprop(p, 0.1) },
		"adagrad": func(p []Param) (Optimizer, error) { return NewAdagrad(p, 0.1) },
	}
	for name, make := range makers {
		for _, released := range []string{"weight", "weight.grad"} {
			t.Run(name+"/"+released, func(t *testing.T) {
				lathe.Seed(3)
				m := NewLinear(3, 2)
				mustOK(t, m.Forward(lathe.RandN(lathe.CPU, lathe.Float32, 4, 3)).Sum().Backward())
				opt, err := make(m.Parameters())
				mustOK(t, err)
				bias, err := m.Bias.Float32s()
				mustOK(t, err)
				if released == "weight" {
					m.Weight.Release()
				} else {
					m.Weight.Grad().Release()
				}
				err = opt.Step()
				var e *lathe.Error
				if !errors.Is(err, lathe.ErrReleased) || !errors.As(err, &e) || e.Arg != released {
					t.Fatalf("Step: %v, want an ErrReleased naming %q", err, released)
				}
				after, err := m.Bias.Float32s()
				mustOK(t, err)
				if !slices.Equal(bias, after) {
					t.Errorf("the failed step moved the bias: %v -> %v", bias, after)
				}
			})
		}
	}
}

// TestFailedStepGivesBackItsTensors: a step that fails at a later
// parameter gives back the next values and states it made for the earlier
// ones (on a device, memory the collector would free only later).
func TestFailedStepGivesBackItsTensors(t *testing.T) {
	dev := lathe.WGPU(0)
	if _, err := lathe.MemoryStats(dev); err != nil {
		t.Skipf("wgpu:0 does not open: %v", err)
	}
	m := Sequential(NewLinear(64, 64), NewLinear(64, 2))
	if err := m.To(dev); err != nil {
		t.Fatal(err)
	}
	opt, err := NewAdam(m.Parameters(), 0.1)
	mustOK(t, err)
	mustOK(t, m.Forward(lathe.RandN(dev, lathe.Float32, 8, 64)).Sum().Backward())
	ps := m.Parameters()
	ps[len(ps)-1].T.Grad().Release()
	before := settledAllocated(t, dev)
	if err := opt.Step(); !errors.Is(err, lathe.ErrReleased) {
		t.Fatalf("Step: %v, want ErrReleased", err)
	}
	if after, _ := lathe.MemoryStats(dev); after.Allocated > before { // as TestModuleToHalfway reads it
		t.Errorf("wgpu:0 holds %d bytes after the failed step, %d before", after.Allocated, before)
	}
}
