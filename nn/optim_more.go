package nn

import (
	"math"

	"github.com/lathe-ml/lathe"
)

// The optimizers of torch.optim that follow Adam: Adamax, NAdam, RAdam
// and Adadelta (PyTorch 1.13, single-tensor code op for op, so that
// float32 and the 16-bit dtypes round as PyTorch's do: the state is kept
// in the parameter's dtype, as torch keeps it).

// adamChecks checks betas, eps and weight_decay as torch's Adam-like constructors do.
func adamChecks(op string, betas [2]float64, eps, wd float64) error {
	return firstErr(
		checkHyper(op, "eps", eps, eps >= 0, "≥ 0"),
		checkHyper(op, "betas[0]", betas[0], betas[0] >= 0 && betas[0] < 1, "in [0, 1)"),
		checkHyper(op, "betas[1]", betas[1], betas[1] >= 0 && betas[1] < 1, "in [0, 1)"),
		checkHyper(op, "weight_decay", wd, wd >= 0, "≥ 0"),
	)
}

// Adamax is torch.optim.Adamax, Adam with the infinity norm:
//
//	g = -g (Maximize);  g = g + wd·p
//	m = β1·m + (1-β1)·g;  u = max(β2·u, |g| + eps)
//	p = p - lr/(1-β1ᵗ) · m/u
type Adamax struct {
	paramSet
	Eps, WeightDecay float64
	Betas            [2]float64
	Maximize         bool
	steps            []int
	m, u             []*lathe.Tensor
}

// NewAdamax makes an Adamax optimizer over params with learning rate lr
// (torch's default is 2e-3). It takes the options Betas (0.9, 0.999 by
// default), Eps (1e-8), WeightDecay (0) and Maximize.
func NewAdamax(params []Param, lr float64, opts ...OptimOption) (*Adamax, error) {
	c := optimConfig{betas: [2]float64{0.9, 0.999}, eps: 1e-8}
	if err := configure("adamax", &c, opts, "betas", "eps", "weight_decay", "maximize"); err != nil {
		return nil, err
	}
	ps, err := newParamSet("adamax", params, lr)
	if err != nil {
		return nil, err
	}
	n := len(ps.params)
	a := &Adamax{paramSet: ps, Eps: c.eps, WeightDecay: c.weightDecay, Betas: c.betas, Maximize: c.maximize,
		steps: make([]int, n), m: make([]*lathe.Tensor, n), u: make([]*lathe.Tensor, n)}
	if err := a.check(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Adamax) check() error { return adamChecks("adamax", a.Betas, a.Eps, a.WeightDecay) }

// Step applies one Adamax update.
func (a *Adamax) Step() error {
	if err := a.check(); err != nil {
		return err
	}
	b1, b2 := a.Betas[0], a.Betas[1]
	return a.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := a.misfit(i, p, a.m[i], a.u[i]); bad != nil {
			return bad, nil
		}
		t := a.steps[i] + 1
		var tmp scratch
		defer tmp.release()
		g = tmp.coupled(g, p, a.Maximize, a.WeightDecay)
		m, u := a.m[i], a.u[i]
		if m == nil {
			m = tmp.t(lathe.Zeros(p.Device(), p.DType(), p.Shape()...))
			u = m
		}
		m = tmp.t(m.MulScalar(b1)).AddScaled(g, 1-b1)
		u = tmp.t(u.MulScalar(b2)).Maximum(tmp.t(tmp.t(g.Abs()).AddScalar(a.Eps))) // amax of the two, NaN kept
		clr := a.LR / (1 - powInt(b1, t))
		return p.Add(tmp.t(tmp.t(m.MulScalar(-clr)).Div(u))), []*lathe.Tensor{m, u} // addcdiv: (value·m)/u
	}, func(up update) {
		a.steps[up.i]++
		replace(&a.m[up.i], up.state[0])
		replace(&a.u[up.i], up.state[1])
	})
}

