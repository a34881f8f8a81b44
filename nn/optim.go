package nn

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe"
)

// Optimizer updates parameters from their gradients.
//
// Gradients accumulate, as in PyTorch: Backward adds to the gradient a
// parameter already has, so several Backward calls before a Step (the
// micro-batches of one large batch, each loss scaled by its share) sum
// their gradients, and ZeroGrad starts a new sum.
type Optimizer interface {
	// Step updates every parameter that has a gradient, from that gradient,
	// under lathe.NoGrad. Either every parameter is updated or, on error,
	// none is.
	Step() error
	// ZeroGrad forgets every parameter's gradient (torch's
	// zero_grad(set_to_none=True)).
	ZeroGrad()
	// LearningRate is the learning rate the next Step uses (torch's
	// param_groups[0]["lr"]).
	LearningRate() float64
	// SetLearningRate sets the learning rate of the next steps; the
	// schedulers (StepLR, ...) call it once per epoch.
	SetLearningRate(lr float64)
}

// paramSet is what every optimizer keeps: the handles it updates and the
// learning rate, the one hyperparameter that schedulers change.
type paramSet struct {
	params []Param
	// LR is the learning rate; schedulers set it through SetLearningRate.
	LR float64
	// initialLR is torch's param_groups[0]["initial_lr"]: the learning rate
	// when the first scheduler attached to the optimizer, which every later
	// one takes as its base.
	initialLR    float64
	hasInitialLR bool
}

func newParamSet(op string, params []Param, lr float64) (paramSet, error) {
	if len(params) == 0 {
		return paramSet{}, nnError(op, lathe.ErrValue, "params", "is empty", "pass the model's Parameters()")
	}
	for _, p := range params {
		if p.T == nil {
			return paramSet{}, nnError(op, lathe.ErrValue, p.Name, "is nil", "pass the model's parameters (model.Parameters())")
		}
		if err := p.T.CheckArg(op, p.Name); err != nil {
			return paramSet{}, err
		}
		if !p.T.DType().IsFloat() || !p.T.IsLeaf() {
			return paramSet{}, nnError(op, lathe.ErrValue, p.Name, "is not a float leaf tensor", "optimize parameters, not results of ops")
		}
	}
	if err := checkHyper(op, "lr", lr, lr >= 0, "≥ 0"); err != nil {
		return paramSet{}, err
	}
	return paramSet{params: append([]Param(nil), params...), LR: lr}, nil
}

// ZeroGrad forgets every parameter's gradient.
func (s *paramSet) ZeroGrad() {
	for _, p := range s.params {
		p.T.ZeroGrad()
	}
}

// LearningRate returns the learning rate of the next Step.
func (s *paramSet) LearningRate() float64 { return s.LR }

// SetLearningRate sets the learning rate of the next steps.
func (s *paramSet) SetLearningRate(lr float64) { s.LR = lr }

func (s *paramSet) base() *paramSet { return s }

// update is one parameter's new value and state, made before any handle is
// rebound so that a failing step changes nothing.
type update struct {
	i     int
	next  *lathe.Tensor
	grad  *lathe.Tensor
	state []*lathe.Tensor
}

// scratch holds an update's temporaries, released together once its new
// value and state are made, so that the pool serves the next step from
// them instead of the garbage collector taking them (an optimizer makes a
// dozen per parameter per step).
type scratch []*lathe.Tensor

// t keeps x to release with the rest and returns it.
func (s *scratch) t(x *lathe.Tensor) *lathe.Tensor {
	*s = append(*s, x)
	return x
}

// coupled is the gradient that an update with torch's coupled weight
// decay reads: g negated where the optimizer maximizes, plus
// weightDecay·p where that is not 0. What it makes is kept in s.
func (s *scratch) coupled(g, p *lathe.Tensor, maximize bool, weightDecay float64) *lathe.Tensor {
	if maximize {
		g = s.t(g.Neg())
	}
	if weightDecay != 0 {
		g = s.t(g.AddScaled(p, weightDecay))
	}
	return g
}

// release releases every tensor kept. It takes a pointer so that
// "defer tmp.release()" sees the tensors kept after the defer.
func (s *scratch) release() {
	for _, x := range *s {
		x.Release()
	}
}

// replace sets an optimizer's state slot to next and releases what it
// held: the optimizer's own tensor, which no other handle holds (state
// leaves the optimizer only as copies, through SaveOptimizer).
func replace(slot **lathe.Tensor, next *lathe.Tensor) {
	if old := *slot; old != nil && old != next {
		old.Release()
	}
	*slot = next
}

