package nn

import (
	"bytes"
	"errors"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// optim2Cases are the cases of build/torchref/optim2_ref.py, by the same
// names; optim2Ref (nn/optim2_torchref_test.go) holds torch's values.
var optim2Cases = map[string]func([]Param) (Optimizer, error){
	"adam/amsgrad":  func(ps []Param) (Optimizer, error) { return NewAdam(ps, 0.01, AMSGrad()) },
	"adam/maximize": func(ps []Param) (Optimizer, error) { return NewAdam(ps, 0.01, Maximize()) },
	"adamw/amsgrad/maximize/wd": func(ps []Param) (Optimizer, error) {
		return NewAdamW(ps, 0.01, WeightDecay(0.1), AMSGrad(), Maximize())
	},
	"adamax": func(ps []Param) (Optimizer, error) { return NewAdamax(ps, 0.02) },
	"adamax/betas/eps/wd": func(ps []Param) (Optimizer, error) {
		return NewAdamax(ps, 0.02, Betas(0.8, 0.9), Eps(1e-3), WeightDecay(0.1))
	},
	"adamax/maximize": func(ps []Param) (Optimizer, error) { return NewAdamax(ps, 0.02, Maximize()) },
	"nadam":           func(ps []Param) (Optimizer, error) { return NewNAdam(ps, 0.02) },
	"nadam/betas/wd/momentum_decay": func(ps []Param) (Optimizer, error) {
		return NewNAdam(ps, 0.02, Betas(0.8, 0.95), WeightDecay(0.1), MomentumDecay(0.1))
	},
	"radam": func(ps []Param) (Optimizer, error) { return NewRAdam(ps, 0.01) },
	"radam/betas/eps/wd": func(ps []Param) (Optimizer, error) {
		return NewRAdam(ps, 0.01, Betas(0.8, 0.9), Eps(1e-4), WeightDecay(0.1))
	},
	"adadelta": func(ps []Param) (Optimizer, error) { return NewAdadelta(ps, 1) },
	"adadelta/rho/eps/wd": func(ps []Param) (Optimizer, error) {
		return NewAdadelta(ps, 0.5, Rho(0.8), Eps(1e-4), WeightDecay(0.1))
	},
	"adadelta/maximize": func(ps []Param) (Optimizer, error) { return NewAdadelta(ps, 1, Maximize()) },
	"sgd/momentum/wd/maximize": func(ps []Param) (Optimizer, error) {
		return NewSGD(ps, 0.1, Momentum(0.9), WeightDecay(0.01), Maximize())
	},
	"rmsprop/centered/maximize": func(ps []Param) (Optimizer, error) { return NewRMSprop(ps, 0.01, Centered(), Maximize()) },
	"adagrad/wd/maximize":       func(ps []Param) (Optimizer, error) { return NewAdagrad(ps, 0.1, WeightDecay(0.1), Maximize()) },
}

// optimDevices are the cpu and, where they open, wgpu:0 and cuda:0 (a
// GPU that does not is skipped by name, or fails t where the run requires
// it). A run that emulates cuda:0 tests it alone: the run that started it
// tests the others.
func optimDevices(t *testing.T) []lathe.Device {
	t.Helper()
	emulated := os.Getenv(testenv.EmulatedEnv) != ""
	var devs []lathe.Device
	if !emulated {
		devs = append(devs, lathe.CPU)
	}
	for _, dev := range []lathe.Device{lathe.WGPU(0), lathe.CUDA(0)} {
		if emulated && dev != lathe.CUDA(0) {
			continue
		}
		for _, info := range lathe.DeviceStatus() {
			if info.Device != dev {
				continue
			}
			if info.Available {
				devs = append(devs, dev)
			} else {
				testenv.Without(t, dev.String(), "%s is unavailable: %s", dev, info.Detail)
			}
		}
	}
	return devs
}

// holds reports whether dev has dt (wgpu:0 has no float64).
func holds(dev lathe.Device, dt lathe.DType) bool {
	z := lathe.Zeros(dev, dt, 1)
	defer z.Release()
	return z.Err() == nil
}

// TestMoreOptimizersMatchTorch runs eight steps of each case, gradients
// fed through Backward, and compares each step with PyTorch's in the same
// dtype, on the cpu and on wgpu:0 (which has no float64). The updates
// follow torch's single-tensor code op for op; float32 and float64 differ
// by torch's fused a + α·b (a few units in the last place after eight
// steps); bfloat16 by that and by rounding, where torch's cpu kernels
// round at other places (addcmul, addcdiv in one go), a few of its units.
func TestMoreOptimizersMatchTorch(t *testing.T) {
	for _, dev := range optimDevices(t) {
		for name, mk := range optim2Cases {
			if optim2Ref[name] == nil {
				t.Errorf("%s: no reference in optim2_torchref_test.go; run build/torchref/optim2_ref.py", name)
				continue
			}
			for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32, lathe.BFloat16} {
				if !holds(dev, dt) {
					continue
				}
				t.Run(dev.String()+"/"+name+"/"+dt.String(), func(t *testing.T) {
					tol := optimTol(dt)
					p := toDType(t, optimP0, dt, 2, 3).To(dev).RequireGrad()
					opt, err := mk([]Param{{Name: "p", T: p}})
					if err != nil {
						t.Fatal(err)
					}
					refs := optim2Ref[name][dt.String()]
					for s, g := range optim2G {
						opt.ZeroGrad()
						if err := p.Backward(lathe.WithGradient(toDType(t, g, dt, 2, 3).To(dev))); err != nil {
							t.Fatal(err)
						}
						if err := opt.Step(); err != nil {
							t.Fatal(err)
						}
						if p.DType() != dt || p.Device() != dev || !p.IsLeaf() || !p.RequiresGrad() {
							t.Fatalf("step %d: the parameter became %v on %v (leaf %v)", s+1, p.DType(), p.Device(), p.IsLeaf())
						}
						assertClose(t, "step "+strconv.Itoa(s+1), values(t, p.To(lathe.CPU)), refs[s], tol)
					}
				})
			}
		}
	}
	for name := range optim2Ref {
		if optim2Cases[name] == nil {
			t.Errorf("%s: a reference without a case", name)
		}
	}
}

