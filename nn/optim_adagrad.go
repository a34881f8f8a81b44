package nn

import "github.com/lathe-ml/lathe"

// Adagrad is torch.optim.Adagrad (PyTorch 1.13, dense gradients):
//
//	g = -g (Maximize)
//	g = g + wd·p
//	s = s + g²   (s starts at the initial accumulator value)
//	p = p - lr/(1 + (t-1)·lrDecay) · g / (√s + eps)
type Adagrad struct {
	paramSet
	LRDecay, WeightDecay, InitialAccumulator, Eps float64
	Maximize                                      bool
	steps                                         []int
	sum                                           []*lathe.Tensor
}

// NewAdagrad makes an Adagrad optimizer over params with learning rate lr
// (torch's default is 1e-2). It takes the options LRDecay (0 by default),
// WeightDecay (0), InitialAccumulator (0), Eps (1e-10) and Maximize.
func NewAdagrad(params []Param, lr float64, opts ...OptimOption) (*Adagrad, error) {
	c := optimConfig{eps: 1e-10}
	if err := configure("adagrad", &c, opts, "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "maximize"); err != nil {
		return nil, err
	}
	ps, err := newParamSet("adagrad", params, lr)
	if err != nil {
		return nil, err
	}
	n := len(ps.params)
	a := &Adagrad{paramSet: ps, LRDecay: c.lrDecay, WeightDecay: c.weightDecay, InitialAccumulator: c.initAccum, Eps: c.eps,
		Maximize: c.maximize, steps: make([]int, n), sum: make([]*lathe.Tensor, n)}
	if err := a.check(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Adagrad) check() error {
	return firstErr(
		checkHyper("adagrad", "lr_decay", a.LRDecay, a.LRDecay >= 0, "≥ 0"),
		checkHyper("adagrad", "weight_decay", a.WeightDecay, a.WeightDecay >= 0, "≥ 0"),
		checkHyper("adagrad", "initial_accumulator_value", a.InitialAccumulator, a.InitialAccumulator >= 0, "≥ 0"),
		checkHyper("adagrad", "eps", a.Eps, a.Eps >= 0, "≥ 0"),
	)
}

// Step applies one Adagrad update, op for op as torch/optim/adagrad.py's
// _single_tensor_adagrad, so that float32 rounds as PyTorch's does. torch
// makes the accumulator when the optimizer is built; here it is made at the
// parameter's first step, from the same value.
func (a *Adagrad) Step() error {
	if err := a.check(); err != nil {
		return err
	}
	return a.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := a.misfit(i, p, a.sum[i]); bad != nil {
			return bad, nil
		}
		t := a.steps[i] + 1
		var tmp scratch
		defer tmp.release()
		g = tmp.coupled(g, p, a.Maximize, a.WeightDecay)
		clr := a.LR / (1 + float64(t-1)*a.LRDecay)
		s := a.sum[i]
		if s == nil {
			s = tmp.t(lathe.Full(p.Device(), p.DType(), a.InitialAccumulator, p.Shape()...))
		}
		s = s.Add(tmp.t(g.Mul(g))) // addcmul with value 1
		std := tmp.t(tmp.t(s.Sqrt()).AddScalar(a.Eps))
		return p.Add(tmp.t(tmp.t(g.MulScalar(-clr)).Div(std))), []*lathe.Tensor{s} // addcdiv: (value·g)/std
	}, func(u update) {
		a.steps[u.i]++
		replace(&a.sum[u.i], u.state[0])
	})
}