// step runs f for each parameter with a gradient under NoGrad, then rebinds
// the parameters and hands the new states to commit.
func (s *paramSet) step(f func(i int, p, g *lathe.Tensor) (next *lathe.Tensor, state []*lathe.Tensor), commit func(u update)) error {
	if err := checkHyper("step", "lr", s.LR, s.LR >= 0, "≥ 0"); err != nil {
		return err // set by SetLearningRate, which cannot refuse it
	}
	var ups []update
	var err error
	lathe.NoGrad(func() {
		for i, p := range s.params {
			// A released parameter has no gradient to read (Grad is nil),
			// so it is checked first, or the step would skip it.
			if err = p.T.CheckArg("step", p.Name); err != nil {
				return
			}
			g := p.T.Grad()
			if g == nil {
				continue // torch skips a parameter whose grad is None
			}
			if err = g.CheckArg("step", p.Name+".grad"); err != nil {
				return
			}
			if !slices.Equal(g.Shape(), p.T.Shape()) {
				err = nnError("step", lathe.ErrShape, p.Name+".grad", "has shape "+shapeString(g.Shape())+", the parameter "+shapeString(p.T.Shape()),
					"set a gradient of the parameter's shape")
				return
			}
			next, state := f(i, p.T, g)
			ups = append(ups, update{i: i, next: next, grad: g, state: state})
			for _, t := range append(state, next) {
				if t == nil {
					continue // a state the optimizer does not keep
				}
				if e := t.Err(); e != nil {
					err = e
					return
				}
			}
		}
	})
	if err != nil {
		// What the step made is new (a parameter's next value, its next
		// state): give it back now, not when the collector finds it.
		for _, u := range ups {
			for _, t := range append(u.state, u.next) {
				if t != nil { // a failed tensor holds nothing; one a device's check refused does
					t.Release()
				}
			}
		}
		return err
	}
	handles, nexts, grads := make([]*lathe.Tensor, len(ups)), make([]*lathe.Tensor, len(ups)), make([]*lathe.Tensor, len(ups))
	for j, u := range ups {
		handles[j], nexts[j], grads[j] = s.params[u.i].T, u.next, u.grad
	}
	if err := rebindAll(handles, nexts, grads); err != nil {
		for _, u := range ups {
			for _, t := range u.state {
				if t != nil { // a failed tensor holds nothing; one a device's check refused does
					t.Release()
				}
			}
		}
		return err
	}
	for _, u := range ups {
		commit(u)
	}
	return nil
}

// misfit is a failed next value for parameter i where a state of the
// optimizer's was made for another shape than p's (the parameter's handle
// was given a value of another shape since), else nil: the update would
// broadcast the state and hide it, where torch's in-place update raises.
func (s *paramSet) misfit(i int, p *lathe.Tensor, state ...*lathe.Tensor) *lathe.Tensor {
	for _, st := range state {
		if st != nil && !slices.Equal(st.Shape(), p.Shape()) {
			return lathe.Failed(nnError("step", lathe.ErrShape, s.params[i].Name, "has shape "+shapeString(p.Shape())+
				", and the optimizer's state for it "+shapeString(st.Shape())+" (the parameter was given a value of another shape)",
				"make a new optimizer for the new parameters"))
		}
	}
	return nil
}