// TestMoreOptimizersFloat16 steps float16 parameters (torch's cpu has no
// float16 addcmul to compare with): the state stays float16 and the
// trajectory is float32's to float16's precision.
func TestMoreOptimizersFloat16(t *testing.T) {
	for _, dev := range optimDevices(t) {
		if !holds(dev, lathe.Float16) {
			continue
		}
		for name, mk := range optim2Cases {
			t.Run(dev.String()+"/"+name, func(t *testing.T) {
				p := toDType(t, optimP0, lathe.Float16, 2, 3).To(dev).RequireGrad()
				opt, err := mk([]Param{{Name: "p", T: p}})
				if err != nil {
					t.Fatal(err)
				}
				for s, g := range optim2G[:4] {
					opt.ZeroGrad()
					mustOK(t, p.Backward(lathe.WithGradient(toDType(t, g, lathe.Float16, 2, 3).To(dev))), opt.Step())
					if p.DType() != lathe.Float16 {
						t.Fatalf("dtype became %v", p.DType())
					}
					assertClose(t, "step "+strconv.Itoa(s+1), values(t, p.To(lathe.CPU)), optim2Ref[name]["float32"][s], 6*0x1p-11)
				}
			})
		}
	}
}

// TestMoreOptimizersResume saves each case's state after three steps,
// loads it into a fresh optimizer over a fresh parameter, and requires
// the last five steps to be torch's, as an unbroken run's are.
func TestMoreOptimizersResume(t *testing.T) {
	testenv.HostOnly(t)
	for name, mk := range optim2Cases {
		t.Run(name, func(t *testing.T) {
			p := toDType(t, optimP0, lathe.Float64, 2, 3).RequireGrad()
			opt, err := mk([]Param{{Name: "p", T: p}})
			mustOK(t, err)
			step := func(opt Optimizer, p *lathe.Tensor, s int) {
				opt.ZeroGrad()
				mustOK(t, p.Backward(lathe.WithGradient(toDType(t, optim2G[s], lathe.Float64, 2, 3))), opt.Step())
			}
			for s := range 3 {
				step(opt, p, s)
			}
			var buf bytes.Buffer
			mustOK(t, SaveOptimizer(&buf, opt))
			q := toDType(t, values(t, p), lathe.Float64, 2, 3).RequireGrad()
			opt2, err := mk([]Param{{Name: "p", T: q}})
			mustOK(t, err, LoadOptimizer(&buf, opt2))
			for s := 3; s < len(optim2G); s++ {
				step(opt2, q, s)
				assertClose(t, "resumed step "+strconv.Itoa(s+1), values(t, q), optim2Ref[name]["float64"][s], 4*0x1p-52)
			}
		})
	}
}

