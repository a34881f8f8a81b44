package nn

import (
	"bytes"
	"errors"
	"math"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// lbfgsCases are the LBFGS cases of build/torchref/optim2_ref.py.
var lbfgsCases = map[string]func() LBFGSConfig{
	"none": func() LBFGSConfig {
		c := DefaultLBFGS()
		c.MaxIter, c.HistorySize = 5, 3
		return c
	},
	"strong_wolfe": func() LBFGSConfig {
		c := DefaultLBFGS()
		c.MaxIter, c.HistorySize, c.LineSearch = 5, 3, "strong_wolfe"
		return c
	},
	"strong_wolfe/defaults": func() LBFGSConfig {
		c := DefaultLBFGS()
		c.LineSearch = "strong_wolfe"
		return c
	},
	"none/lr/tolerance_change/max_eval": func() LBFGSConfig {
		c := DefaultLBFGS()
		c.MaxIter, c.MaxEval, c.ToleranceChange = 8, 6, 1e-4
		return c
	},
}

var lbfgsLR = map[string]float64{"none": 1, "strong_wolfe": 1, "strong_wolfe/defaults": 0.5, "none/lr/tolerance_change/max_eval": 0.1}

// lbfgsProblem is the objective of optim2_ref.py's LBFGS cases on dev in
// dt: Rosenbrock's function of p plus Σ (b - c)²·k.
func lbfgsProblem(t *testing.T, dev lathe.Device, dt lathe.DType) (p, b *lathe.Tensor, closure func() (float64, error)) {
	p = toDType(t, []float64{-1.2, 1}, dt, 2).To(dev).RequireGrad()
	b = toDType(t, []float64{0.5, -0.3, 0.8}, dt, 3).To(dev).RequireGrad()
	c := toDType(t, []float64{1, 2, -1}, dt, 3).To(dev)
	k := toDType(t, []float64{1, 0.5, 2}, dt, 3).To(dev)
	closure = func() (float64, error) {
		p.ZeroGrad()
		b.ZeroGrad()
		x, y := p.Narrow(0, 0, 1), p.Narrow(0, 1, 1)
		nx := x.Neg()
		u := nx.AddScalar(1)
		t1 := u.Square()
		x2 := x.Square()
		v := y.Sub(x2)
		v2 := v.Square()
		t2 := v2.MulScalar(100)
		bc := b.Sub(c)
		bc2 := bc.Square()
		bk := bc2.Mul(k)
		q := bk.Sum()
		s12 := t1.Add(t2)
		s := s12.Add(q)
		loss := s.Sum()
		lathe.ReleaseWithGraph(loss, x, y, nx, u, t1, x2, v, v2, t2, bc, bc2, bk, q, s12, s)
		defer loss.Release()
		if err := loss.Backward(); err != nil {
			return 0, err
		}
		return loss.Item()
	}
	return p, b, closure
}

// TestLBFGSMatchesTorch runs three steps of each case and compares the
// returned loss and the parameters with torch's, on the cpu (float64,
// float32) and wgpu:0 (float32). float64 follows torch's arithmetic; in
// float32 torch's line search mixes float32 tensors and Python floats,
// which lathe computes in float64, and the sums of the dot products round
// in another order.
func TestLBFGSMatchesTorch(t *testing.T) {
	for _, dev := range optimDevices(t) {
		for name, mk := range lbfgsCases {
			for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
				if !holds(dev, dt) {
					continue
				}
				t.Run(dev.String()+"/"+name+"/"+dt.String(), func(t *testing.T) {
					tol := 1e-9 // the dot products' sums round in another order
					if dt == lathe.Float32 {
						tol = 1e-3 // 20 iterations of Rosenbrock carry float32 differences of 1e-6 to 5e-4
					}
					p, b, closure := lbfgsProblem(t, dev, dt)
					opt, err := NewLBFGS([]Param{{"p", p}, {"b", b}}, lbfgsLR[name], mk())
					mustOK(t, err)
					for s, want := range lbfgsRef[name][dt.String()] {
						loss, err := opt.StepClosure(closure)
						mustOK(t, err)
						got := append(append([]float64{loss}, values(t, p.To(lathe.CPU))...), values(t, b.To(lathe.CPU))...)
						assertClose(t, "step "+strconv.Itoa(s+1), got, want, tol)
						if !p.IsLeaf() || !p.RequiresGrad() || p.DType() != dt || p.Device() != dev {
							t.Fatal("p is no longer a leaf of its dtype and device")
						}
					}
				})
			}
		}
	}
}

