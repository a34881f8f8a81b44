package nn

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/lathe-ml/lathe"
)

// resumeCase makes an optimizer and its schedulers over a model's
// parameters, and steps the schedulers after each optimizer step.
type resumeCase struct {
	name string
	make func(t *testing.T, ps []Param) (Optimizer, func(loss float64), []Resumable)
}

var resumeCases = []resumeCase{
	{"sgd/momentum/steplr", func(t *testing.T, ps []Param) (Optimizer, func(float64), []Resumable) {
		o, err := NewSGD(ps, 0.1, Momentum(0.9), Nesterov(), WeightDecay(0.01))
		s, err2 := NewStepLR(o, 2, 0.5)
		mustOK(t, err, err2)
		return o, func(float64) { mustOK(t, s.Step()) }, []Resumable{s}
	}},
	{"adam/onecycle", func(t *testing.T, ps []Param) (Optimizer, func(float64), []Resumable) {
		o, err := NewAdamW(ps, 0.01)
		s, err2 := NewOneCycleLR(o, DefaultOneCycle(0.05, 10))
		mustOK(t, err, err2)
		return o, func(float64) { mustOK(t, s.Step()) }, []Resumable{s}
	}},
	{"rmsprop/warmup_cosine+plateau", func(t *testing.T, ps []Param) (Optimizer, func(float64), []Resumable) {
		o, err := NewRMSprop(ps, 0.01, Momentum(0.5), Centered())
		s, err2 := NewWarmupCosine(o, 3, 10, 0.1, 1e-4)
		cfg := DefaultPlateau()
		cfg.Patience, cfg.Factor = 0, 0.5
		p, err3 := NewReduceLROnPlateau(o, cfg)
		mustOK(t, err, err2, err3)
		return o, func(loss float64) { mustOK(t, s.Step()); p.Step(-loss) }, []Resumable{s, p}
	}},
	{"adagrad/exponential", func(t *testing.T, ps []Param) (Optimizer, func(float64), []Resumable) {
		o, err := NewAdagrad(ps, 0.1, LRDecay(0.1), InitialAccumulator(0.1))
		s, err2 := NewExponentialLR(o, 0.9)
		mustOK(t, err, err2)
		return o, func(float64) { mustOK(t, s.Step()) }, []Resumable{s}
	}},
}

func mustOK(t *testing.T, errs ...error) {
	t.Helper()
	if err := firstErr(errs...); err != nil {
		t.Fatal(err)
	}
}

// resumeModel is a small model whose every parameter gets a gradient.
func resumeModel(seed uint64) Module {
	lathe.Seed(seed)
	return Sequential(NewLinear(3, 4), Tanh{}, NewLinear(4, 2))
}

func trainSteps(t *testing.T, m Module, opt Optimizer, sched func(float64), n int) {
	t.Helper()
	x := lathe.FromSlice(lathe.CPU, []float32{0.5, -1, 2, 1.5, 0.25, -0.75, -2, 1, 0.1, 0.3, 0.6, -0.9}, 4, 3)
	y := lathe.FromSlice(lathe.CPU, []float32{1, 0, 0, 1, 1, 1, 0, 0}, 4, 2)
	for range n {
		opt.ZeroGrad()
		loss := MSE(m.Forward(x), y)
		mustOK(t, loss.Backward(), opt.Step())
		l, err := loss.Item()
		mustOK(t, err)
		sched(l)
	}
}

func paramBits(t *testing.T, m Module) [][]float32 {
	var out [][]float32
	for _, p := range m.Parameters() {
		v, err := p.T.Float32s()
		mustOK(t, err)
		out = append(out, v)
	}
	return out
}

