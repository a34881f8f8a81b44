package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Optimizer updates parameters from their gradients.
type Optimizer interface {
	// Step updates every parameter that has a gradient, from that gradient,
	// under lathe.NoGrad. Either every parameter is updated or, on error,
	// none is.
	Step() error
	// ZeroGrad forgets every parameter's gradient (torch's
	// zero_grad(set_to_none=True)).
	ZeroGrad()
}

// paramSet is what every optimizer keeps: the handles it updates.
type paramSet struct {
	params []Param
}

func newParamSet(op string, params []Param) (paramSet, error) {
	if len(params) == 0 {
		return paramSet{}, nnError(op, lathe.ErrValue, "params", "is empty", "pass the model's Parameters()")
	}
	for _, p := range params {
		if p.T == nil {
			return paramSet{}, nnError(op, lathe.ErrValue, p.Name, "is nil", "")
		}
		if err := p.T.Err(); err != nil {
			return paramSet{}, err
		}
		if !p.T.DType().IsFloat() || !p.T.IsLeaf() {
			return paramSet{}, nnError(op, lathe.ErrValue, p.Name, "is not a float leaf tensor", "optimize parameters, not results of ops")
		}
	}
	return paramSet{params: append([]Param(nil), params...)}, nil
}

// ZeroGrad forgets every parameter's gradient.
func (s *paramSet) ZeroGrad() {
	for _, p := range s.params {
		p.T.ZeroGrad()
	}
}

// update is one parameter's new value and state, made before any handle is
// rebound so that a failing step changes nothing.
type update struct {
	i     int
	next  *lathe.Tensor
	grad  *lathe.Tensor
	state []*lathe.Tensor
}

// step runs f for each parameter with a gradient under NoGrad, then rebinds
// the parameters and hands the new states to commit.
func (s *paramSet) step(f func(i int, p, g *lathe.Tensor) (next *lathe.Tensor, state []*lathe.Tensor), commit func(u update)) error {
	var ups []update
	var err error
	lathe.NoGrad(func() {
		for i, p := range s.params {
			g := p.T.Grad()
			if g == nil {
				continue // torch skips a parameter whose grad is None
			}
			next, state := f(i, p.T, g)
			for _, t := range append(state, next) {
				if t == nil {
					continue // a state the optimizer does not keep
				}
				if e := t.Err(); e != nil {
					err = e
					return
				}
			}
			ups = append(ups, update{i: i, next: next, grad: g, state: state})
		}
	})
	if err != nil {
		return err
	}
	for _, u := range ups {
		if err := rebind(s.params[u.i].T, u.next, u.grad); err != nil {
			return err
		}
		commit(u)
	}
	return nil
}

func checkHyper(op, name string, v float64, ok bool) error {
	if ok && !math.IsNaN(v) {
		return nil
	}
	return nnError(op, lathe.ErrValue, name, "is "+strconv.FormatFloat(v, 'g', -1, 64), "")
}

// SGD is stochastic gradient descent with optional momentum, Nesterov
// momentum, weight decay and dampening, with torch.optim.SGD's update:
//
//	d = g + wd·p
//	b = d on the first step, else μ·b + (1-dampening)·d
//	d = d + μ·b (Nesterov) or b
//	p = p - lr·d
type SGD struct {
	paramSet
	LR                               float64
	Momentum, Dampening, WeightDecay float64
	Nesterov                         bool
	buf                              []*lathe.Tensor
}

// SGDOption sets an option of NewSGD.
type SGDOption func(*SGD)

// Momentum sets the momentum factor μ (0 by default).
func Momentum(mu float64) SGDOption { return func(s *SGD) { s.Momentum = mu } }

// Nesterov switches on Nesterov momentum (needs momentum > 0 and no dampening).
func Nesterov() SGDOption { return func(s *SGD) { s.Nesterov = true } }

// WeightDecay sets the L2 penalty added to the gradient (0 by default).
func WeightDecay(wd float64) SGDOption { return func(s *SGD) { s.WeightDecay = wd } }

// Dampening sets the dampening of momentum (0 by default).
func Dampening(d float64) SGDOption { return func(s *SGD) { s.Dampening = d } }

// NewSGD makes an SGD optimizer over params with learning rate lr.
func NewSGD(params []Param, lr float64, opts ...SGDOption) (*SGD, error) {
	ps, err := newParamSet("sgd", params)
	if err != nil {
		return nil, err
	}
	s := &SGD{paramSet: ps, LR: lr, buf: make([]*lathe.Tensor, len(ps.params))}
	for _, f := range opts {
		f(s)
	}
	for _, c := range []error{
		checkHyper("sgd", "lr", lr, lr >= 0),
		checkHyper("sgd", "momentum", s.Momentum, s.Momentum >= 0),
		checkHyper("sgd", "weight_decay", s.WeightDecay, s.WeightDecay >= 0),
		checkHyper("sgd", "dampening", s.Dampening, true),
	} {
		if c != nil {
			return nil, c
		}
	}
	if s.Nesterov && (s.Momentum <= 0 || s.Dampening != 0) {
		return nil, nnError("sgd", lathe.ErrValue, "nesterov", "needs momentum > 0 and zero dampening", "")
	}
	return s, nil
}