// TestAdamLoadsFilesWithoutNewFlags: a file saved before Adam took
// amsgrad and maximize (no such keys) loads, with both off.
func TestAdamLoadsFilesWithoutNewFlags(t *testing.T) {
	testenv.HostOnly(t)
	p := toDType(t, []float64{1, 2}, lathe.Float64, 2).RequireGrad()
	a, err := NewAdam([]Param{{"p", p}}, 0.1)
	mustOK(t, err)
	meta := map[string]string{"optimizer": "adam", "params": "1", "schedulers": "0", "param.0": "p", "lr": "0.1",
		"beta1": "0.9", "beta2": "0.999", "eps": "1e-08", "weight_decay": "0", "state.0.step": "0"}
	var buf bytes.Buffer
	mustOK(t, writeSafetensors("test", &buf, nil, meta))
	b, err := NewAdam([]Param{{"p", p}}, 0.5, AMSGrad(), Maximize())
	mustOK(t, err, LoadOptimizer(&buf, b))
	if b.AMSGrad || b.Maximize || b.LR != 0.1 {
		t.Fatalf("loaded amsgrad %v maximize %v lr %v, want false false 0.1", b.AMSGrad, b.Maximize, b.LR)
	}
	_ = a
}

// TestNAdamLoadRefusesBadMuProduct: a file whose mu_product is not in
// [0, 1] (NaN, from a damaged or hand-made file) is refused, and the
// optimizer keeps its own.
func TestNAdamLoadRefusesBadMuProduct(t *testing.T) {
	testenv.HostOnly(t)
	p := toDType(t, []float64{1, 2}, lathe.Float64, 2).RequireGrad()
	a, err := NewNAdam([]Param{{"p", p}}, 0.1)
	mustOK(t, err)
	for _, mu := range []string{"NaN", "1.5", "-0.1"} {
		meta := map[string]string{"optimizer": "nadam", "params": "1", "schedulers": "0", "param.0": "p", "lr": "0.1",
			"beta1": "0.9", "beta2": "0.999", "eps": "1e-08", "weight_decay": "0", "momentum_decay": "0.004",
			"state.0.step": "3", "state.0.mu_product": mu}
		var buf bytes.Buffer
		mustOK(t, writeSafetensors("test", &buf, nil, meta))
		if err := LoadOptimizer(&buf, a); !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), "mu_product") {
			t.Errorf("mu_product %s: got %v", mu, err)
		}
		if a.muProduct[0] != 1 || a.steps[0] != 0 {
			t.Errorf("mu_product %s: the failed load changed the state", mu)
		}
	}
}

