package nn

import (
	"math"

	"github.com/lathe-ml/lathe"
)

// Rprop and ASGD, as torch.optim.Rprop and torch.optim.ASGD (PyTorch
// 1.13, single-tensor code op for op, the state in the parameter's dtype
// as torch keeps it).

// Etas sets Rprop's (etaminus, etaplus), the factors by which a step size
// shrinks where the gradient changed sign and grows where it kept it
// (0.5, 1.2 by default; 0 < etaminus < 1 < etaplus).
func Etas(minus, plus float64) OptimOption {
	return OptimOption{"etas", func(c *optimConfig) { c.etas = [2]float64{minus, plus} }}
}

// StepSizes sets the smallest and largest step size Rprop takes (torch's
// step_sizes, 1e-6 and 50 by default).
func StepSizes(lo, hi float64) OptimOption {
	return OptimOption{"step_sizes", func(c *optimConfig) { c.stepSizes = [2]float64{lo, hi} }}
}

// Lambd sets ASGD's decay term λ (torch's lambd, 1e-4 by default).
func Lambd(l float64) OptimOption {
	return OptimOption{"lambd", func(c *optimConfig) { c.lambd = l }}
}

// T0 sets the step after which ASGD starts averaging (torch's t0, 1e6 by
// default).
func T0(t0 float64) OptimOption { return OptimOption{"t0", func(c *optimConfig) { c.t0 = t0 }} }

// Rprop is torch.optim.Rprop, resilient backpropagation: each element has
// its own step size, which grows by etaplus where the gradient kept its
// sign since the last step and shrinks by etaminus where it changed it,
// and the parameter moves by its step size against the gradient's sign:
//
//	g = -g (Maximize)
//	s = sign(g·prev);  η = η·etaplus (s > 0), η·etaminus (s < 0), η (s = 0)
//	η = clamp(η, step_sizes[0], step_sizes[1])
//	g = 0 where s < 0
//	p = p - sign(g)·η;  prev = g
//
// The step sizes start at lr, in the parameter's dtype, at each
// parameter's first step: as in torch, a learning rate set later (by a
// scheduler) reaches no step size. Rprop takes no weight decay, as
// torch's.
type Rprop struct {
	paramSet
	// Etas are (etaminus, etaplus); StepSizes the smallest and largest
	// step size.
	Etas, StepSizes [2]float64
	Maximize        bool
	steps           []int
	prev, stepSize  []*lathe.Tensor
}

// NewRprop makes an Rprop optimizer over params with learning rate lr, the
// step size each element starts with (torch's default is 1e-2). It takes
// the options Etas (0.5, 1.2 by default), StepSizes (1e-6, 50) and
// Maximize. lathe refuses step sizes below 0 or a smallest above the
// largest, which torch takes (clamping every step size to the largest).
func NewRprop(params []Param, lr float64, opts ...OptimOption) (*Rprop, error) {
	c := optimConfig{etas: [2]float64{0.5, 1.2}, stepSizes: [2]float64{1e-6, 50}}
	if err := configure("rprop", &c, opts, "etas", "step_sizes", "maximize"); err != nil {
		return nil, err
	}
	ps, err := newParamSet("rprop", params, lr)
	if err != nil {
		return nil, err
	}
	n := len(ps.params)
	r := &Rprop{paramSet: ps, Etas: c.etas, StepSizes: c.stepSizes, Maximize: c.maximize,
		steps: make([]int, n), prev: make([]*lathe.Tensor, n), stepSize: make([]*lathe.Tensor, n)}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Rprop) check() error {
	lo, hi := r.StepSizes[0], r.StepSizes[1]
	return firstErr(
		checkHyper("rprop", "etas[0]", r.Etas[0], r.Etas[0] > 0 && r.Etas[0] < 1, "in (0, 1)"),
		checkHyper("rprop", "etas[1]", r.Etas[1], r.Etas[1] > 1 && !math.IsInf(r.Etas[1], 1), "> 1 and finite"),
		checkHyper("rprop", "step_sizes[0]", lo, lo >= 0 && !math.IsInf(lo, 1), "≥ 0 and finite"),
		checkHyper("rprop", "step_sizes[1]", hi, hi >= lo && !math.IsInf(hi, 1), "≥ step_sizes[0] and finite"),
	)
}

