package nn

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

func schedSGD(t *testing.T, lr float64, opts ...OptimOption) *SGD {
	t.Helper()
	opt, err := NewSGD([]Param{{"p", lathe.Zeros(lathe.CPU, lathe.Float32, 2).RequireGrad()}}, lr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// schedCases are the cases of build/torchref/optim_ref.py by the same
// names: each makes an optimizer and a scheduler on it, and returns the
// optimizer and the scheduler's step (on plateauMetrics[e] for
// ReduceLROnPlateau).
var schedCases = map[string]func(t *testing.T) (Optimizer, func(e int) error){
	"step/3/0.5": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		return o, stepper(NewStepLR(o, 3, 0.5))
	},
	"multistep/[5,10,10,20]/0.3": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		return o, stepper(NewMultiStepLR(o, []int{20, 5, 10, 10}, 0.3))
	},
	"exponential/0.9": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		return o, stepper(NewExponentialLR(o, 0.9))
	},
	"cosine/10": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		return o, stepper(NewCosineAnnealingLR(o, 10, 0))
	},
	"cosine/7/eta_min": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.5)
		return o, stepper(NewCosineAnnealingLR(o, 7, 0.01))
	},
	"linear/warmup": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		return o, stepper(NewLinearLR(o, 0.25, 1, 8))
	},
	"linear/decay": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		return o, stepper(NewLinearLR(o, 1, 0.1, 5))
	},
	"sequential/exp+step+cosine": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		a, err1 := NewExponentialLR(o, 0.9)
		b, err2 := NewStepLR(o, 3, 0.5)
		c, err3 := NewCosineAnnealingLR(o, 10, 0.001)
		if err := firstErr(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		return o, stepper(NewSequentialLR(o, []LRScheduler{a, b, c}, []int{4, 12}))
	},
	"warmup_cosine": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		return o, stepper(NewWarmupCosine(o, 5, 30, 0.1, 1e-4))
	},
	"onecycle/sgd": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1, Momentum(0.9))
		return o, stepper(NewOneCycleLR(o, DefaultOneCycle(1, 30)))
	},
	"onecycle/adam/linear/three_phase": func(t *testing.T) (Optimizer, func(int) error) {
		o, err := NewAdam([]Param{{"p", lathe.Zeros(lathe.CPU, lathe.Float32, 2).RequireGrad()}}, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultOneCycle(0.5, 30)
		cfg.PctStart, cfg.AnnealLinear, cfg.ThreePhase, cfg.DivFactor, cfg.FinalDivFactor = 0.25, true, true, 10, 100
		return o, stepper(NewOneCycleLR(o, cfg))
	},
	"onecycle/sgd/no_momentum": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		cfg := DefaultOneCycle(0.3, 30)
		cfg.CycleMomentum = false
		return o, stepper(NewOneCycleLR(o, cfg))
	},
	"plateau/min/rel": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		cfg := DefaultPlateau()
		cfg.Patience = 2
		return o, plateauStepper(t, o, cfg)
	},
	"plateau/min/abs/cooldown/min_lr": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		cfg := DefaultPlateau()
		cfg.Factor, cfg.Patience, cfg.Threshold, cfg.ThresholdMode, cfg.Cooldown, cfg.MinLR = 0.5, 1, 0.05, "abs", 2, 0.02
		return o, plateauStepper(t, o, cfg)
	},
	"plateau/max/rel": func(t *testing.T) (Optimizer, func(int) error) {
		o := schedSGD(t, 0.1)
		cfg := DefaultPlateau()
		cfg.Mode, cfg.Factor, cfg.Patience, cfg.Threshold = "max", 0.5, 0, 0.01
		return o, plateauStepper(t, o, cfg)
	},
}

func stepper[S LRScheduler](s S, err error) func(int) error {
	if err != nil {
		return func(int) error { return err }
	}
	return func(int) error { return s.Step() }
}

