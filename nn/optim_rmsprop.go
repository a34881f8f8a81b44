package nn

import "github.com/lathe-ml/lathe"

// RMSprop is torch.optim.RMSprop (PyTorch 1.13):
//
//	g = -g (Maximize)
//	g = g + wd·p
//	v = α·v + (1-α)·g²
//	ḡ = α·ḡ + (1-α)·g;  d = √(v - ḡ²) + eps   (centered)
//	d = √v + eps                            (otherwise)
//	b = μ·b + g/d;  p = p - lr·b            (momentum > 0)
//	p = p - lr·g/d                          (otherwise)
type RMSprop struct {
	paramSet
	Alpha, Eps, WeightDecay, Momentum float64
	Centered, Maximize                bool
	steps                             []int
	squareAvg, gradAvg, buf           []*lathe.Tensor
}

// NewRMSprop makes an RMSprop optimizer over params with learning rate lr
// (torch's default is 1e-2). It takes the options Alpha (0.99 by default),
// Eps (1e-8), WeightDecay (0), Momentum (0), Centered and Maximize.
func NewRMSprop(params []Param, lr float64, opts ...OptimOption) (*RMSprop, error) {
	c := optimConfig{alpha: 0.99, eps: 1e-8}
	if err := configure("rmsprop", &c, opts, "alpha", "eps", "weight_decay", "momentum", "centered", "maximize"); err != nil {
		return nil, err
	}
	ps, err := newParamSet("rmsprop", params, lr)
	if err != nil {
		return nil, err
	}
	n := len(ps.params)
	r := &RMSprop{paramSet: ps, Alpha: c.alpha, Eps: c.eps, WeightDecay: c.weightDecay, Momentum: c.momentum, Centered: c.centered,
		Maximize: c.maximize, steps: make([]int, n), squareAvg: make([]*lathe.Tensor, n), gradAvg: make([]*lathe.Tensor, n), buf: make([]*lathe.Tensor, n)}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RMSprop) check() error {
	return firstErr(
		checkHyper("rmsprop", "alpha", r.Alpha, r.Alpha >= 0, "≥ 0"),
		checkHyper("rmsprop", "eps", r.Eps, r.Eps >= 0, "≥ 0"),
		checkHyper("rmsprop", "weight_decay", r.WeightDecay, r.WeightDecay >= 0, "≥ 0"),
		checkHyper("rmsprop", "momentum", r.Momentum, r.Momentum >= 0, "≥ 0"),
	)
}

// Step applies one RMSprop update, op for op as torch/optim/rmsprop.py's
// _single_tensor_rmsprop, so that float32 rounds as PyTorch's does.
func (r *RMSprop) Step() error {
	if err := r.check(); err != nil {
		return err
	}
	a := r.Alpha
	return r.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := r.misfit(i, p, r.squareAvg[i], r.gradAvg[i], r.buf[i]); bad != nil {
			return bad, nil
		}
		var tmp scratch
		defer tmp.release()
		g = tmp.coupled(g, p, r.Maximize, r.WeightDecay)
		zeros := func(t *lathe.Tensor) *lathe.Tensor {
			if t != nil {
				return t
			}
			return tmp.t(lathe.Zeros(p.Device(), p.DType(), p.Shape()...))
		}
		sq := tmp.t(zeros(r.squareAvg[i]).MulScalar(a)).Add(tmp.t(tmp.t(g.MulScalar(1 - a)).Mul(g))) // addcmul: (value·g)·g
		var ga, avg *lathe.Tensor
		if r.Centered {
			ga = tmp.t(zeros(r.gradAvg[i]).MulScalar(a)).AddScaled(g, 1-a)
			avg = tmp.t(tmp.t(sq.Sub(tmp.t(ga.Mul(ga)))).Sqrt()) // addcmul with value -1: (-1·ḡ)·ḡ is -(ḡ·ḡ) exactly
		} else {
			avg = tmp.t(sq.Sqrt())
		}
		avg = tmp.t(avg.AddScalar(r.Eps))
		var buf *lathe.Tensor
		if r.Momentum > 0 {
			buf = tmp.t(zeros(r.buf[i]).MulScalar(r.Momentum)).Add(tmp.t(g.Div(avg))) // addcdiv with value 1
			return p.AddScaled(buf, -r.LR), []*lathe.Tensor{sq, ga, buf}
		}
		return p.Add(tmp.t(tmp.t(g.MulScalar(-r.LR)).Div(avg))), []*lathe.Tensor{sq, ga, buf} // addcdiv: (value·g)/avg
	}, func(u update) {
		r.steps[u.i]++
		replace(&r.squareAvg[u.i], u.state[0])
		replace(&r.gradAvg[u.i], u.state[1])
		replace(&r.buf[u.i], u.state[2])
	})
}
