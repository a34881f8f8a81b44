package nn

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// optim3Cases are the cases of build/torchref/optim3_ref.py, by the same
// names; optim3Ref (nn/optim3_torchref_test.go) holds torch's values.
// init adds them to optim2Cases and optim2Ref, so that the tests of
// nn/optim_more_test.go (torch's trajectory on the cpu and wgpu:0 in
// float64, float32 and bfloat16, float16, resuming from a saved state,
// atomic steps, no leaks) run them too.
var optim3Cases = map[string]func([]Param) (Optimizer, error){
	"rprop": func(ps []Param) (Optimizer, error) { return NewRprop(ps, 0.01) },
	"rprop/etas/step_sizes": func(ps []Param) (Optimizer, error) {
		return NewRprop(ps, 0.02, Etas(0.3, 1.5), StepSizes(0.005, 0.04))
	},
	"rprop/maximize": func(ps []Param) (Optimizer, error) { return NewRprop(ps, 0.05, Maximize()) },
	"asgd":           func(ps []Param) (Optimizer, error) { return NewASGD(ps, 0.01) },
	"asgd/lambd/alpha/t0/wd": func(ps []Param) (Optimizer, error) {
		return NewASGD(ps, 0.05, Lambd(0.5), Alpha(0.6), T0(2), WeightDecay(0.1))
	},
	"asgd/maximize/t0": func(ps []Param) (Optimizer, error) { return NewASGD(ps, 0.02, T0(3.5), Maximize()) },
}

func init() {
	for name, mk := range optim3Cases {
		optim2Cases[name] = mk
	}
	for name, ref := range optim3Ref {
		optim2Ref[name] = ref
	}
}

// TestASGDAveragesAsTorch: ASGD's ax, eta and mu after each step are
// torch's state["ax"], state["eta"] and state["mu"] (the cases' values
// are checked by TestMoreOptimizersMatchTorch), on the cpu and wgpu:0.
func TestASGDAveragesAsTorch(t *testing.T) {
	for _, dev := range optimDevices(t) {
		for name, byDType := range optim3Ax {
			for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32, lathe.BFloat16} {
				if !holds(dev, dt) {
					continue
				}
				t.Run(dev.String()+"/"+name+"/"+dt.String(), func(t *testing.T) {
					tol := optimTol(dt)
					p := toDType(t, optimP0, dt, 2, 3).To(dev).RequireGrad()
					opt, err := optim3Cases[name]([]Param{{Name: "p", T: p}})
					mustOK(t, err)
					a := opt.(*ASGD)
					if a.Eta(0) != float64(float32(a.LR)) || a.Mu(0) != 1 || !math.IsNaN(a.Eta(1)) || !math.IsNaN(a.Mu(-1)) {
						t.Fatalf("before the first step: eta %v, mu %v", a.Eta(0), a.Mu(0))
					}
					if av := a.Averaged(); len(av) != 1 || av[0].Name != "p" || av[0].T != nil {
						t.Fatalf("Averaged before the first step: %v", av)
					}
					for s, g := range optim2G {
						opt.ZeroGrad()
						mustOK(t, p.Backward(lathe.WithGradient(toDType(t, g, dt, 2, 3).To(dev))), opt.Step())
						av := a.Averaged()
						if av[0].T.DType() != dt || av[0].T.Device() != dev {
							t.Fatalf("ax is %v on %v", av[0].T.DType(), av[0].T.Device())
						}
						assertClose(t, "ax after step "+strconv.Itoa(s+1), values(t, av[0].T.To(lathe.CPU)), byDType[dt.String()][s], tol)
						av[0].T.Release()
						if em := optim3EtaMu[name][s]; a.Eta(0) != em[0] || a.Mu(0) != em[1] {
							t.Fatalf("step %d: eta %v mu %v, torch's %v %v", s+1, a.Eta(0), a.Mu(0), em[0], em[1])
						}
					}
				})
			}
		}
	}
}