func plateauStepper(t *testing.T, o Optimizer, cfg PlateauConfig) func(int) error {
	s, err := NewReduceLROnPlateau(o, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return func(e int) error { return s.Step(plateauMetrics[e]) }
}

func momentumOf(o Optimizer) float64 {
	switch o := o.(type) {
	case *SGD:
		return o.Momentum
	case *Adam:
		return o.Betas[0]
	}
	return math.NaN()
}

// TestSchedulersMatchTorch steps each scheduler 30 times and compares the
// learning rate (and OneCycleLR's momentum) after each step with PyTorch's
// sequence. The rules are torch's in the same float64 operations, so what
// may differ is Go's math.Cos against the C library's, a unit in the last
// place that the chainable forms carry along.
func TestSchedulersMatchTorch(t *testing.T) {
	for name, mk := range schedCases {
		t.Run(name, func(t *testing.T) {
			want, ok := schedRef[name]
			if !ok {
				t.Fatalf("no reference in optim_torchref_test.go; run build/torchref/optim_ref.py")
			}
			opt, step := mk(t)
			plateau := strings.HasPrefix(name, "plateau")
			var got, moms []float64
			if !plateau {
				got = append(got, opt.LearningRate())
			}
			moms = append(moms, momentumOf(opt))
			for e := range plateauMetrics {
				if err := step(e); err != nil {
					t.Fatalf("step %d: %v", e+1, err)
				}
				got = append(got, opt.LearningRate())
				moms = append(moms, momentumOf(opt))
			}
			assertClose(t, "lr", got, want, 4*0x1p-52)
			if m, ok := schedRef[name+"/momentum"]; ok {
				assertClose(t, "momentum", moms, m, 4*0x1p-52)
			}
		})
	}
	for name := range schedRef {
		if schedCases[strings.TrimSuffix(name, "/momentum")] == nil {
			t.Errorf("%s: a reference without a case", name)
		}
	}
}

// TestOneCyclePastTheEnd: a step past total_steps is an ErrValue, as in
// torch, and changes nothing.
func TestOneCyclePastTheEnd(t *testing.T) {
	o := schedSGD(t, 0.1, Momentum(0.9))
	s, err := NewOneCycleLR(o, DefaultOneCycle(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.Step(); err != nil {
			t.Fatal(err)
		}
	}
	lr, mom, e := o.LR, o.Momentum, s.Epoch()
	if err := s.Step(); !errors.Is(err, lathe.ErrValue) {
		t.Fatalf("step 4 of 3: got %v, want ErrValue", err)
	}
	if o.LR != lr || o.Momentum != mom || s.Epoch() != e || s.LastLR() != lr {
		t.Fatal("a failed step changed the optimizer or the scheduler")
	}
}

func TestSchedulerErrors(t *testing.T) {
	cases := map[string]func(o *SGD) error{
		"step/size=0":          func(o *SGD) error { _, err := NewStepLR(o, 0, 0.1); return err },
		"step/gamma=nan":       func(o *SGD) error { _, err := NewStepLR(o, 1, math.NaN()); return err },
		"step/nil":             func(o *SGD) error { _, err := NewStepLR(nil, 1, 0.1); return err },
		"multistep/gamma<0":    func(o *SGD) error { _, err := NewMultiStepLR(o, []int{1}, -1); return err },
		"exponential/gamma<0":  func(o *SGD) error { _, err := NewExponentialLR(o, -1); return err },
		"cosine/T_max=0":       func(o *SGD) error { _, err := NewCosineAnnealingLR(o, 0, 0); return err },
		"linear/start=0":       func(o *SGD) error { _, err := NewLinearLR(o, 0, 1, 5); return err },
		"linear/end>1":         func(o *SGD) error { _, err := NewLinearLR(o, 0.5, 2, 5); return err },
		"linear/iters=0":       func(o *SGD) error { _, err := NewLinearLR(o, 0.5, 1, 0); return err },
		"sequential/milestone": func(o *SGD) error { _, err := NewSequentialLR(o, nil, []int{1}); return err },
		"sequential/other-opt": func(o *SGD) error {
			other, _ := NewSGD([]Param{{"q", lathe.Zeros(lathe.CPU, lathe.Float32, 1).RequireGrad()}}, 0.1)
			s, err := NewStepLR(other, 1, 0.5)
			if err != nil {
				return err
			}
			_, err = NewSequentialLR(o, []LRScheduler{s}, nil)
			return err
		},
		"warmup_cosine/warmup=total": func(o *SGD) error { _, err := NewWarmupCosine(o, 5, 5, 0.1, 0); return err },
		"warmup_cosine/eta_min=inf":  func(o *SGD) error { _, err := NewWarmupCosine(o, 5, 10, 0.1, math.Inf(1)); return err },
		"onecycle/steps=0":           func(o *SGD) error { _, err := NewOneCycleLR(o, DefaultOneCycle(1, 0)); return err },
		"onecycle/pct>1": func(o *SGD) error {
			cfg := DefaultOneCycle(1, 10)
			cfg.PctStart = 1.5
			_, err := NewOneCycleLR(o, cfg)
			return err
		},
		"plateau/mode": func(o *SGD) error {
			c := DefaultPlateau()
			c.Mode = "low"
			_, err := NewReduceLROnPlateau(o, c)
			return err
		},
		"plateau/factor=1": func(o *SGD) error {
			c := DefaultPlateau()
			c.Factor = 1
			_, err := NewReduceLROnPlateau(o, c)
			return err
		},
		"plateau/thr_mode": func(o *SGD) error {
			c := DefaultPlateau()
			c.ThresholdMode = "x"
			_, err := NewReduceLROnPlateau(o, c)
			return err
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			o := schedSGD(t, 0.1)
			if err := f(o); !errors.Is(err, lathe.ErrValue) {
				t.Fatalf("got %v, want ErrValue", err)
			}
			if o.LR != 0.1 || o.hasInitialLR {
				t.Fatalf("a failed constructor changed the optimizer: lr %v, initial_lr set %v", o.LR, o.hasInitialLR)
			}
		})
	}
	t.Run("onecycle/adagrad", func(t *testing.T) {
		o, err := NewAdagrad([]Param{{"p", lathe.Zeros(lathe.CPU, lathe.Float32, 2).RequireGrad()}}, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewOneCycleLR(o, DefaultOneCycle(1, 10)); !errors.Is(err, lathe.ErrValue) {
			t.Fatalf("got %v, want ErrValue: Adagrad has no momentum to cycle", err)
		}
	})
}

// TestZeroSchedulers: a scheduler's zero value (a declared var, not made
// by its constructor) has no optimizer; its Step is an ErrValue naming
// the type and its constructor, where it panicked.
func TestZeroSchedulers(t *testing.T) {
	for name, step := range map[string]func() error{
		"StepLR":            new(StepLR).Step,
		"MultiStepLR":       new(MultiStepLR).Step,
		"ExponentialLR":     new(ExponentialLR).Step,
		"CosineAnnealingLR": new(CosineAnnealingLR).Step,
		"LinearLR":          new(LinearLR).Step,
		"OneCycleLR":        new(OneCycleLR).Step,
		"SequentialLR":      new(SequentialLR).Step,
		"ReduceLROnPlateau": func() error { return new(ReduceLROnPlateau).Step(1) },
	} {
		if err := step(); !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), "nn.New"+name) {
			t.Errorf("a zero %s's Step: %v, want an ErrValue naming nn.New%s", name, err, name)
		}
	}
}
