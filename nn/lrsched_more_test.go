package nn

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// sched2Cases are the scheduler cases of build/torchref/optim2_ref.py by
// the same names; each makes an optimizer and a scheduler on it and
// returns the optimizer and the scheduler's step.
var sched2Cases = map[string]func(t *testing.T) (Optimizer, func() error){
	"lambda/inverse": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		return o, step2(NewLambdaLR(o, func(e int) float64 { return 1 / (1 + 0.5*float64(e)) }))
	},
	"lambda/warmup_steps": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.2)
		return o, step2(NewLambdaLR(o, func(e int) float64 { return min(1.0, float64(e+1)/8) }))
	},
	"multiplicative/0.9": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		return o, step2(NewMultiplicativeLR(o, func(int) float64 { return 0.9 }))
	},
	"multiplicative/alternating": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		return o, step2(NewMultiplicativeLR(o, func(e int) float64 {
			if e%3 == 0 {
				return 1.1
			}
			return 0.8
		}))
	},
	"constant/default": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		return o, step2(NewConstantLR(o, 1.0/3, 5))
	},
	"constant/0.25/7": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		return o, step2(NewConstantLR(o, 0.25, 7))
	},
	"polynomial/default": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		return o, step2(NewPolynomialLR(o, 5, 1))
	},
	"polynomial/12/2.5": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		return o, step2(NewPolynomialLR(o, 12, 2.5))
	},
	"polynomial/10/0.5": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.3)
		return o, step2(NewPolynomialLR(o, 10, 0.5))
	},
	"warm_restarts/5": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		return o, step2(NewCosineAnnealingWarmRestarts(o, 5, 1, 0))
	},
	"warm_restarts/3/2/eta_min": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.5)
		return o, step2(NewCosineAnnealingWarmRestarts(o, 3, 2, 0.01))
	},
	"cyclic/triangular": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1, Momentum(0.9))
		cfg := DefaultCyclic(0.01, 0.1)
		cfg.StepSizeUp = 4
		return o, step2(NewCyclicLR(o, cfg))
	},
	"cyclic/triangular2/down": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1, Momentum(0.9))
		cfg := DefaultCyclic(0.001, 0.05)
		cfg.StepSizeUp, cfg.StepSizeDown, cfg.Mode, cfg.BaseMomentum, cfg.MaxMomentum = 3, 5, "triangular2", 0.7, 0.95
		return o, step2(NewCyclicLR(o, cfg))
	},
	"cyclic/exp_range/no_momentum": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		cfg := DefaultCyclic(0.02, 0.2)
		cfg.StepSizeUp, cfg.Mode, cfg.Gamma, cfg.CycleMomentum = 5, "exp_range", 0.95, false
		return o, step2(NewCyclicLR(o, cfg))
	},
	"chained/constant+exponential": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		a, err1 := NewConstantLR(o, 0.5, 4)
		b, err2 := NewExponentialLR(o, 0.9)
		mustOK(t, err1, err2)
		return o, step2(NewChainedScheduler(a, b))
	},
	"chained/cyclic+multiplicative": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1, Momentum(0.9))
		cfg := DefaultCyclic(0.01, 0.1)
		cfg.StepSizeUp, cfg.Mode = 3, "triangular2"
		a, err1 := NewCyclicLR(o, cfg)
		b, err2 := NewMultiplicativeLR(o, func(int) float64 { return 0.97 })
		mustOK(t, err1, err2)
		return o, step2(NewChainedScheduler(a, b))
	},
	"sequential/lambda+warm_restarts": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		a, err1 := NewLambdaLR(o, func(e int) float64 { return float64(e+1) / 5 })
		b, err2 := NewCosineAnnealingWarmRestarts(o, 4, 2, 0.001)
		mustOK(t, err1, err2)
		return o, step2(NewSequentialLR(o, []LRScheduler{a, b}, []int{5}))
	},
	"warm_restarts/step_at": func(t *testing.T) (Optimizer, func() error) {
		o := schedSGD(t, 0.1)
		s, err := NewCosineAnnealingWarmRestarts(o, 2, 3, 0.005)
		mustOK(t, err)
		e := 0
		return o, func() error {
			if e >= len(warmEpochs) {
				return nil // the reference stops here
			}
			e++
			return s.StepAt(warmEpochs[e-1])
		}
	},
}

func step2[S LRScheduler](s S, err error) func() error {
	if err != nil {
		return func() error { return err }
	}
	if r, ok := any(s).(Resumable); ok {
		if c, ok := any(s).(interface{ core() *schedCore }); ok {
			lastSched[c.core().opt] = r
		}
	}
	return s.Step
}