// TestResumeIsExact trains N steps, saves the model, optimizer and
// schedulers, loads them into fresh ones, trains M more, and requires the
// parameters and learning rate to be bit for bit those of an unbroken
// N+M-step run.
func TestResumeIsExact(t *testing.T) {
	const n, m = 4, 5
	for _, c := range resumeCases {
		t.Run(c.name, func(t *testing.T) {
			whole := resumeModel(1)
			opt, sched, _ := c.make(t, whole.Parameters())
			trainSteps(t, whole, opt, sched, n+m)

			first := resumeModel(1)
			opt1, sched1, rs1 := c.make(t, first.Parameters())
			trainSteps(t, first, opt1, sched1, n)
			var model, state bytes.Buffer
			mustOK(t, Save(&model, first), SaveOptimizer(&state, opt1, rs1...))

			second := resumeModel(2) // other initial values, which Load replaces
			opt2, sched2, rs2 := c.make(t, second.Parameters())
			mustOK(t, Load(&model, second), LoadOptimizer(&state, opt2, rs2...))
			trainSteps(t, second, opt2, sched2, m)

			want, got := paramBits(t, whole), paramBits(t, second)
			for i := range want {
				for k := range want[i] {
					if math.Float32bits(got[i][k]) != math.Float32bits(want[i][k]) {
						t.Fatalf("parameter %d[%d]: resumed %v, unbroken %v", i, k, got[i][k], want[i][k])
					}
				}
			}
			if opt2.LearningRate() != opt.LearningRate() {
				t.Fatalf("lr: resumed %v, unbroken %v", opt2.LearningRate(), opt.LearningRate())
			}
		})
	}
}

// TestLoadOptimizerMismatch: a file for another optimizer kind, other
// parameters or other schedulers is an error that leaves the optimizer and
// schedulers as they were.
func TestLoadOptimizerMismatch(t *testing.T) {
	model := resumeModel(1)
	adam, err := NewAdam(model.Parameters(), 0.01)
	mustOK(t, err)
	sched, err := NewStepLR(adam, 2, 0.5)
	mustOK(t, err)
	trainSteps(t, model, adam, func(float64) { mustOK(t, sched.Step()) }, 3)
	var file bytes.Buffer
	mustOK(t, SaveOptimizer(&file, adam, sched))
	saved := file.Bytes()

	other := resumeModel(3)
	wide := Sequential(NewLinear(3, 5), Tanh{}, NewLinear(5, 2))
	sgd, err1 := NewSGD(other.Parameters(), 0.1, Momentum(0.9))
	adam2, err2 := NewAdam(other.Parameters(), 0.02)
	adamw, err3 := NewAdamW(other.Parameters(), 0.02)
	few, err4 := NewAdam(other.Parameters()[:2], 0.02)
	wideAdam, err5 := NewAdam(wide.Parameters(), 0.02)
	exp, err6 := NewExponentialLR(adam2, 0.9)
	step2, err7 := NewStepLR(adam2, 2, 0.5)
	mustOK(t, err1, err2, err3, err4, err5, err6, err7)
	trainSteps(t, other, adam2, func(float64) {}, 1)
	cases := []struct {
		name   string
		opt    Optimizer
		scheds []Resumable
		kind   error
	}{
		{"sgd", sgd, []Resumable{step2}, lathe.ErrValue},
		{"adamw", adamw, []Resumable{step2}, lathe.ErrValue},
		{"fewer-params", few, []Resumable{step2}, lathe.ErrValue},
		{"other-shapes", wideAdam, []Resumable{step2}, lathe.ErrShape},
		{"other-scheduler", adam2, []Resumable{exp}, lathe.ErrValue},
		{"no-scheduler", adam2, nil, lathe.ErrValue},
		{"truncated", adam2, []Resumable{step2}, lathe.ErrValue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before bytes.Buffer
			mustOK(t, SaveOptimizer(&before, c.opt, c.scheds...))
			data := saved
			if c.name == "truncated" {
				data = saved[:len(saved)-3]
			}
			err := LoadOptimizer(bytes.NewReader(data), c.opt, c.scheds...)
			if !errors.Is(err, c.kind) {
				t.Fatalf("got %v, want %v", err, c.kind)
			}
			var after bytes.Buffer
			mustOK(t, SaveOptimizer(&after, c.opt, c.scheds...))
			if !bytes.Equal(before.Bytes(), after.Bytes()) {
				t.Fatal("a failed LoadOptimizer changed the optimizer or a scheduler")
			}
		})
	}
	t.Run("not-nn", func(t *testing.T) {
		if err := SaveOptimizer(&bytes.Buffer{}, nil); !errors.Is(err, lathe.ErrValue) {
			t.Fatalf("got %v, want ErrValue", err)
		}
	})
}