// TestMoreOptimizersRefuseBadHyperparameters: each hyperparameter torch's
// constructor refuses (ValueError "Invalid ...") is an ErrValue naming it,
// as is NaN; set on the fields afterwards, Step refuses it and changes
// nothing.
func TestMoreOptimizersRefuseBadHyperparameters(t *testing.T) {
	testenv.HostOnly(t)
	ps := func() []Param { return []Param{{"p", toDType(t, []float64{1, 2}, lathe.Float32, 2).RequireGrad()}} }
	nan := math.NaN()
	cases := []refusedOption{
		{"adamax lr", "lr", func() error { _, err := NewAdamax(ps(), -1); return err }},
		{"adamax eps", "eps", func() error { _, err := NewAdamax(ps(), 1, Eps(-1)); return err }},
		{"adamax beta0", "betas[0]", func() error { _, err := NewAdamax(ps(), 1, Betas(1, 0.9)); return err }},
		{"adamax beta1", "betas[1]", func() error { _, err := NewAdamax(ps(), 1, Betas(0.9, -0.1)); return err }},
		{"adamax wd", "weight_decay", func() error { _, err := NewAdamax(ps(), 1, WeightDecay(nan)); return err }},
		{"nadam lr", "lr", func() error { _, err := NewNAdam(ps(), nan); return err }},
		{"nadam beta0", "betas[0]", func() error { _, err := NewNAdam(ps(), 1, Betas(nan, 0.9)); return err }},
		{"nadam momentum_decay", "momentum_decay", func() error { _, err := NewNAdam(ps(), 1, MomentumDecay(-1)); return err }},
		{"radam beta1", "betas[1]", func() error { _, err := NewRAdam(ps(), 1, Betas(0.9, 1)); return err }},
		{"radam eps", "eps", func() error { _, err := NewRAdam(ps(), 1, Eps(nan)); return err }},
		{"adadelta rho high", "rho", func() error { _, err := NewAdadelta(ps(), 1, Rho(1.5)); return err }},
		{"adadelta rho nan", "rho", func() error { _, err := NewAdadelta(ps(), 1, Rho(nan)); return err }},
		{"adadelta eps", "eps", func() error { _, err := NewAdadelta(ps(), 1, Eps(-1e-6)); return err }},
		{"adadelta lr", "lr", func() error { _, err := NewAdadelta(ps(), -0.5); return err }},
		{"adam amsgrad beta", "betas[1]", func() error { _, err := NewAdam(ps(), 1, AMSGrad(), Betas(0.9, 2)); return err }},
		{"nadam takes no maximize", "maximize", func() error { _, err := NewNAdam(ps(), 1, Maximize()); return err }},
		{"radam takes no amsgrad", "amsgrad", func() error { _, err := NewRAdam(ps(), 1, AMSGrad()); return err }},
		{"sgd takes no rho", "rho", func() error { _, err := NewSGD(ps(), 1, Rho(0.9)); return err }},
	}
	checkRefusedOptions(t, cases)
	// Fields set after making: Step refuses them and changes nothing.
	p := toDType(t, []float64{1, 2}, lathe.Float32, 2).RequireGrad()
	opts := []func() (Optimizer, func()){
		func() (Optimizer, func()) {
			o, _ := NewAdamax([]Param{{"p", p}}, 0.1)
			return o, func() { o.Betas[1] = 1 }
		},
		func() (Optimizer, func()) {
			o, _ := NewNAdam([]Param{{"p", p}}, 0.1)
			return o, func() { o.MomentumDecay = nan }
		},
		func() (Optimizer, func()) { o, _ := NewRAdam([]Param{{"p", p}}, 0.1); return o, func() { o.Eps = -1 } },
		func() (Optimizer, func()) {
			o, _ := NewAdadelta([]Param{{"p", p}}, 0.1)
			return o, func() { o.Rho = -0.1 }
		},
		func() (Optimizer, func()) {
			o, _ := NewAdadelta([]Param{{"p", p}}, 0.1)
			return o, func() { o.SetLearningRate(nan) }
		},
	}
	checkSpoiledFields(t, p, opts)
}

// A refusedOption is a constructor call with a bad option (make), which
// must fail with an ErrValue naming arg.
type refusedOption struct {
	name, arg string
	make      func() error
}

func checkRefusedOptions(t *testing.T, cases []refusedOption) {
	t.Helper()
	for _, c := range cases {
		err := c.make()
		var le *lathe.Error
		if !errors.Is(err, lathe.ErrValue) || !errors.As(err, &le) || le.Arg != c.arg {
			t.Errorf("%s: got %v, want an ErrValue naming %s", c.name, err, c.arg)
		}
	}
}