// checkHyper is op's ErrValue for a hyperparameter v that is NaN or not
// ok, whose fix says the range that want states ("≥ 0", "in [0, 1)").
func checkHyper(op, name string, v float64, ok bool, want string) error {
	if ok && !math.IsNaN(v) {
		return nil
	}
	return nnError(op, lathe.ErrValue, name, "is "+strconv.FormatFloat(v, 'g', -1, 64), "give "+name+" a value "+want)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// An OptimOption sets a hyperparameter of an optimizer constructor other
// than the learning rate (NewSGD, NewAdam, NewAdamW, NewRMSprop,
// NewAdagrad). Each option says which optimizers take it; passing one to
// another optimizer is an ErrValue that names it, as PyTorch's constructors
// refuse an unknown keyword.
type OptimOption struct {
	name string
	set  func(*optimConfig)
}

// optimConfig holds every optimizer's hyperparameters, PyTorch's defaults
// filled in by the constructor before the options run.
type optimConfig struct {
	betas                     [2]float64
	eps, weightDecay          float64
	momentum, dampening       float64
	alpha, lrDecay, initAccum float64
	rho, momentumDecay        float64
	etas, stepSizes           [2]float64
	lambd, t0                 float64
	nesterov, centered        bool
	amsgrad, maximize         bool
}

// Momentum sets the momentum factor μ (SGD, RMSprop; 0 by default).
func Momentum(mu float64) OptimOption {
	return OptimOption{"momentum", func(c *optimConfig) { c.momentum = mu }}
}

// Nesterov switches on Nesterov momentum (SGD; needs momentum > 0 and no
// dampening).
func Nesterov() OptimOption {
	return OptimOption{"nesterov", func(c *optimConfig) { c.nesterov = true }}
}

// Dampening sets the dampening of momentum (SGD; 0 by default).
func Dampening(d float64) OptimOption {
	return OptimOption{"dampening", func(c *optimConfig) { c.dampening = d }}
}

// WeightDecay sets the weight decay (every optimizer but Rprop): the L2 penalty wd·p
// added to the gradient, or for AdamW the decoupled decay p·(1 - lr·wd).
// It is 0 by default, 1e-2 for AdamW.
func WeightDecay(wd float64) OptimOption {
	return OptimOption{"weight_decay", func(c *optimConfig) { c.weightDecay = wd }}
}

// Betas sets Adam's and AdamW's moment decay rates (0.9, 0.999 by default).
func Betas(b1, b2 float64) OptimOption {
	return OptimOption{"betas", func(c *optimConfig) { c.betas = [2]float64{b1, b2} }}
}

// Eps sets the term added to the denominator for numerical stability
// (Adam, AdamW, RMSprop: 1e-8 by default; Adagrad: 1e-10).
func Eps(eps float64) OptimOption { return OptimOption{"eps", func(c *optimConfig) { c.eps = eps }} }

// Alpha sets RMSprop's smoothing constant, the decay of its running mean of
// squared gradients (0.99 by default), or ASGD's power of the decay of its
// learning rate (0.75 by default).
func Alpha(a float64) OptimOption { return OptimOption{"alpha", func(c *optimConfig) { c.alpha = a }} }

// Centered makes RMSprop normalize by the gradient's estimated variance
// (its mean square less its squared mean) instead of its mean square.
func Centered() OptimOption {
	return OptimOption{"centered", func(c *optimConfig) { c.centered = true }}
}

// LRDecay sets Adagrad's learning-rate decay: step t uses
// lr / (1 + (t-1)·lrDecay) (0 by default).
func LRDecay(d float64) OptimOption {
	return OptimOption{"lr_decay", func(c *optimConfig) { c.lrDecay = d }}
}

// InitialAccumulator sets the value Adagrad's sum of squared gradients
// starts from (torch's initial_accumulator_value, 0 by default).
func InitialAccumulator(v float64) OptimOption {
	return OptimOption{"initial_accumulator_value", func(c *optimConfig) { c.initAccum = v }}
}

// AMSGrad switches on the AMSGrad variant of Adam and AdamW, which
// normalizes by the largest second moment seen so far instead of the
// current one (torch's amsgrad=True).
func AMSGrad() OptimOption {
	return OptimOption{"amsgrad", func(c *optimConfig) { c.amsgrad = true }}
}

// Maximize makes the optimizer maximize its objective, stepping along the
// gradient instead of against it (torch's maximize=True; SGD, Adam, AdamW,
// RMSprop, Adagrad, Adamax, Adadelta, Rprop, ASGD).
func Maximize() OptimOption {
	return OptimOption{"maximize", func(c *optimConfig) { c.maximize = true }}
}

// Rho sets Adadelta's decay of its running averages (0.9 by default).
func Rho(rho float64) OptimOption { return OptimOption{"rho", func(c *optimConfig) { c.rho = rho }} }

// MomentumDecay sets NAdam's momentum decay ψ (4e-3 by default).
func MomentumDecay(d float64) OptimOption {
	return OptimOption{"momentum_decay", func(c *optimConfig) { c.momentumDecay = d }}
}

// configure applies opts to c, refusing an option that op does not take.
func configure(op string, c *optimConfig, opts []OptimOption, takes ...string) error {
	for _, o := range opts {
		if o.set == nil {
			return nnError(op, lathe.ErrValue, "opts", "holds a zero OptimOption", "make options with nn.Momentum, nn.Betas, ...")
		}
		if !slices.Contains(takes, o.name) {
			return nnError(op, lathe.ErrValue, o.name, "is not an option of "+op,
				op+" takes "+strings.Join(takes, ", "))
		}
		o.set(c)
	}
	return nil
}

// SGD is stochastic gradient descent with optional momentum, Nesterov
// momentum, weight decay and dampening, with torch.optim.SGD's update,
// each line's scaled sum one AddScaled (torch's add_ with alpha):
//
//	d = -g (Maximize), else g
//	d = d + wd·p
//	b = d on the first step, else μ·b + (1-dampening)·d
//	d = d + μ·b (Nesterov) or b
//	p = p - lr·d
type SGD struct {
	paramSet
	Momentum, Dampening, WeightDecay float64
	Nesterov, Maximize               bool
	buf                              []*lathe.Tensor
}

// NewSGD makes an SGD optimizer over params with learning rate lr. It takes
// the options Momentum, Dampening, WeightDecay, Nesterov and Maximize.
func NewSGD(params []Param, lr float64, opts ...OptimOption) (*SGD, error) {
	var c optimConfig
	if err := configure("sgd", &c, opts, "momentum", "dampening", "weight_decay", "nesterov", "maximize"); err != nil {
		return nil, err
	}
	ps, err := newParamSet("sgd", params, lr)
	if err != nil {
		return nil, err
	}
	s := &SGD{paramSet: ps, Momentum: c.momentum, Dampening: c.dampening, WeightDecay: c.weightDecay, Nesterov: c.nesterov,
		Maximize: c.maximize, buf: make([]*lathe.Tensor, len(ps.params))}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *SGD) check() error {
	if err := firstErr(
		checkHyper("sgd", "momentum", s.Momentum, s.Momentum >= 0, "≥ 0"),
		checkHyper("sgd", "weight_decay", s.WeightDecay, s.WeightDecay >= 0, "≥ 0"),
		checkHyper("sgd", "dampening", s.Dampening, true, "that is a number"),
	); err != nil {
		return err
	}
	if s.Nesterov && (s.Momentum <= 0 || s.Dampening != 0) {
		return nnError("sgd", lathe.ErrValue, "nesterov", "needs momentum > 0 and zero dampening",
			"pass Momentum(m) with m > 0 and no Dampening, or leave Nesterov out")
	}
	return nil
}

// Step applies one SGD update. Hyperparameters set on the fields are
// checked as the constructor checks them.
func (s *SGD) Step() error {
	if err := s.check(); err != nil {
		return err
	}
	return s.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := s.misfit(i, p, s.buf[i]); bad != nil {
			return bad, nil
		}
		var tmp scratch
		defer tmp.release()
		d := g
		if s.Maximize {
			d = tmp.t(g.Neg())
		}
		if s.WeightDecay != 0 {
			d = tmp.t(d.AddScaled(p, s.WeightDecay))
		}
		var buf *lathe.Tensor
		if s.Momentum != 0 {
			if buf = s.buf[i]; buf == nil {
				buf = d.Clone() // d may be the gradient, which ZeroGrad releases (torch clones too)
			} else {
				buf = tmp.t(buf.MulScalar(s.Momentum)).AddScaled(d, 1-s.Dampening)
			}
			if s.Nesterov {
				d = tmp.t(d.AddScaled(buf, s.Momentum))
			} else {
				d = buf
			}
		}
		return p.AddScaled(d, -s.LR), []*lathe.Tensor{buf}
	}, func(u update) { replace(&s.buf[u.i], u.state[0]) })
}