// TestResetOptimizer: after ResetOptimizer, a step is the first step of a
// new optimizer of the same kind over the same parameters, bit for bit,
// for each optimizer with state.
func TestResetOptimizer(t *testing.T) {
	makers := map[string]func(ps []Param) (Optimizer, error){
		"sgd":     func(ps []Param) (Optimizer, error) { return NewSGD(ps, 0.1, Momentum(0.9), Nesterov()) },
		"adamw":   func(ps []Param) (Optimizer, error) { return NewAdamW(ps, 0.01) },
		"rmsprop": func(ps []Param) (Optimizer, error) { return NewRMSprop(ps, 0.01, Momentum(0.5), Centered()) },
		"adagrad": func(ps []Param) (Optimizer, error) { return NewAdagrad(ps, 0.1, InitialAccumulator(0.1)) },
	}
	none := func(float64) {}
	for name, make := range makers {
		reset, fresh := resumeModel(1), resumeModel(1)
		o1, err := make(reset.Parameters())
		o2, err2 := make(fresh.Parameters())
		mustOK(t, err, err2)
		trainSteps(t, reset, o1, none, 3)
		trainSteps(t, fresh, o2, none, 3)
		mustOK(t, ResetOptimizer(o1))
		o3, err := make(fresh.Parameters())
		mustOK(t, err)
		trainSteps(t, reset, o1, none, 2)
		trainSteps(t, fresh, o3, none, 2)
		got, want := paramBits(t, reset), paramBits(t, fresh)
		for i := range got {
			for k := range got[i] {
				if got[i][k] != want[i][k] {
					t.Fatalf("%s: parameter %d[%d] after a reset and two steps is %v, a new optimizer's %v", name, i, k, got[i][k], want[i][k])
				}
			}
		}
	}
	if err := ResetOptimizer(nil); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("ResetOptimizer(nil): %v, want an ErrValue", err)
	}
}

// TestResetOptimizerRecovers: on wgpu:0, a bad index's failed check,
// which settles after the step that took its gradient, reaches Adam's
// state, and every later step fails though the weights are loaded again;
// reloading the weights and resetting the optimizer (or loading its
// state) recovers the run. Load refused the poisoned model, so nothing
// did.
func TestResetOptimizerRecovers(t *testing.T) {
	dev := lathe.WGPU(0)
	if err := lathe.Zeros(dev, lathe.Float32, 1).Err(); err != nil {
		t.Skipf("wgpu:0 does not open: %v", err)
	}
	lathe.Seed(3)
	m := NewLinear(4, 1)
	mustOK(t, m.To(dev))
	var saved bytes.Buffer
	mustOK(t, Save(&saved, m))
	opt, err := NewAdam(m.Parameters(), 0.1)
	mustOK(t, err)
	var savedOpt bytes.Buffer
	mustOK(t, SaveOptimizer(&savedOpt, opt))
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4).To(dev)
	step := func(rows []int64) error {
		opt.ZeroGrad()
		loss := m.Forward(x.IndexSelect(0, lathe.FromSlice(lathe.CPU, rows).To(dev))).Sum()
		if err := firstErr(loss.Backward(), opt.Step()); err != nil {
			return err
		}
		_, err := m.Weight.Float32s()
		return err
	}
	reload := func() { mustOK(t, Load(bytes.NewReader(saved.Bytes()), m)) }
	if err := step([]int64{0, 9}); !errors.Is(err, lathe.ErrIndex) {
		t.Fatalf("the step with a bad index: %v, want its ErrIndex", err)
	}
	reload()
	if err := step([]int64{0, 1}); !errors.Is(err, lathe.ErrIndex) {
		t.Fatalf("a good step with the weights loaded again but Adam's state from the bad step: %v, want the bad step's ErrIndex", err)
	}
	reload()
	mustOK(t, ResetOptimizer(opt))
	if err := step([]int64{0, 1}); err != nil {
		t.Fatalf("a good step after the weights' reload and ResetOptimizer: %v", err)
	}
	// And through LoadOptimizer, from the checkpoint's state.
	if err := step([]int64{9, 1}); !errors.Is(err, lathe.ErrIndex) || !lathe.IsCheckError(err) {
		t.Fatalf("the second bad step: %v, want its ErrIndex, a check's", err)
	}
	reload()
	mustOK(t, LoadOptimizer(bytes.NewReader(savedOpt.Bytes()), opt))
	if err := step([]int64{0, 1}); err != nil {
		t.Fatalf("a good step after the weights' and the optimizer's reload: %v", err)
	}
}