// Step applies one SGD update.
func (s *SGD) Step() error {
	return s.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		d := g
		if s.WeightDecay != 0 {
			d = d.Add(p.MulScalar(s.WeightDecay))
		}
		var buf *lathe.Tensor
		if s.Momentum != 0 {
			if buf = s.buf[i]; buf == nil {
				buf = d.Clone() // d may be the gradient, which ZeroGrad releases (torch clones too)
			} else {
				buf = buf.MulScalar(s.Momentum).Add(d.MulScalar(1 - s.Dampening))
			}
			if s.Nesterov {
				d = d.Add(buf.MulScalar(s.Momentum))
			} else {
				d = buf
			}
		}
		step := d.MulScalar(s.LR)
		defer step.Release() // a temporary: back to the pool for the next step
		return p.Sub(step), []*lathe.Tensor{buf}
	}, func(u update) { s.buf[u.i] = u.state[0] })
}

// Adam is the Adam optimizer with torch.optim.Adam's update (PyTorch 1.13,
// amsgrad=False), the weight decay added to the gradient:
//
//	g = g + wd·p
//	m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
//	p = p - lr/(1-β1ᵗ) · m / (√v/√(1-β2ᵗ) + eps)
//
// AdamW is the same with decoupled weight decay.
type Adam struct {
	paramSet
	LR, Eps, WeightDecay float64
	Betas                [2]float64
	decoupled            bool
	steps                []int
	m, v                 []*lathe.Tensor
}

// NewAdam makes an Adam optimizer (torch's defaults are lr 1e-3, betas
// {0.9, 0.999}, eps 1e-8, weight decay 0).
func NewAdam(params []Param, lr float64, betas [2]float64, eps, weightDecay float64) (*Adam, error) {
	return newAdam("adam", params, lr, betas, eps, weightDecay, false)
}

// NewAdamW makes an AdamW optimizer: Adam whose weight decay multiplies the
// parameter by 1 - lr·wd before the update instead of entering the gradient
// (torch.optim.AdamW; its default weight decay is 1e-2).
func NewAdamW(params []Param, lr float64, betas [2]float64, eps, weightDecay float64) (*Adam, error) {
	return newAdam("adamw", params, lr, betas, eps, weightDecay, true)
}

func newAdam(op string, params []Param, lr float64, betas [2]float64, eps, wd float64, decoupled bool) (*Adam, error) {
	ps, err := newParamSet(op, params)
	if err != nil {
		return nil, err
	}
	for _, c := range []error{
		checkHyper(op, "lr", lr, lr >= 0),
		checkHyper(op, "eps", eps, eps >= 0),
		checkHyper(op, "betas[0]", betas[0], betas[0] >= 0 && betas[0] < 1),
		checkHyper(op, "betas[1]", betas[1], betas[1] >= 0 && betas[1] < 1),
		checkHyper(op, "weight_decay", wd, wd >= 0),
	} {
		if c != nil {
			return nil, c
		}
	}
	n := len(ps.params)
	return &Adam{paramSet: ps, LR: lr, Betas: betas, Eps: eps, WeightDecay: wd, decoupled: decoupled,
		steps: make([]int, n), m: make([]*lathe.Tensor, n), v: make([]*lathe.Tensor, n)}, nil
}

// Step applies one Adam (or AdamW) update. The operations follow
// torch/optim/adam.py's _single_tensor_adam in order, so float32 results
// round as PyTorch's do.
func (a *Adam) Step() error {
	b1, b2 := a.Betas[0], a.Betas[1]
	return a.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		t := a.steps[i] + 1
		if a.WeightDecay != 0 {
			if a.decoupled {
				p = p.MulScalar(1 - a.LR*a.WeightDecay)
			} else {
				g = g.Add(p.MulScalar(a.WeightDecay))
			}
		}
		m, v := a.m[i], a.v[i]
		if m == nil {
			m = lathe.Zeros(p.Device(), p.DType(), p.Shape()...)
			v = m
		}
		m = m.MulScalar(b1).Add(g.MulScalar(1 - b1))
		v = v.MulScalar(b2).Add(g.MulScalar(1 - b2).Mul(g)) // addcmul: (value·g)·g
		bc1 := 1 - math.Pow(b1, float64(t))
		bc2 := 1 - math.Pow(b2, float64(t))
		stepSize := a.LR / bc1
		denom := v.Sqrt().DivScalar(math.Sqrt(bc2)).AddScalar(a.Eps)
		return p.Add(m.MulScalar(-stepSize).Div(denom)), []*lathe.Tensor{m, v} // addcdiv: (value·m)/denom
	}, func(u update) {
		a.steps[u.i]++
		a.m[u.i], a.v[u.i] = u.state[0], u.state[1]
	})
}