// Adam is the Adam optimizer with torch.optim.Adam's update (PyTorch 1.13),
// the weight decay added to the gradient:
//
//	g = -g (Maximize)
//	g = g + wd·p
//	m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
//	v̂ = max(v̂, v) (AMSGrad), else v̂ = v
//	p = p - lr/(1-β1ᵗ) · m / (√v̂/√(1-β2ᵗ) + eps)
//
// AdamW is the same with decoupled weight decay.
type Adam struct {
	paramSet
	Eps, WeightDecay float64
	Betas            [2]float64
	// AMSGrad and Maximize are torch's amsgrad and maximize. AMSGrad
	// switched on after some steps starts its maximum from the current
	// second moment.
	AMSGrad, Maximize bool
	decoupled         bool
	steps             []int
	m, v, vmax        []*lathe.Tensor
}

// NewAdam makes an Adam optimizer over params with learning rate lr
// (torch's default is 1e-3). It takes the options Betas (0.9, 0.999 by
// default), Eps (1e-8), WeightDecay (0), AMSGrad and Maximize.
func NewAdam(params []Param, lr float64, opts ...OptimOption) (*Adam, error) {
	return newAdam("adam", params, lr, opts, 0, false)
}

// NewAdamW makes an AdamW optimizer: Adam whose weight decay multiplies the
// parameter by 1 - lr·wd before the update instead of entering the gradient
// (torch.optim.AdamW). It takes the options of NewAdam; its WeightDecay is
// 1e-2 by default.
func NewAdamW(params []Param, lr float64, opts ...OptimOption) (*Adam, error) {
	return newAdam("adamw", params, lr, opts, 1e-2, true)
}