// Step applies one Rprop update, op for op as torch/optim/rprop.py's
// _single_tensor_rprop.
func (r *Rprop) Step() error {
	if err := r.check(); err != nil {
		return err
	}
	etaminus, etaplus := r.Etas[0], r.Etas[1]
	return r.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := r.misfit(i, p, r.prev[i], r.stepSize[i]); bad != nil {
			return bad, nil
		}
		var tmp scratch
		defer tmp.release()
		if r.Maximize {
			g = tmp.t(g.Neg())
		}
		prev, size := r.prev[i], r.stepSize[i]
		if prev == nil {
			prev = tmp.t(lathe.ZerosLike(p))
		}
		if size == nil {
			size = tmp.t(lathe.Full(p.Device(), p.DType(), r.LR, p.Shape()...))
		}
		// sign[sign > 0] = etaplus; sign[sign < 0] = etaminus;
		// sign[sign == 0] = 1, each mask read from the sign as the
		// assignment before left it (NaN stays NaN).
		sign := tmp.t(tmp.t(g.Mul(prev)).Sign())
		sign = tmp.t(sign.MaskedFill(tmp.t(sign.GtScalar(0)), etaplus))
		shrink := tmp.t(sign.LtScalar(0))
		sign = tmp.t(sign.MaskedFill(shrink, etaminus))
		sign = tmp.t(sign.MaskedFill(tmp.t(sign.EqScalar(0)), 1))
		size = tmp.t(size.Mul(sign)).Clamp(r.StepSizes[0], r.StepSizes[1])
		// g becomes the next prev: a new tensor, never the gradient.
		g = g.MaskedFill(shrink, 0)
		return p.Sub(tmp.t(tmp.t(g.Sign()).Mul(size))), []*lathe.Tensor{g, size} // addcmul with value -1
	}, func(u update) {
		r.steps[u.i]++
		replace(&r.prev[u.i], u.state[0])
		replace(&r.stepSize[u.i], u.state[1])
	})
}

func (r *Rprop) kind() string { return "rprop" }
func (r *Rprop) hypers() []hyper {
	return []hyper{{"lr", &r.LR, nil}, {"etaminus", &r.Etas[0], nil}, {"etaplus", &r.Etas[1], nil},
		{"step_size_min", &r.StepSizes[0], nil}, {"step_size_max", &r.StepSizes[1], nil}, {"maximize", nil, &r.Maximize}}
}
func (r *Rprop) slots() []slot  { return []slot{{"prev", &r.prev}, {"step_size", &r.stepSize}} }
func (r *Rprop) counts() *[]int { return &r.steps }

// ASGD is torch.optim.ASGD, averaged stochastic gradient descent: SGD
// whose learning rate η decays with the step t, and which keeps the
// average ax of the parameter's values from step t0 on:
//
//	g = -g (Maximize);  g = g + wd·p
//	p = p·(1 - λ·η);  p = p - η·g
//	ax = ax + μ·(p - ax)  (μ ≠ 1), else ax = p
//	η = lr / (1 + λ·lr·t)^α;  μ = 1 / max(1, t - t0)
//
// η and μ are kept rounded to float32, as torch keeps them (float32
// tensors), and η starts at lr so rounded: the trajectory is PyTorch's in
// every dtype. The learning rate that a scheduler sets reaches η from the
// next step's η on, as in torch.
type ASGD struct {
	paramSet
	Lambd, Alpha, T0, WeightDecay float64
	Maximize                      bool
	steps                         []int
	eta, mu                       []float64 // float32 values
	ax                            []*lathe.Tensor
}