// NAdam is torch.optim.NAdam, Adam with Nesterov momentum whose factor
// μₜ = β1·(1 - ½·0.96^(t·ψ)) warms up with the momentum decay ψ:
//
//	g = g + wd·p
//	m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
//	d = √(v/(1-β2ᵗ)) + eps
//	p = p - lr·(1-μₜ)/(1-Πμ) · g/d - lr·μₜ₊₁/(1-Πμ·μₜ₊₁) · m/d
//
// The product Πμ of the factors is kept in float32, as torch keeps it (a
// float32 tensor), so the trajectory is PyTorch's in every dtype.
type NAdam struct {
	paramSet
	Eps, WeightDecay, MomentumDecay float64
	Betas                           [2]float64
	steps                           []int
	muProduct                       []float64 // float32 values
	m, v                            []*lathe.Tensor
}

// NewNAdam makes an NAdam optimizer over params with learning rate lr
// (torch's default is 2e-3). It takes the options Betas (0.9, 0.999 by
// default), Eps (1e-8), WeightDecay (0) and MomentumDecay (4e-3).
func NewNAdam(params []Param, lr float64, opts ...OptimOption) (*NAdam, error) {
	c := optimConfig{betas: [2]float64{0.9, 0.999}, eps: 1e-8, momentumDecay: 4e-3}
	if err := configure("nadam", &c, opts, "betas", "eps", "weight_decay", "momentum_decay"); err != nil {
		return nil, err
	}
	ps, err := newParamSet("nadam", params, lr)
	if err != nil {
		return nil, err
	}
	n := len(ps.params)
	a := &NAdam{paramSet: ps, Eps: c.eps, WeightDecay: c.weightDecay, MomentumDecay: c.momentumDecay, Betas: c.betas,
		steps: make([]int, n), muProduct: make([]float64, n), m: make([]*lathe.Tensor, n), v: make([]*lathe.Tensor, n)}
	for i := range a.muProduct {
		a.muProduct[i] = 1
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *NAdam) check() error {
	return firstErr(adamChecks("nadam", a.Betas, a.Eps, a.WeightDecay),
		checkHyper("nadam", "momentum_decay", a.MomentumDecay, a.MomentumDecay >= 0, "≥ 0"))
}

// Step applies one NAdam update.
func (a *NAdam) Step() error {
	if err := a.check(); err != nil {
		return err
	}
	b1, b2 := a.Betas[0], a.Betas[1]
	products := make([]float64, len(a.params))
	return a.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := a.misfit(i, p, a.m[i], a.v[i]); bad != nil {
			return bad, nil
		}
		t := float64(a.steps[i] + 1)
		var tmp scratch
		defer tmp.release()
		bc2 := 1 - powInt(b2, a.steps[i]+1)
		g = tmp.coupled(g, p, false, a.WeightDecay)
		mu := b1 * (1 - 0.5*math.Pow(0.96, t*a.MomentumDecay))
		muNext := b1 * (1 - 0.5*math.Pow(0.96, (t+1)*a.MomentumDecay))
		// torch's float32 tensor times a Python float: float32 arithmetic.
		prod := float32(a.muProduct[i]) * float32(mu)
		prodNext := prod * float32(mu) * float32(muNext)
		products[i] = float64(prod)
		m, v := a.m[i], a.v[i]
		if m == nil {
			m = tmp.t(lathe.Zeros(p.Device(), p.DType(), p.Shape()...))
			v = m
		}
		m = tmp.t(m.MulScalar(b1)).AddScaled(g, 1-b1)
		v = tmp.t(v.MulScalar(b2)).Add(tmp.t(tmp.t(g.MulScalar(1 - b2)).Mul(g))) // addcmul
		denom := tmp.t(tmp.t(tmp.t(v.DivScalar(bc2)).Sqrt()).AddScalar(a.Eps))
		p1 := tmp.t(p.Add(tmp.t(tmp.t(g.MulScalar(-a.LR * (1 - mu) / (1 - float64(prod)))).Div(denom))))
		return p1.Add(tmp.t(tmp.t(m.MulScalar(-a.LR * muNext / (1 - float64(prodNext)))).Div(denom))), []*lathe.Tensor{m, v}
	}, func(up update) {
		a.steps[up.i]++
		a.muProduct[up.i] = products[up.i]
		replace(&a.m[up.i], up.state[0])
		replace(&a.v[up.i], up.state[1])
	})
}