// TestMoreSchedulersMatchTorch steps each scheduler 30 times (the
// fractional-epoch case through its epochs) and compares the learning
// rate, and CyclicLR's momentum, with PyTorch's after each step.
func TestMoreSchedulersMatchTorch(t *testing.T) {
	testenv.HostOnly(t)
	for name, mk := range sched2Cases {
		t.Run(name, func(t *testing.T) {
			want, ok := sched2Ref[name]
			if !ok {
				t.Fatalf("no reference in optim2_torchref_test.go; run build/torchref/optim2_ref.py")
			}
			opt, step := mk(t)
			got, moms := []float64{opt.LearningRate()}, []float64{momentumOf(opt)}
			for len(got) < len(want) {
				if err := step(); err != nil {
					t.Fatalf("step %d: %v", len(got), err)
				}
				got = append(got, opt.LearningRate())
				moms = append(moms, momentumOf(opt))
			}
			assertClose(t, "lr", got, want, 4*0x1p-52)
			if m, ok := sched2Ref[name+"/momentum"]; ok {
				assertClose(t, "momentum", moms, m, 4*0x1p-52)
			}
		})
	}
	for name := range sched2Ref {
		if sched2Cases[strings.TrimSuffix(name, "/momentum")] == nil {
			t.Errorf("%s: a reference without a case", name)
		}
	}
}