// TestLBFGSErrors: bad settings are ErrValues naming them; Step without a
// closure is an error; a closure that fails puts the parameters and the
// state back; ResetOptimizer clears the history.
func TestLBFGSErrors(t *testing.T) {
	testenv.HostOnly(t)
	p, b, closure := lbfgsProblem(t, lathe.CPU, lathe.Float64)
	ps := []Param{{"p", p}, {"b", b}}
	for arg, spoil := range map[string]func(c *LBFGSConfig){
		"max_iter":         func(c *LBFGSConfig) { c.MaxIter = 0 },
		"max_eval":         func(c *LBFGSConfig) { c.MaxEval = -1 },
		"history_size":     func(c *LBFGSConfig) { c.HistorySize = 0 },
		"line_search_fn":   func(c *LBFGSConfig) { c.LineSearch = "armijo" },
		"tolerance_grad":   func(c *LBFGSConfig) { c.ToleranceGrad = math.NaN() },
		"tolerance_change": func(c *LBFGSConfig) { c.ToleranceChange = -1 },
	} {
		c := DefaultLBFGS()
		spoil(&c)
		_, err := NewLBFGS(ps, 1, c)
		var le *lathe.Error
		if !errors.Is(err, lathe.ErrValue) || !errors.As(err, &le) || le.Arg != arg {
			t.Errorf("%s: got %v, want an ErrValue naming it", arg, err)
		}
	}
	if _, err := NewLBFGS(ps, -1, DefaultLBFGS()); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("negative lr: got %v", err)
	}
	f := toDType(t, []float64{1}, lathe.Float32, 1).RequireGrad()
	if _, err := NewLBFGS([]Param{{"p", p}, {"f", f}}, 1, DefaultLBFGS()); !errors.Is(err, lathe.ErrDType) {
		t.Errorf("two dtypes: got %v", err)
	}

	opt, err := NewLBFGS(ps, 1, DefaultLBFGS())
	mustOK(t, err)
	if err := opt.Step(); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("Step without a closure: got %v", err)
	}
	if _, err := opt.StepClosure(nil); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("StepClosure(nil): got %v", err)
	}
	_, err = opt.StepClosure(closure)
	mustOK(t, err)
	p1, b1, st := values(t, p), values(t, b), opt.st
	calls := 0
	boom := errors.New("boom")
	_, err = opt.StepClosure(func() (float64, error) {
		if calls++; calls == 3 {
			return 0, boom
		}
		return closure()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("a failing closure: got %v", err)
	}
	assertClose(t, "p after the failed step", values(t, p), p1, 0)
	assertClose(t, "b after the failed step", values(t, b), b1, 0)
	if opt.st.nIter != st.nIter || opt.st.d != st.d || len(opt.st.oldDirs) != len(st.oldDirs) {
		t.Fatal("the failed step changed the state")
	}
	if err := opt.st.d.Err(); err != nil {
		t.Fatalf("the failed step released the kept direction: %v", err)
	}
	_, err = opt.StepClosure(closure) // the state still works
	mustOK(t, err)

	mustOK(t, ResetOptimizer(opt))
	if opt.st.nIter != 0 || opt.st.d != nil {
		t.Error("ResetOptimizer left LBFGS's history")
	}
}

// TestLBFGSLeavesNothing: with the collector off, steady LBFGS steps keep
// no more device memory than the history they keep when it is full.
func TestLBFGSLeavesNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range optimDevices(t) {
		for _, search := range []string{"", "strong_wolfe"} {
			p, b, closure := lbfgsProblem(t, dev, lathe.Float32)
			cfg := DefaultLBFGS()
			cfg.MaxIter, cfg.HistorySize, cfg.LineSearch, cfg.ToleranceGrad, cfg.ToleranceChange = 4, 2, search, 0, 0
			opt, err := NewLBFGS([]Param{{"p", p}, {"b", b}}, 0.01, cfg)
			mustOK(t, err)
			for range 3 {
				_, err := opt.StepClosure(closure)
				mustOK(t, err)
			}
			before, err := lathe.MemoryStats(dev)
			mustOK(t, err)
			for range 4 {
				_, err := opt.StepClosure(closure)
				mustOK(t, err)
			}
			after, err := lathe.MemoryStats(dev)
			mustOK(t, err)
			if after.Allocated > before.Allocated {
				t.Errorf("%v %q: %d bytes after 4 more steps, %d before", dev, search, after.Allocated, before.Allocated)
			}
		}
	}
}