// RAdam is torch.optim.RAdam, Adam whose adaptive step is rectified by the
// variance of its second moment's estimate, and left out while that
// estimate rests on too few steps (ρₜ ≤ 5):
//
//	g = g + wd·p
//	m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
//	ρ∞ = 2/(1-β2) - 1;  ρₜ = ρ∞ - 2t·β2ᵗ/(1-β2ᵗ)
//	p = p - lr·m/(1-β1ᵗ) · r·√(1-β2ᵗ)/(√v + eps)   (ρₜ > 5, r the rectification)
//	p = p - lr·m/(1-β1ᵗ)                           (otherwise)
type RAdam struct {
	paramSet
	Eps, WeightDecay float64
	Betas            [2]float64
	steps            []int
	m, v             []*lathe.Tensor
}

// NewRAdam makes a RAdam optimizer over params with learning rate lr
// (torch's default is 1e-3). It takes the options Betas (0.9, 0.999 by
// default), Eps (1e-8) and WeightDecay (0).
func NewRAdam(params []Param, lr float64, opts ...OptimOption) (*RAdam, error) {
	c := optimConfig{betas: [2]float64{0.9, 0.999}, eps: 1e-8}
	if err := configure("radam", &c, opts, "betas", "eps", "weight_decay"); err != nil {
		return nil, err
	}
	ps, err := newParamSet("radam", params, lr)
	if err != nil {
		return nil, err
	}
	n := len(ps.params)
	a := &RAdam{paramSet: ps, Eps: c.eps, WeightDecay: c.weightDecay, Betas: c.betas,
		steps: make([]int, n), m: make([]*lathe.Tensor, n), v: make([]*lathe.Tensor, n)}
	if err := a.check(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *RAdam) check() error { return adamChecks("radam", a.Betas, a.Eps, a.WeightDecay) }

// Step applies one RAdam update.
func (a *RAdam) Step() error {
	if err := a.check(); err != nil {
		return err
	}
	b1, b2 := a.Betas[0], a.Betas[1]
	return a.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := a.misfit(i, p, a.m[i], a.v[i]); bad != nil {
			return bad, nil
		}
		n := a.steps[i] + 1
		t := float64(n)
		var tmp scratch
		defer tmp.release()
		bc1 := 1 - powInt(b1, n)
		bc2 := 1 - powInt(b2, n)
		g = tmp.coupled(g, p, false, a.WeightDecay)
		m, v := a.m[i], a.v[i]
		if m == nil {
			m = tmp.t(lathe.Zeros(p.Device(), p.DType(), p.Shape()...))
			v = m
		}
		m = tmp.t(m.MulScalar(b1)).AddScaled(g, 1-b1)
		v = tmp.t(v.MulScalar(b2)).Add(tmp.t(tmp.t(g.MulScalar(1 - b2)).Mul(g))) // addcmul
		mhat := tmp.t(m.DivScalar(bc1))
		rhoInf := 2/(1-b2) - 1
		rhoT := rhoInf - 2*t*powInt(b2, n)/bc2
		if rhoT > 5 {
			rect := math.Sqrt((rhoT - 4) * (rhoT - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rhoT))
			adaptive := tmp.t(tmp.t(tmp.t(tmp.t(v.Sqrt()).AddScalar(a.Eps)).Reciprocal()).MulScalar(math.Sqrt(bc2))) // float / tensor
			upd := tmp.t(tmp.t(tmp.t(mhat.MulScalar(a.LR)).Mul(adaptive)).MulScalar(rect))
			return p.Sub(upd), []*lathe.Tensor{m, v}
		}
		return p.Sub(tmp.t(mhat.MulScalar(a.LR))), []*lathe.Tensor{m, v}
	}, func(up update) {
		a.steps[up.i]++
		replace(&a.m[up.i], up.state[0])
		replace(&a.v[up.i], up.state[1])
	})
}