// TestMoreSchedulerErrors: settings torch refuses, and those it takes but
// then divides by zero or sets a NaN learning rate with, are ErrValues
// that name the setting; a failed step changes nothing.
func TestMoreSchedulerErrors(t *testing.T) {
	testenv.HostOnly(t)
	nan := math.NaN()
	cases := []struct {
		name, arg string
		make      func(o *SGD) error
	}{
		{"lambda nil", "lr_lambda", func(o *SGD) error { _, err := NewLambdaLR(o, nil); return err }},
		{"lambda NaN at 0", "lr_lambda(0)", func(o *SGD) error {
			_, err := NewLambdaLR(o, func(int) float64 { return nan })
			return err
		}},
		{"multiplicative nil", "lr_lambda", func(o *SGD) error { _, err := NewMultiplicativeLR(o, nil); return err }},
		{"constant factor > 1", "factor", func(o *SGD) error { _, err := NewConstantLR(o, 1.5, 3); return err }},
		{"constant factor NaN", "factor", func(o *SGD) error { _, err := NewConstantLR(o, nan, 3); return err }},
		{"polynomial power < 0", "power", func(o *SGD) error { _, err := NewPolynomialLR(o, 5, -1); return err }},
		{"polynomial power NaN", "power", func(o *SGD) error { _, err := NewPolynomialLR(o, 5, nan); return err }},
		{"warm restarts T_0", "T_0", func(o *SGD) error { _, err := NewCosineAnnealingWarmRestarts(o, 0, 1, 0); return err }},
		{"warm restarts T_mult", "T_mult", func(o *SGD) error { _, err := NewCosineAnnealingWarmRestarts(o, 3, 0, 0); return err }},
		{"warm restarts eta_min", "eta_min", func(o *SGD) error {
			_, err := NewCosineAnnealingWarmRestarts(o, 3, 1, math.Inf(1))
			return err
		}},
		{"cyclic mode", "mode", func(o *SGD) error {
			cfg := DefaultCyclic(0.1, 1)
			cfg.Mode = "sawtooth"
			_, err := NewCyclicLR(o, cfg)
			return err
		}},
		{"cyclic step size", "step_size_up", func(o *SGD) error {
			cfg := DefaultCyclic(0.1, 1)
			cfg.StepSizeUp = 0
			_, err := NewCyclicLR(o, cfg)
			return err
		}},
		{"cyclic base_lr", "base_lr", func(o *SGD) error { _, err := NewCyclicLR(o, DefaultCyclic(-0.1, 1)); return err }},
		{"cyclic max_lr", "max_lr", func(o *SGD) error { _, err := NewCyclicLR(o, DefaultCyclic(0.1, nan)); return err }},
		{"cyclic base_momentum", "base_momentum", func(o *SGD) error {
			cfg := DefaultCyclic(0.1, 1)
			cfg.BaseMomentum = -1
			_, err := NewCyclicLR(o, cfg)
			return err
		}},
		{"cyclic scale_fn Inf", "the schedule at step 0", func(o *SGD) error {
			cfg := DefaultCyclic(0.1, 1)
			cfg.ScaleFn, cfg.ScaleMode = func(float64) float64 { return math.Inf(1) }, "cycle"
			_, err := NewCyclicLR(o, cfg)
			return err
		}},
		{"chained empty", "schedulers", func(o *SGD) error { _, err := NewChainedScheduler(); return err }},
		{"chained nil", "schedulers[0]", func(o *SGD) error { _, err := NewChainedScheduler(nil); return err }},
	}
	for _, c := range cases {
		o := schedSGD(t, 0.1, Momentum(0.5))
		err := c.make(o)
		var le *lathe.Error
		if !errors.Is(err, lathe.ErrValue) || !errors.As(err, &le) || le.Arg != c.arg {
			t.Errorf("%s: got %v, want an ErrValue naming %s", c.name, err, c.arg)
		}
		if o.LR != 0.1 || o.Momentum != 0.5 || o.hasInitialLR {
			t.Errorf("%s: the failed constructor changed the optimizer: lr %v momentum %v initial_lr %v", c.name, o.LR, o.Momentum, o.hasInitialLR)
		}
	}

	// CyclicLR with momentum needs SGD or RMSprop, as torch's needs
	// 'momentum' in the defaults.
	adam, err := NewAdam([]Param{{"p", lathe.Zeros(lathe.CPU, lathe.Float32, 2).RequireGrad()}}, 0.1)
	mustOK(t, err)
	if _, err := NewCyclicLR(adam, DefaultCyclic(0.1, 1)); !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), "cycle_momentum") {
		t.Errorf("CyclicLR on Adam with momentum cycling: got %v", err)
	}

	// Steps that fail change nothing.
	o := schedSGD(t, 0.1)
	lam, err := NewLambdaLR(o, func(e int) float64 {
		if e == 2 {
			return -1
		}
		return 1
	})
	mustOK(t, err, lam.Step())
	if err := lam.Step(); !errors.Is(err, lathe.ErrValue) || lam.Epoch() != 1 || o.LR != 0.1 {
		t.Errorf("LambdaLR to a negative rate: got %v, epoch %d, lr %v", err, lam.Epoch(), o.LR)
	}
	o = schedSGD(t, 0.1)
	c0, err := NewConstantLR(o, 0, 2)
	mustOK(t, err, c0.Step())
	if err := c0.Step(); !errors.Is(err, lathe.ErrValue) || o.LR != 0 || c0.Epoch() != 1 {
		t.Errorf("ConstantLR of factor 0 at total_iters: got %v, lr %v epoch %d", err, o.LR, c0.Epoch())
	}
	o = schedSGD(t, 0.1)
	w, err := NewCosineAnnealingWarmRestarts(o, 3, 2, 0)
	mustOK(t, err)
	for _, e := range []float64{-1, nan, math.Inf(1), 1e300} {
		if err := w.StepAt(e); !errors.Is(err, lathe.ErrValue) || o.LR != 0.1 || w.Epoch() != 0 || w.tCur != 0 || w.tI != 3 {
			t.Errorf("StepAt(%v): got %v, lr %v epoch %d T_cur %v T_i %v", e, err, o.LR, w.Epoch(), w.tCur, w.tI)
		}
	}
	// A ChainedScheduler whose second scheduler fails puts the first back.
	o = schedSGD(t, 0.1)
	ex, err1 := NewExponentialLR(o, 0.5)
	bad, err2 := NewMultiplicativeLR(o, func(e int) float64 {
		if e == 2 {
			return nan
		}
		return 1
	})
	mustOK(t, err1, err2)
	ch, err := NewChainedScheduler(ex, bad)
	mustOK(t, err, ch.Step())
	lr := o.LR
	if err := ch.Step(); !errors.Is(err, lathe.ErrValue) || o.LR != lr || ex.Epoch() != 1 || ex.LastLR() != lr || ch.Epoch() != 1 {
		t.Errorf("chained step with a failing scheduler: got %v, lr %v (was %v), exponential's epoch %d", err, o.LR, lr, ex.Epoch())
	}
}

// TestSequentialRefusesComposites: a SequentialLR or ChainedScheduler
// passed to NewSequentialLR is an ErrValue; stepped as a scheduler with a
// rule, it left the learning rate unchanged.
func TestSequentialRefusesComposites(t *testing.T) {
	testenv.HostOnly(t)
	o := schedSGD(t, 0.1)
	a, err1 := NewExponentialLR(o, 0.9)
	b, err2 := NewStepLR(o, 2, 0.5)
	mustOK(t, err1, err2)
	ch, err := NewChainedScheduler(a, b)
	mustOK(t, err)
	c, err := NewExponentialLR(o, 0.5)
	mustOK(t, err)
	if _, err := NewSequentialLR(o, []LRScheduler{ch, c}, []int{3}); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("a ChainedScheduler in a SequentialLR: got %v", err)
	}
	inner, err := NewSequentialLR(o, []LRScheduler{a, b}, []int{2})
	mustOK(t, err)
	if _, err := NewSequentialLR(o, []LRScheduler{c, inner}, []int{3}); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("a SequentialLR in a SequentialLR: got %v", err)
	}
}