// NewASGD makes an ASGD optimizer over params with learning rate lr
// (torch's default is 1e-2). It takes the options Lambd (1e-4 by default),
// Alpha (0.75), T0 (1e6), WeightDecay (0) and Maximize. lathe refuses a
// negative or infinite λ, and NaN α or t0, which torch takes (a negative λ
// can make η NaN).
func NewASGD(params []Param, lr float64, opts ...OptimOption) (*ASGD, error) {
	c := optimConfig{lambd: 1e-4, alpha: 0.75, t0: 1e6}
	if err := configure("asgd", &c, opts, "lambd", "alpha", "t0", "weight_decay", "maximize"); err != nil {
		return nil, err
	}
	ps, err := newParamSet("asgd", params, lr)
	if err != nil {
		return nil, err
	}
	n := len(ps.params)
	a := &ASGD{paramSet: ps, Lambd: c.lambd, Alpha: c.alpha, T0: c.t0, WeightDecay: c.weightDecay, Maximize: c.maximize,
		steps: make([]int, n), eta: make([]float64, n), mu: make([]float64, n), ax: make([]*lathe.Tensor, n)}
	for i := range a.mu {
		a.mu[i] = 1
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *ASGD) check() error {
	return firstErr(
		checkHyper("asgd", "lambd", a.Lambd, a.Lambd >= 0 && !math.IsInf(a.Lambd, 1), "≥ 0 and finite"),
		checkHyper("asgd", "alpha", a.Alpha, true, "that is a number"),
		checkHyper("asgd", "t0", a.T0, true, "that is a number"),
		checkHyper("asgd", "weight_decay", a.WeightDecay, a.WeightDecay >= 0, "≥ 0"),
	)
}

// Eta is the learning rate η the next step of parameter i (its place in
// the optimizer) takes, as torch's state["eta"]: lr rounded to float32
// before its first step. It is NaN for an i out of range.
func (a *ASGD) Eta(i int) float64 {
	if i < 0 || i >= len(a.eta) {
		return math.NaN()
	}
	if a.steps[i] == 0 {
		return float64(float32(a.LR))
	}
	return a.eta[i]
}

// Mu is the averaging factor μ the next step of parameter i takes, as
// torch's state["mu"] (1 before its first step). It is NaN for an i out of
// range.
func (a *ASGD) Mu(i int) float64 {
	if i < 0 || i >= len(a.mu) {
		return math.NaN()
	}
	return a.mu[i]
}

// Averaged returns a copy of each parameter's average ax (torch's
// state["ax"]), by the parameters' names, to evaluate the model with, for
// example by loading them into a copy of it; T is nil for a parameter
// that has not stepped yet. The caller releases the copies.
func (a *ASGD) Averaged() []Param {
	out := make([]Param, len(a.params))
	for i, p := range a.params {
		out[i].Name = p.Name
		if a.ax[i] != nil {
			lathe.NoGrad(func() { out[i].T = a.ax[i].Clone() })
		}
	}
	return out
}

// Step applies one ASGD update, op for op as torch/optim/asgd.py's
// _single_tensor_asgd.
func (a *ASGD) Step() error {
	if err := a.check(); err != nil {
		return err
	}
	etas, mus := make([]float64, len(a.params)), make([]float64, len(a.params))
	return a.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := a.misfit(i, p, a.ax[i]); bad != nil {
			return bad, nil
		}
		var tmp scratch
		defer tmp.release()
		t := float64(a.steps[i] + 1)
		eta, mu := a.Eta(i), a.mu[i]
		g = tmp.coupled(g, p, a.Maximize, a.WeightDecay)
		p = tmp.t(p.MulScalar(1 - a.Lambd*eta))
		next := p.AddScaled(g, -eta)
		var ax *lathe.Tensor
		if mu != 1 {
			old := a.ax[i]
			if old == nil { // torch's ax starts at zeros
				old = tmp.t(lathe.ZerosLike(next))
			}
			ax = old.Add(tmp.t(tmp.t(next.Sub(old)).MulScalar(mu)))
		} else {
			ax = next.Clone()
		}
		etas[i] = float64(float32(a.LR / math.Pow(1+a.Lambd*a.LR*t, a.Alpha)))
		mus[i] = float64(float32(1 / math.Max(1, t-a.T0)))
		return next, []*lathe.Tensor{ax}
	}, func(u update) {
		a.steps[u.i]++
		a.eta[u.i], a.mu[u.i] = etas[u.i], mus[u.i]
		replace(&a.ax[u.i], u.state[0])
	})
}

func (a *ASGD) kind() string { return "asgd" }
func (a *ASGD) hypers() []hyper {
	return []hyper{{"lr", &a.LR, nil}, {"lambd", &a.Lambd, nil}, {"alpha", &a.Alpha, nil}, {"t0", &a.T0, nil},
		{"weight_decay", &a.WeightDecay, nil}, {"maximize", nil, &a.Maximize}}
}
func (a *ASGD) slots() []slot  { return []slot{{"ax", &a.ax}} }
func (a *ASGD) counts() *[]int { return &a.steps }

// perParam is ASGD's eta (≥ 0; before a parameter's first step the
// learning rate is read instead) and mu (in [0, 1]).
func (a *ASGD) perParam() []perParamFloat {
	return []perParamFloat{{"eta", &a.eta, 0, 0, math.MaxFloat64}, {"mu", &a.mu, 1, 0, 1}}
}