// Adadelta is torch.optim.Adadelta:
//
//	g = -g (Maximize);  g = g + wd·p
//	s = ρ·s + (1-ρ)·g²
//	d = √(a + eps)/√(s + eps) · g
//	a = ρ·a + (1-ρ)·d²
//	p = p - lr·d
type Adadelta struct {
	paramSet
	Rho, Eps, WeightDecay float64
	Maximize              bool
	steps                 []int
	squareAvg, accDelta   []*lathe.Tensor
}

// NewAdadelta makes an Adadelta optimizer over params with learning rate
// lr (torch's default is 1.0). It takes the options Rho (0.9 by default),
// Eps (1e-6), WeightDecay (0) and Maximize.
func NewAdadelta(params []Param, lr float64, opts ...OptimOption) (*Adadelta, error) {
	c := optimConfig{rho: 0.9, eps: 1e-6}
	if err := configure("adadelta", &c, opts, "rho", "eps", "weight_decay", "maximize"); err != nil {
		return nil, err
	}
	ps, err := newParamSet("adadelta", params, lr)
	if err != nil {
		return nil, err
	}
	n := len(ps.params)
	a := &Adadelta{paramSet: ps, Rho: c.rho, Eps: c.eps, WeightDecay: c.weightDecay, Maximize: c.maximize,
		steps: make([]int, n), squareAvg: make([]*lathe.Tensor, n), accDelta: make([]*lathe.Tensor, n)}
	if err := a.check(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Adadelta) check() error {
	return firstErr(
		checkHyper("adadelta", "rho", a.Rho, a.Rho >= 0 && a.Rho <= 1, "in [0, 1]"),
		checkHyper("adadelta", "eps", a.Eps, a.Eps >= 0, "≥ 0"),
		checkHyper("adadelta", "weight_decay", a.WeightDecay, a.WeightDecay >= 0, "≥ 0"),
	)
}

// Step applies one Adadelta update.
func (a *Adadelta) Step() error {
	if err := a.check(); err != nil {
		return err
	}
	rho := a.Rho
	return a.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := a.misfit(i, p, a.squareAvg[i], a.accDelta[i]); bad != nil {
			return bad, nil
		}
		var tmp scratch
		defer tmp.release()
		g = tmp.coupled(g, p, a.Maximize, a.WeightDecay)
		s, acc := a.squareAvg[i], a.accDelta[i]
		if s == nil {
			s = tmp.t(lathe.Zeros(p.Device(), p.DType(), p.Shape()...))
			acc = s
		}
		s = tmp.t(s.MulScalar(rho)).Add(tmp.t(tmp.t(g.MulScalar(1 - rho)).Mul(g))) // addcmul
		std := tmp.t(tmp.t(s.AddScalar(a.Eps)).Sqrt())
		delta := tmp.t(tmp.t(tmp.t(tmp.t(acc.AddScalar(a.Eps)).Sqrt()).Div(std)).Mul(g))
		acc = tmp.t(acc.MulScalar(rho)).Add(tmp.t(tmp.t(delta.MulScalar(1 - rho)).Mul(delta))) // addcmul
		return p.AddScaled(delta, -a.LR), []*lathe.Tensor{s, acc}
	}, func(up update) {
		a.steps[up.i]++
		replace(&a.squareAvg[up.i], up.state[0])
		replace(&a.accDelta[up.i], up.state[1])
	})
}