// TestLBFGSBFloat16: bfloat16 parameters (no torch reference on the cpu
// to compare with) stay bfloat16, and the loss falls as float32's does.
func TestLBFGSBFloat16(t *testing.T) {
	for _, dev := range optimDevices(t) {
		p, b, closure := lbfgsProblem(t, dev, lathe.BFloat16)
		cfg := DefaultLBFGS()
		cfg.LineSearch = "strong_wolfe"
		opt, err := NewLBFGS([]Param{{"p", p}, {"b", b}}, 1, cfg)
		mustOK(t, err)
		first, err := opt.StepClosure(closure)
		mustOK(t, err)
		for range 3 {
			_, err = opt.StepClosure(closure)
			mustOK(t, err)
		}
		last, err := closure()
		mustOK(t, err)
		if !(last < first/10) || p.DType() != lathe.BFloat16 {
			t.Errorf("%v: loss %v -> %v, dtype %v", dev, first, last, p.DType())
		}
	}
}

// TestLBFGSResume saves an LBFGS after two steps, loads it into a fresh
// one (made with other settings, which the file's replace) over fresh
// parameters of the same values, and requires the third step to be
// torch's, on the cpu and wgpu:0.
func TestLBFGSResume(t *testing.T) {
	for _, dev := range optimDevices(t) {
		for name, mk := range lbfgsCases {
			for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
				if !holds(dev, dt) {
					continue
				}
				t.Run(dev.String()+"/"+name+"/"+dt.String(), func(t *testing.T) {
					tol := 1e-9
					if dt == lathe.Float32 {
						tol = 1e-3
					}
					p, b, closure := lbfgsProblem(t, dev, dt)
					opt, err := NewLBFGS([]Param{{"p", p}, {"b", b}}, lbfgsLR[name], mk())
					mustOK(t, err)
					for range 2 {
						_, err := opt.StepClosure(closure)
						mustOK(t, err)
					}
					var buf bytes.Buffer
					mustOK(t, SaveOptimizer(&buf, opt))
					q, c, closure2 := lbfgsProblem(t, dev, dt)
					mustOK(t, VectorToParameters(must(ParametersToVector([]Param{{"p", p}, {"b", b}})), []Param{{"p", q}, {"b", c}}))
					other := DefaultLBFGS()
					other.HistorySize, other.MaxIter, other.ToleranceGrad = 7, 2, 0.5
					opt2, err := NewLBFGS([]Param{{"p", q}, {"b", c}}, 3, other)
					mustOK(t, err, LoadOptimizer(&buf, opt2))
					loss, err := opt2.StepClosure(closure2)
					mustOK(t, err)
					got := append(append([]float64{loss}, values(t, q.To(lathe.CPU))...), values(t, c.To(lathe.CPU))...)
					assertClose(t, "resumed step 3", got, lbfgsRef[name][dt.String()][2], tol)
				})
			}
		}
	}
}

func must(x *lathe.Tensor, err error) *lathe.Tensor {
	if err != nil {
		return lathe.Failed(err)
	}
	return x
}

// TestLBFGSLoadErrors: a file whose history does not fit its numbers is
// refused, and the optimizer keeps its own history.
func TestLBFGSLoadErrors(t *testing.T) {
	testenv.HostOnly(t)
	p, b, closure := lbfgsProblem(t, lathe.CPU, lathe.Float64)
	cfg := DefaultLBFGS()
	cfg.MaxIter, cfg.HistorySize = 5, 3
	opt, err := NewLBFGS([]Param{{"p", p}, {"b", b}}, 1, cfg)
	mustOK(t, err)
	_, err = opt.StepClosure(closure)
	mustOK(t, err)
	m, ts := opt.flatSave()
	for _, spoil := range []func(m map[string]string) []Param{
		func(m map[string]string) []Param { m["lbfgs.history"] = "9"; return ts },
		func(m map[string]string) []Param { m["lbfgs.history_size"] = "0"; return ts },
		func(m map[string]string) []Param { m["lbfgs.line_search_fn"] = "armijo"; return ts },
		func(m map[string]string) []Param { m["lbfgs.n_iter"] = "-1"; return ts },
		func(m map[string]string) []Param { delete(m, "lbfgs.ro.0"); return ts },
		func(m map[string]string) []Param { return ts[1:] }, // no d
	} {
		meta := map[string]string{"optimizer": "lbfgs", "params": "2", "schedulers": "0", "param.0": "p", "param.1": "b",
			"lr": "1", "tolerance_grad": "1e-07", "tolerance_change": "1e-09"}
		for k, v := range m {
			meta[k] = v
		}
		var buf bytes.Buffer
		mustOK(t, writeSafetensors("test", &buf, spoil(meta), meta))
		st := opt.st
		if err := LoadOptimizer(&buf, opt); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("got %v, want ErrValue", err)
		}
		if opt.st.d != st.d || opt.st.d.Err() != nil || opt.cfg.HistorySize != 3 {
			t.Fatal("a failed load changed the history or the settings")
		}
	}
}