// TestRpropASGDStateRoundTrip: a saved Rprop or ASGD loads into a fresh
// optimizer with the same state tensors, step counts, eta and mu, and
// ResetOptimizer forgets them.
func TestRpropASGDStateRoundTrip(t *testing.T) {
	testenv.HostOnly(t)
	for _, name := range []string{"rprop/etas/step_sizes", "asgd/lambd/alpha/t0/wd"} {
		t.Run(name, func(t *testing.T) {
			p := toDType(t, optimP0, lathe.Float32, 2, 3).RequireGrad()
			opt, err := optim3Cases[name]([]Param{{Name: "p", T: p}})
			mustOK(t, err)
			for s := range 5 {
				opt.ZeroGrad()
				mustOK(t, p.Backward(lathe.WithGradient(toDType(t, optim2G[s], lathe.Float32, 2, 3))), opt.Step())
			}
			var buf bytes.Buffer
			mustOK(t, SaveOptimizer(&buf, opt))
			opt2, err := optim3Cases[name]([]Param{{Name: "p", T: p}})
			mustOK(t, err, LoadOptimizer(&buf, opt2))
			o, o2 := opt.(statefulOptim), opt2.(statefulOptim)
			for k, sl := range o.slots() {
				sl2 := o2.slots()[k]
				if (*sl.ts)[0] == nil || (*sl2.ts)[0] == nil {
					t.Fatalf("%s: no state", sl.name)
				}
				assertClose(t, sl.name, values(t, (*sl2.ts)[0]), values(t, (*sl.ts)[0]), 0)
			}
			if (*o2.counts())[0] != 5 {
				t.Fatalf("step count %d, want 5", (*o2.counts())[0])
			}
			if a, ok := opt.(*ASGD); ok {
				b := opt2.(*ASGD)
				if a.Eta(0) != b.Eta(0) || a.Mu(0) != b.Mu(0) || b.Mu(0) == 1 {
					t.Fatalf("eta, mu %v %v loaded as %v %v", a.Eta(0), a.Mu(0), b.Eta(0), b.Mu(0))
				}
				b.SetLearningRate(0.5)
				mustOK(t, ResetOptimizer(b))
				if b.Eta(0) != float64(float32(0.5)) || b.Mu(0) != 1 || b.ax[0] != nil {
					t.Fatalf("after a reset: eta %v mu %v", b.Eta(0), b.Mu(0))
				}
			} else {
				mustOK(t, ResetOptimizer(opt2))
				for _, sl := range o2.slots() {
					if (*sl.ts)[0] != nil {
						t.Fatalf("%s kept after a reset", sl.name)
					}
				}
			}
		})
	}
	// A file whose mu is not in [0, 1] or whose eta is negative is refused
	// and changes nothing.
	p := toDType(t, []float64{1, 2}, lathe.Float64, 2).RequireGrad()
	a, err := NewASGD([]Param{{"p", p}}, 0.1)
	mustOK(t, err)
	for _, bad := range [][2]string{{"0.1", "NaN"}, {"0.1", "1.5"}, {"-0.1", "0.5"}, {"NaN", "1"}} {
		meta := map[string]string{"optimizer": "asgd", "params": "1", "schedulers": "0", "param.0": "p", "lr": "0.1",
			"lambd": "0.0001", "alpha": "0.75", "t0": "1000000", "weight_decay": "0", "maximize": "false",
			"state.0.step": "3", "state.0.eta": bad[0], "state.0.mu": bad[1]}
		var buf bytes.Buffer
		mustOK(t, writeSafetensors("test", &buf, nil, meta))
		if err := LoadOptimizer(&buf, a); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("eta %s mu %s: got %v, want an ErrValue", bad[0], bad[1], err)
		}
		if a.Mu(0) != 1 || a.steps[0] != 0 {
			t.Errorf("eta %s mu %s: the failed load changed the state", bad[0], bad[1])
		}
	}
}