// TestZeroMoreSchedulers: a scheduler's zero value steps to an error, not
// a panic.
func TestZeroMoreSchedulers(t *testing.T) {
	testenv.HostOnly(t)
	for _, s := range []LRScheduler{&LambdaLR{}, &MultiplicativeLR{}, &ConstantLR{}, &PolynomialLR{},
		&CosineAnnealingWarmRestarts{}, &CyclicLR{}, &ChainedScheduler{}} {
		if err := s.Step(); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("%T: Step of a zero value: got %v", s, err)
		}
	}
	if err := (&CosineAnnealingWarmRestarts{}).StepAt(1); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("StepAt of a zero value: got %v", err)
	}
}

// TestMoreSchedulersResume saves each scheduler mid-schedule with its
// optimizer, loads both into fresh ones, and requires the rest of the
// schedule to be an unbroken run's, bit for bit.
func TestMoreSchedulersResume(t *testing.T) {
	testenv.HostOnly(t)
	for name, mk := range sched2Cases {
		if name == "warm_restarts/step_at" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want := sched2Ref[name]
			opt, step := mk(t)
			for range 7 {
				mustOK(t, step())
			}
			var buf bytes.Buffer
			r := resumableOf(t, name, opt)
			mustOK(t, SaveOptimizer(&buf, opt, r))
			opt2, step2 := mk(t)
			r2 := resumableOf(t, name, opt2)
			mustOK(t, LoadOptimizer(&buf, opt2, r2))
			if opt2.LearningRate() != opt.LearningRate() {
				t.Fatalf("loaded lr %v, saved %v", opt2.LearningRate(), opt.LearningRate())
			}
			for e := 8; e < len(want); e++ {
				mustOK(t, step2())
				if got := opt2.LearningRate(); math.Abs(got-want[e]) > 4*0x1p-52*(1+math.Abs(want[e])) {
					t.Fatalf("resumed epoch %d: lr %v, torch %v", e, got, want[e])
				}
			}
		})
	}
}

// lastSched remembers the scheduler each case made last, by optimizer, for
// TestMoreSchedulersResume.
var lastSched = map[Optimizer]Resumable{}

func resumableOf(t *testing.T, name string, opt Optimizer) Resumable {
	t.Helper()
	r, ok := lastSched[opt]
	if !ok {
		t.Fatalf("%s: no scheduler recorded", name)
	}
	return r
}

// TestOneCycleMovesNewOptimizersBeta1: OneCycleLR cycles Adamax's,
// NAdam's and RAdam's β1 as Adam's (torch's 'betas' in the defaults), and
// refuses Adadelta, which has no momentum, with cycle_momentum on.
func TestOneCycleMovesNewOptimizersBeta1(t *testing.T) {
	testenv.HostOnly(t)
	ps := func() []Param { return []Param{{"p", lathe.Zeros(lathe.CPU, lathe.Float32, 2).RequireGrad()}} }
	adam, err := NewAdam(ps(), 0.1)
	mustOK(t, err)
	ref, err := NewOneCycleLR(adam, DefaultOneCycle(1, 10))
	mustOK(t, err)
	ax, err1 := NewAdamax(ps(), 0.1)
	na, err2 := NewNAdam(ps(), 0.1)
	ra, err3 := NewRAdam(ps(), 0.1)
	mustOK(t, err1, err2, err3)
	var scheds []*OneCycleLR
	for _, o := range []Optimizer{ax, na, ra} {
		s, err := NewOneCycleLR(o, DefaultOneCycle(1, 10))
		mustOK(t, err)
		scheds = append(scheds, s)
	}
	for range 5 {
		mustOK(t, ref.Step())
		for _, s := range scheds {
			mustOK(t, s.Step())
		}
		if ax.Betas[0] != adam.Betas[0] || na.Betas[0] != adam.Betas[0] || ra.Betas[0] != adam.Betas[0] || na.LR != adam.LR {
			t.Fatalf("beta1 %v %v %v, Adam's %v", ax.Betas[0], na.Betas[0], ra.Betas[0], adam.Betas[0])
		}
	}
	ad, err := NewAdadelta(ps(), 1)
	mustOK(t, err)
	if _, err := NewOneCycleLR(ad, DefaultOneCycle(1, 10)); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("OneCycleLR with momentum on Adadelta: got %v", err)
	}
}