func newAdam(op string, params []Param, lr float64, opts []OptimOption, wd float64, decoupled bool) (*Adam, error) {
	c := optimConfig{betas: [2]float64{0.9, 0.999}, eps: 1e-8, weightDecay: wd}
	if err := configure(op, &c, opts, "betas", "eps", "weight_decay", "amsgrad", "maximize"); err != nil {
		return nil, err
	}
	ps, err := newParamSet(op, params, lr)
	if err != nil {
		return nil, err
	}
	n := len(ps.params)
	a := &Adam{paramSet: ps, Betas: c.betas, Eps: c.eps, WeightDecay: c.weightDecay, AMSGrad: c.amsgrad, Maximize: c.maximize,
		decoupled: decoupled, steps: make([]int, n), m: make([]*lathe.Tensor, n), v: make([]*lathe.Tensor, n),
		vmax: make([]*lathe.Tensor, n)}
	if err := a.check(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Adam) kind() string {
	if a.decoupled {
		return "adamw"
	}
	return "adam"
}

func (a *Adam) check() error {
	op := a.kind()
	return firstErr(
		checkHyper(op, "eps", a.Eps, a.Eps >= 0, "≥ 0"),
		checkHyper(op, "betas[0]", a.Betas[0], a.Betas[0] >= 0 && a.Betas[0] < 1, "in [0, 1)"),
		checkHyper(op, "betas[1]", a.Betas[1], a.Betas[1] >= 0 && a.Betas[1] < 1, "in [0, 1)"),
		checkHyper(op, "weight_decay", a.WeightDecay, a.WeightDecay >= 0, "≥ 0"),
	)
}

// Step applies one Adam (or AdamW) update. The operations follow
// torch/optim/adam.py's _single_tensor_adam in order, so float32 results
// round as PyTorch's do.
func (a *Adam) Step() error {
	if err := a.check(); err != nil {
		return err
	}
	b1, b2 := a.Betas[0], a.Betas[1]
	return a.step(func(i int, p, g *lathe.Tensor) (*lathe.Tensor, []*lathe.Tensor) {
		if bad := a.misfit(i, p, a.m[i], a.v[i], a.vmax[i]); bad != nil {
			return bad, nil
		}
		t := a.steps[i] + 1
		var tmp scratch
		defer tmp.release()
		if a.Maximize {
			g = tmp.t(g.Neg())
		}
		if a.WeightDecay != 0 {
			if a.decoupled {
				p = tmp.t(p.MulScalar(1 - a.LR*a.WeightDecay))
			} else {
				g = tmp.t(g.AddScaled(p, a.WeightDecay))
			}
		}
		m, v := a.m[i], a.v[i]
		if m == nil {
			m = tmp.t(lathe.Zeros(p.Device(), p.DType(), p.Shape()...))
			v = m
		}
		m = tmp.t(m.MulScalar(b1)).AddScaled(g, 1-b1)
		v = tmp.t(v.MulScalar(b2)).Add(tmp.t(tmp.t(g.MulScalar(1 - b2)).Mul(g))) // addcmul: (value·g)·g
		bc1 := 1 - math.Pow(b1, float64(t))
		bc2 := 1 - math.Pow(b2, float64(t))
		stepSize := a.LR / bc1
		var vmax *lathe.Tensor
		vhat := v
		if a.AMSGrad {
			if vmax = a.vmax[i]; vmax == nil {
				vmax = v.Clone() // max(0, v) is v: v² sums are ≥ 0 (and NaN stays NaN)
			} else {
				vmax = vmax.Maximum(v)
			}
			vhat = vmax
		}
		denom := tmp.t(tmp.t(tmp.t(vhat.Sqrt()).DivScalar(math.Sqrt(bc2))).AddScalar(a.Eps))
		return p.Add(tmp.t(tmp.t(m.MulScalar(-stepSize)).Div(denom))), []*lathe.Tensor{m, v, vmax} // addcdiv: (value·m)/denom
	}, func(u update) {
		a.steps[u.i]++
		replace(&a.m[u.i], u.state[0])
		replace(&a.v[u.i], u.state[1])
		replace(&a.vmax[u.i], u.state[2])
	})
}