// TestRpropASGDRefuseBadHyperparameters: the options torch's constructors
// refuse (etas out of order), and those lathe refuses where torch would
// compute garbage (NaN, negative step sizes, a negative λ), are ErrValues
// naming the option; set on the fields, Step refuses them and changes
// nothing.
func TestRpropASGDRefuseBadHyperparameters(t *testing.T) {
	testenv.HostOnly(t)
	ps := func() []Param { return []Param{{"p", toDType(t, []float64{1, 2}, lathe.Float32, 2).RequireGrad()}} }
	nan := math.NaN()
	cases := []refusedOption{
		{"rprop lr", "lr", func() error { _, err := NewRprop(ps(), -1); return err }},
		{"rprop etaminus 0", "etas[0]", func() error { _, err := NewRprop(ps(), 1, Etas(0, 1.2)); return err }},
		{"rprop etaminus 1", "etas[0]", func() error { _, err := NewRprop(ps(), 1, Etas(1, 1.2)); return err }},
		{"rprop etaplus 1", "etas[1]", func() error { _, err := NewRprop(ps(), 1, Etas(0.5, 1)); return err }},
		{"rprop etaplus nan", "etas[1]", func() error { _, err := NewRprop(ps(), 1, Etas(0.5, nan)); return err }},
		{"rprop step min", "step_sizes[0]", func() error { _, err := NewRprop(ps(), 1, StepSizes(-1, 1)); return err }},
		{"rprop step order", "step_sizes[1]", func() error { _, err := NewRprop(ps(), 1, StepSizes(2, 1)); return err }},
		{"rprop step nan", "step_sizes[1]", func() error { _, err := NewRprop(ps(), 1, StepSizes(0, nan)); return err }},
		{"rprop takes no weight_decay", "weight_decay", func() error { _, err := NewRprop(ps(), 1, WeightDecay(0.1)); return err }},
		{"asgd lr", "lr", func() error { _, err := NewASGD(ps(), nan); return err }},
		{"asgd lambd", "lambd", func() error { _, err := NewASGD(ps(), 1, Lambd(-1)); return err }},
		{"asgd lambd inf", "lambd", func() error { _, err := NewASGD(ps(), 1, Lambd(math.Inf(1))); return err }},
		{"asgd alpha", "alpha", func() error { _, err := NewASGD(ps(), 1, Alpha(nan)); return err }},
		{"asgd t0", "t0", func() error { _, err := NewASGD(ps(), 1, T0(nan)); return err }},
		{"asgd wd", "weight_decay", func() error { _, err := NewASGD(ps(), 1, WeightDecay(-0.1)); return err }},
		{"asgd takes no etas", "etas", func() error { _, err := NewASGD(ps(), 1, Etas(0.5, 1.2)); return err }},
		{"sgd takes no t0", "t0", func() error { _, err := NewSGD(ps(), 1, T0(1)); return err }},
		{"rprop nil param", "p", func() error { _, err := NewRprop([]Param{{Name: "p"}}, 1); return err }},
		{"asgd no params", "params", func() error { _, err := NewASGD(nil, 1); return err }},
	}
	checkRefusedOptions(t, cases)
	p := toDType(t, []float64{1, 2}, lathe.Float32, 2).RequireGrad()
	opts := []func() (Optimizer, func()){
		func() (Optimizer, func()) {
			o, _ := NewRprop([]Param{{"p", p}}, 0.1)
			return o, func() { o.Etas[1] = 0.9 }
		},
		func() (Optimizer, func()) {
			o, _ := NewRprop([]Param{{"p", p}}, 0.1)
			return o, func() { o.StepSizes = [2]float64{1, 0.5} }
		},
		func() (Optimizer, func()) {
			o, _ := NewASGD([]Param{{"p", p}}, 0.1)
			return o, func() { o.Lambd = nan }
		},
		func() (Optimizer, func()) {
			o, _ := NewASGD([]Param{{"p", p}}, 0.1)
			return o, func() { o.SetLearningRate(-1) }
		},
	}
	checkSpoiledFields(t, p, opts)
}

// TestRpropASGDEdgeCasesAsTorch: Rprop with NaN and Inf gradients (torch
// 1.13's sign of NaN is 0: the element neither moves nor changes its step
// size) and ASGD whose learning rate changes between steps (η reads it
// from the next step on) step as torch's (values from torch 1.13).
func TestRpropASGDEdgeCasesAsTorch(t *testing.T) {
	testenv.HostOnly(t)
	nan, inf := math.NaN(), math.Inf(1)
	p := toDType(t, []float64{0.5, -1, 2}, lathe.Float64, 3).RequireGrad()
	r, err := NewRprop([]Param{{"p", p}}, 0.1)
	mustOK(t, err)
	q := toDType(t, []float64{0.5, -1, 2}, lathe.Float64, 3).RequireGrad()
	a, err := NewASGD([]Param{{"q", q}}, 0.1, Lambd(0.1), T0(1))
	mustOK(t, err)
	rg := [][]float64{{1, nan, -1}, {1, 1, inf}, {-1, 1, 1}}
	rp := [][]float64{{0.4, -1, 2.1}, {0.28, -1.1, 2.1}, {0.28, -1.2200000000000002, 2.0500000000000003}}
	rs := [][]float64{{0.1, 0.1, 0.1}, {0.12, 0.1, 0.05}, {0.06, 0.12, 0.05}}
	ag := [][]float64{{1, 2, -1}, {1, 1, 3}, {-1, 1, 1}}
	ap := [][]float64{{0.3949999984353781, -1.1900000028312205, 2.0800000011920927},
		{0.2918228660753696, -1.2774449798332768, 1.7615851472497872},
		{0.5706143757831148, -1.5279321978799547, 1.423825541659198}}
	aeta := []float64{0.0992565006017685, 0.2871718406677246, 0.2812233567237854}
	for s := range 3 {
		r.ZeroGrad()
		mustOK(t, p.SetGrad(toDType(t, rg[s], lathe.Float64, 3)), r.Step())
		assertClose(t, "rprop p", values(t, p), rp[s], 1e-15)
		assertClose(t, "rprop step_size", values(t, r.stepSize[0]), rs[s], 1e-15)
		if s == 1 {
			a.SetLearningRate(0.3)
		}
		a.ZeroGrad()
		mustOK(t, q.SetGrad(toDType(t, ag[s], lathe.Float64, 3)), a.Step())
		assertClose(t, "asgd p", values(t, q), ap[s], 1e-15)
		if a.Eta(0) != aeta[s] {
			t.Fatalf("step %d: eta %v, torch's %v", s+1, a.Eta(0), aeta[s])
		}
	}
}