func (a *Adamax) kind() string { return "adamax" }
func (a *Adamax) hypers() []hyper {
	return []hyper{{"lr", &a.LR, nil}, {"beta1", &a.Betas[0], nil}, {"beta2", &a.Betas[1], nil}, {"eps", &a.Eps, nil},
		{"weight_decay", &a.WeightDecay, nil}, {"maximize", nil, &a.Maximize}}
}
func (a *Adamax) slots() []slot  { return []slot{{"exp_avg", &a.m}, {"exp_inf", &a.u}} }
func (a *Adamax) counts() *[]int { return &a.steps }

func (a *NAdam) kind() string { return "nadam" }
func (a *NAdam) hypers() []hyper {
	return []hyper{{"lr", &a.LR, nil}, {"beta1", &a.Betas[0], nil}, {"beta2", &a.Betas[1], nil}, {"eps", &a.Eps, nil},
		{"weight_decay", &a.WeightDecay, nil}, {"momentum_decay", &a.MomentumDecay, nil}}
}
func (a *NAdam) slots() []slot  { return []slot{{"exp_avg", &a.m}, {"exp_avg_sq", &a.v}} }
func (a *NAdam) counts() *[]int { return &a.steps }

// perParam is NAdam's mu_product, a product of factors in [0, 1) that
// starts at 1.
func (a *NAdam) perParam() []perParamFloat {
	return []perParamFloat{{"mu_product", &a.muProduct, 1, 0, 1}}
}

func (a *RAdam) kind() string { return "radam" }
func (a *RAdam) hypers() []hyper {
	return []hyper{{"lr", &a.LR, nil}, {"beta1", &a.Betas[0], nil}, {"beta2", &a.Betas[1], nil}, {"eps", &a.Eps, nil},
		{"weight_decay", &a.WeightDecay, nil}}
}
func (a *RAdam) slots() []slot  { return []slot{{"exp_avg", &a.m}, {"exp_avg_sq", &a.v}} }
func (a *RAdam) counts() *[]int { return &a.steps }

func (a *Adadelta) kind() string { return "adadelta" }
func (a *Adadelta) hypers() []hyper {
	return []hyper{{"lr", &a.LR, nil}, {"rho", &a.Rho, nil}, {"eps", &a.Eps, nil}, {"weight_decay", &a.WeightDecay, nil},
		{"maximize", nil, &a.Maximize}}
}
func (a *Adadelta) slots() []slot {
	return []slot{{"square_avg", &a.squareAvg}, {"acc_delta", &a.accDelta}}
}
func (a *Adadelta) counts() *[]int { return &a.steps }

func (a *Adamax) setMomentum(m float64) { a.Betas[0] = m }
func (a *Adamax) momentum() float64     { return a.Betas[0] }
func (a *NAdam) setMomentum(m float64)  { a.Betas[0] = m }
func (a *NAdam) momentum() float64      { return a.Betas[0] }
func (a *RAdam) setMomentum(m float64)  { a.Betas[0] = m }
func (a *RAdam) momentum() float64      { return a.Betas[0] }

// powInt is xⁿ for n ≥ 0 correctly rounded (in all but freak cases), as
// the C library's pow that PyTorch's beta ** step calls gives it, where
// math.Pow may be an ulp or two off. RAdam needs it: its ρₜ subtracts two
// numbers near 2/(1-β2), which makes an ulp of β2ᵗ hundreds.
func powInt(x float64, n int) float64 {
	if n < 0 || math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return math.Pow(x, float64(n))
	}
	hi, lo := 1.0, 0.0
	bh, bl := x, 0.0
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			hi, lo = ddMul(hi, lo, bh, bl)
		}
		bh, bl = ddMul(bh, bl, bh, bl)
	}
	return hi + lo
}

// ddMul multiplies two double-double numbers.
func ddMul(a, al, b, bl float64) (float64, float64) {
	p := a * b
	e := math.FMA(a, b, -p) + (a*bl + al*b)
	s := p + e
	return s, e - (s - p)
}