// checkSpoiledFields makes each optimizer of opts over p (a float32 [1, 2]
// holding 1, 2), spoils one of its fields after making, and checks that
// Step refuses it with an ErrValue and leaves p as it was.
func checkSpoiledFields(t *testing.T, p *lathe.Tensor, opts []func() (Optimizer, func())) {
	t.Helper()
	for i, mk := range opts {
		o, spoil := mk()
		mustOK(t, p.Backward(lathe.WithGradient(toDType(t, []float64{1, 1}, lathe.Float32, 2))))
		spoil()
		if err := o.Step(); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("case %d: Step with a bad field: got %v, want ErrValue", i, err)
		}
		assertClose(t, "p", values(t, p), []float64{1, 2}, 0)
		o.ZeroGrad()
	}
}

// TestMoreOptimizersStepIsAtomic: a step whose second parameter's
// gradient is released fails, leaves the first parameter as it was and
// keeps no state, so that the next good step is a first step.
func TestMoreOptimizersStepIsAtomic(t *testing.T) {
	testenv.HostOnly(t)
	for name, mk := range optim2Cases {
		t.Run(name, func(t *testing.T) {
			a := toDType(t, []float64{1, 2}, lathe.Float64, 2).RequireGrad()
			b := toDType(t, []float64{3, 4}, lathe.Float64, 2).RequireGrad()
			opt, err := mk([]Param{{"a", a}, {"b", b}})
			mustOK(t, err)
			mustOK(t, a.Backward(lathe.WithGradient(toDType(t, []float64{1, 1}, lathe.Float64, 2))),
				b.Backward(lathe.WithGradient(toDType(t, []float64{1, 1}, lathe.Float64, 2))))
			b.Grad().Release()
			if err := opt.Step(); !errors.Is(err, lathe.ErrReleased) {
				t.Fatalf("Step with a released gradient: got %v, want ErrReleased", err)
			}
			assertClose(t, "a", values(t, a), []float64{1, 2}, 0)
			o := opt.(statefulOptim)
			for _, sl := range o.slots() {
				for _, st := range *sl.ts {
					if st != nil {
						t.Fatalf("a failed step left state %s", sl.name)
					}
				}
			}
			if c := o.counts(); c != nil && (*c)[0] != 0 {
				t.Fatal("a failed step counted")
			}
		})
	}
}

// TestMoreOptimizersLeaveNothing: with the collector off, steady steps of
// each new optimizer keep no more device memory on the cpu or wgpu:0
// than the first steps left (its state).
func TestMoreOptimizersLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range optimDevices(t) {
		for name, mk := range optim2Cases {
			t.Run(dev.String()+"/"+name, func(t *testing.T) {
				p := toDType(t, optimP0, lathe.Float32, 2, 3).To(dev).RequireGrad()
				opt, err := mk([]Param{{Name: "p", T: p}})
				mustOK(t, err)
				g := toDType(t, optim2G[0], lathe.Float32, 2, 3).To(dev)
				step := func() {
					opt.ZeroGrad()
					gg := g.Clone()
					mustOK(t, p.SetGrad(gg), opt.Step())
				}
				step()
				step()
				before, err := lathe.MemoryStats(dev)
				mustOK(t, err)
				for range 5 {
					step()
				}
				after, err := lathe.MemoryStats(dev)
				mustOK(t, err)
				if after.Allocated > before.Allocated {
					t.Errorf("%v holds %d bytes after 5 more steps, %d before", dev, after.Allocated, before.Allocated)
				}
			})
		}
	}
}

// optimTol is how far an optimizer's parameters may stand from torch's
// after a few steps in dt: a few units in the last place of float64 and
// float32, and six of bfloat16's, whose rounding of each step's update
// can land a neighbour away from torch's.
func optimTol(dt lathe.DType) float64 {
	switch dt {
	case lathe.Float32:
		return 4 * 0x1p-23
	case lathe.BFloat16:
		return 6 * 0x1p-8
	}
	return 4 * 0x1p-52
}
