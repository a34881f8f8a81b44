package nn

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe"
)

// LBFGS is torch.optim.LBFGS (PyTorch 1.13): limited-memory BFGS over all
// its parameters as one flat vector, each Step up to MaxIter iterations
// that re-evaluate the objective through a closure, with no line search
// (a step of lr, the first scaled by 1/‖g‖₁) or torch's strong Wolfe line
// search. The parameters must be on one device and of one dtype, as torch
// requires one device. The scalars torch keeps as 0-d tensors of the
// parameters' dtype (ys, ρ, the diagonal H, α, β) are rounded to float32
// for float32 parameters, as torch's are; for 16-bit parameters they are
// float64, where torch's are 16-bit.
//
// LBFGS is an Optimizer for the schedulers (LearningRate), but its Step
// without a closure is an error: call StepClosure. SaveOptimizer saves its
// settings and history (torch's state: d, t, old_dirs, old_stps, ro,
// H_diag, prev_flat_grad, prev_loss, n_iter, func_evals), and
// LoadOptimizer resumes it.
type LBFGS struct {
	paramSet
	cfg LBFGSConfig
	st  lbfgsState
}

// LBFGSConfig holds LBFGS's settings; DefaultLBFGS gives PyTorch's.
type LBFGSConfig struct {
	MaxIter int // iterations per Step (20)
	// MaxEval bounds the closure's evaluations per Step; 0 is torch's
	// default, MaxIter·5/4.
	MaxEval         int
	ToleranceGrad   float64 // stop when max |g| ≤ it (1e-7)
	ToleranceChange float64 // stop when the step or the loss changes by less (1e-9)
	HistorySize     int     // pairs (s, y) kept (100)
	// LineSearch is "" (none) or "strong_wolfe".
	LineSearch string
}

// DefaultLBFGS gives PyTorch's LBFGS settings.
func DefaultLBFGS() LBFGSConfig {
	return LBFGSConfig{MaxIter: 20, ToleranceGrad: 1e-7, ToleranceChange: 1e-9, HistorySize: 100}
}

// flatReset forgets the history (ResetOptimizer).
func (o *LBFGS) flatReset() {
	for _, x := range o.st.tensors() {
		if x != nil {
			x.Release()
		}
	}
	o.st = lbfgsState{}
}

// lbfgsState is torch's state[params[0]].
type lbfgsState struct {
	funcEvals, nIter int
	d, prevFlatGrad  *lathe.Tensor
	t, hDiag         float64
	oldDirs, oldStps []*lathe.Tensor
	ro               []float64
	prevLoss         float64
}

func (s *lbfgsState) tensors() []*lathe.Tensor {
	return append(append([]*lathe.Tensor{s.d, s.prevFlatGrad}, s.oldDirs...), s.oldStps...)
}

// NewLBFGS makes an LBFGS optimizer over params with learning rate lr
// (torch's default is 1).
func NewLBFGS(params []Param, lr float64, cfg LBFGSConfig) (*LBFGS, error) {
	const op = "lbfgs"
	ps, err := newParamSet(op, params, lr)
	if err != nil {
		return nil, err
	}
	if err := checkVecParams(op, params); err != nil {
		return nil, err
	}
	o := &LBFGS{paramSet: ps, cfg: cfg}
	if err := o.check(); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *LBFGS) check() error {
	const op = "lbfgs"
	c := o.cfg
	switch {
	case c.MaxIter < 1:
		return nnError(op, lathe.ErrValue, "max_iter", "is "+strconv.Itoa(c.MaxIter), "pass max_iter ≥ 1")
	case c.MaxEval < 0:
		return nnError(op, lathe.ErrValue, "max_eval", "is "+strconv.Itoa(c.MaxEval), "pass max_eval ≥ 1, or 0 for max_iter·5/4")
	case c.HistorySize < 1:
		return nnError(op, lathe.ErrValue, "history_size", "is "+strconv.Itoa(c.HistorySize), "pass history_size ≥ 1")
	case c.LineSearch != "" && c.LineSearch != "strong_wolfe":
		return nnError(op, lathe.ErrValue, "line_search_fn", "is "+strconv.Quote(c.LineSearch), `only "strong_wolfe" is supported, or "" for none`)
	}
	return firstErr(
		checkHyper(op, "tolerance_grad", c.ToleranceGrad, c.ToleranceGrad >= 0, "≥ 0"),
		checkHyper(op, "tolerance_change", c.ToleranceChange, c.ToleranceChange >= 0, "≥ 0"),
	)
}

// Step is an error: LBFGS re-evaluates the objective, so it needs the
// closure that StepClosure takes.
func (o *LBFGS) Step() error {
	return nnError("lbfgs", lathe.ErrValue, "closure", "is missing", "call StepClosure with a func that computes the loss and its gradients")
}

// lbfgsRun is one StepClosure: the tensors it made (released at its end
// unless kept in the state) and its first error.
type lbfgsRun struct {
	o    *LBFGS
	made []*lathe.Tensor
	err  error
	rnd  func(float64) float64
}

func (r *lbfgsRun) t(x *lathe.Tensor) *lathe.Tensor {
	r.made = append(r.made, x)
	if r.err == nil {
		r.err = x.Err()
	}
	return x
}

// num reads a one-element tensor.
func (r *lbfgsRun) num(x *lathe.Tensor) float64 {
	r.t(x)
	if r.err != nil {
		return math.NaN()
	}
	v, err := x.Item()
	if err != nil {
		r.err = err
	}
	return v
}

func (r *lbfgsRun) dot(a, b *lathe.Tensor) float64 {
	var v *lathe.Tensor
	lathe.NoGrad(func() { v = r.t(a.Mul(b)).Sum() })
	return r.num(v)
}

func (r *lbfgsRun) absMax(a *lathe.Tensor) float64 {
	var v *lathe.Tensor
	lathe.NoGrad(func() { v = r.t(a.Abs()).Max() })
	return r.num(v)
}

// flatGrad is _gather_flat_grad: zeros for a parameter with no gradient.
func (r *lbfgsRun) flatGrad() *lathe.Tensor {
	if r.err != nil {
		return nil
	}
	views := make([]*lathe.Tensor, len(r.o.params))
	var out *lathe.Tensor
	lathe.NoGrad(func() {
		for i, p := range r.o.params {
			if g := p.T.Grad(); g != nil {
				views[i] = r.t(g.Reshape(-1))
			} else {
				views[i] = r.t(lathe.Zeros(p.T.Device(), p.T.DType(), p.T.Numel()))
			}
		}
		out = r.t(lathe.Concat(views, 0))
	})
	return out
}

// setParams rebinds the parameters to next (made by the run), keeping
// their gradients.
func (r *lbfgsRun) setParams(next []*lathe.Tensor) {
	if r.err != nil {
		return
	}
	handles, grads := make([]*lathe.Tensor, len(next)), make([]*lathe.Tensor, len(next))
	for i, p := range r.o.params {
		handles[i], grads[i] = p.T, p.T.Grad()
	}
	// rebindAll takes next over (released, or the parameters' own).
	r.made = slices.DeleteFunc(r.made, func(x *lathe.Tensor) bool { return slices.Contains(next, x) })
	r.err = rebindAll(handles, next, grads)
}

// addGrad is _add_grad: p += step·d, parameter by parameter.
func (r *lbfgsRun) addGrad(step float64, d *lathe.Tensor) {
	if r.err != nil {
		return
	}
	next := make([]*lathe.Tensor, len(r.o.params))
	lathe.NoGrad(func() {
		off := 0
		for i, p := range r.o.params {
			n := p.T.Numel()
			part := r.t(r.t(d.Narrow(0, off, n)).Reshape(p.T.Shape()...))
			next[i] = r.t(p.T.AddScaled(part, step))
			off += n
		}
	})
	r.setParams(next)
}

// clone is _clone_param.
func (r *lbfgsRun) clone() []*lathe.Tensor {
	out := make([]*lathe.Tensor, len(r.o.params))
	lathe.NoGrad(func() {
		for i, p := range r.o.params {
			out[i] = r.t(p.T.Clone())
		}
	})
	return out
}

// restore is _set_param: the parameters become copies of x.
func (r *lbfgsRun) restore(x []*lathe.Tensor) {
	if r.err != nil {
		return
	}
	next := make([]*lathe.Tensor, len(x))
	lathe.NoGrad(func() {
		for i, v := range x {
			next[i] = r.t(v.Clone())
		}
	})
	r.setParams(next)
}

// eval runs the closure, with the gradient on.
func (r *lbfgsRun) eval(closure func() (float64, error)) float64 {
	if r.err != nil {
		return math.NaN()
	}
	loss, err := closure()
	if err != nil {
		r.err = err
	}
	return loss
}

// StepClosure runs one torch LBFGS step: up to MaxIter iterations, each
// evaluating closure, which must compute the loss at the parameters'
// current values, set their gradients (ZeroGrad, then Backward) and
// return the loss. It returns the loss of the first evaluation, as torch's
// step. An error of the closure or of an op puts the parameters back as
// they were before the Step and keeps the state as it was.
func (o *LBFGS) StepClosure(closure func() (float64, error)) (float64, error) {
	const op = "lbfgs"
	if closure == nil {
		return 0, o.Step()
	}
	if err := firstErr(o.check(), checkHyper(op, "lr", o.LR, o.LR >= 0, "≥ 0")); err != nil {
		return 0, err
	}
	for _, p := range o.params {
		if err := p.T.CheckArg(op, p.Name); err != nil {
			return 0, err
		}
	}
	r := &lbfgsRun{o: o, rnd: func(x float64) float64 { return x }}
	if o.params[0].T.DType() == lathe.Float32 {
		r.rnd = func(x float64) float64 { return float64(float32(x)) }
	}
	old := o.st
	old.oldDirs, old.oldStps, old.ro = slices.Clone(old.oldDirs), slices.Clone(old.oldStps), slices.Clone(old.ro)
	x0 := r.clone()
	orig, err := o.run(r, closure)
	if err == nil {
		err = r.err
	}
	if err != nil {
		// Put back the parameters and the state; give back what the run
		// made.
		r.err = nil
		r.restore(x0)
		keep := map[*lathe.Tensor]bool{}
		for _, x := range old.tensors() {
			keep[x] = true
		}
		for _, x := range r.made {
			if !keep[x] {
				x.Release()
			}
		}
		o.st = old
		return orig, err
	}
	keep := map[*lathe.Tensor]bool{}
	for _, x := range o.st.tensors() {
		keep[x] = true
	}
	for _, x := range append(r.made, old.tensors()...) {
		if x != nil && !keep[x] {
			x.Release()
		}
	}
	return orig, nil
}

// run is torch's step, on o.st.
func (o *LBFGS) run(r *lbfgsRun, closure func() (float64, error)) (float64, error) {
	c := o.cfg
	maxEval := c.MaxEval
	if maxEval == 0 {
		maxEval = c.MaxIter * 5 / 4
	}
	st := &o.st
	rnd := r.rnd
	origLoss := r.eval(closure)
	loss := origLoss
	currentEvals := 1
	st.funcEvals++
	flat := r.flatGrad()
	if r.err != nil {
		return origLoss, r.err
	}
	if r.absMax(flat) <= c.ToleranceGrad {
		return origLoss, r.err
	}
	d, t := st.d, st.t
	nIter := 0
	for nIter < c.MaxIter {
		nIter++
		st.nIter++
		if st.nIter == 1 {
			lathe.NoGrad(func() { d = r.t(flat.Neg()) })
			st.oldDirs, st.oldStps, st.ro = nil, nil, nil
			st.hDiag = 1
		} else {
			var y, s *lathe.Tensor
			lathe.NoGrad(func() {
				y = r.t(flat.Sub(st.prevFlatGrad))
				s = r.t(d.MulScalar(t))
			})
			ys := r.dot(y, s)
			if ys > 1e-10 {
				if len(st.oldDirs) == c.HistorySize {
					st.oldDirs, st.oldStps, st.ro = st.oldDirs[1:], st.oldStps[1:], st.ro[1:]
				}
				st.oldDirs = append(st.oldDirs, y)
				st.oldStps = append(st.oldStps, s)
				st.ro = append(st.ro, rnd(1/ys))
				st.hDiag = rnd(ys / r.dot(y, y))
			}
			n := len(st.oldDirs)
			al := make([]float64, n)
			var q *lathe.Tensor
			lathe.NoGrad(func() { q = r.t(flat.Neg()) })
			for i := n - 1; i >= 0; i-- {
				al[i] = rnd(r.dot(st.oldStps[i], q) * st.ro[i])
				lathe.NoGrad(func() { q = r.t(q.AddScaled(st.oldDirs[i], -al[i])) })
			}
			lathe.NoGrad(func() { d = r.t(q.MulScalar(st.hDiag)) })
			for i := range n {
				be := rnd(r.dot(st.oldDirs[i], d) * st.ro[i])
				lathe.NoGrad(func() { d = r.t(d.AddScaled(st.oldStps[i], rnd(al[i]-be))) })
			}
		}
		if r.err != nil {
			return origLoss, r.err
		}
		st.prevFlatGrad = flat
		st.prevLoss = loss
		if st.nIter == 1 {
			var sum *lathe.Tensor
			lathe.NoGrad(func() { sum = r.t(flat.Abs()).Sum() })
			if inv := rnd(1 / r.num(sum)); inv < 1 {
				t = rnd(inv * o.LR)
			} else {
				t = o.LR
			}
		} else {
			t = o.LR
		}
		gtd := r.dot(flat, d)
		if r.err != nil {
			return origLoss, r.err
		}
		if gtd > -c.ToleranceChange {
			break
		}
		lsEvals := 0
		optCond := false
		if c.LineSearch == "strong_wolfe" {
			x := r.clone()
			obj := func(step float64, dir *lathe.Tensor) (float64, *lathe.Tensor) {
				r.addGrad(step, dir)
				f := r.eval(closure)
				g := r.flatGrad()
				r.restore(x)
				return f, g
			}
			loss, flat, t, lsEvals = r.strongWolfe(obj, t, d, loss, flat, gtd, c.ToleranceChange)
			r.addGrad(t, d)
			optCond = r.absMax(flat) <= c.ToleranceGrad
		} else {
			r.addGrad(t, d)
			if nIter != c.MaxIter {
				loss = r.eval(closure)
				flat = r.flatGrad()
				optCond = r.absMax(flat) <= c.ToleranceGrad
				lsEvals = 1
			}
		}
		if r.err != nil {
			return origLoss, r.err
		}
		currentEvals += lsEvals
		st.funcEvals += lsEvals
		if nIter == c.MaxIter || currentEvals >= maxEval || optCond {
			break
		}
		var dt *lathe.Tensor
		lathe.NoGrad(func() { dt = r.t(d.MulScalar(t)) })
		if r.absMax(dt) <= c.ToleranceChange {
			break
		}
		if math.Abs(loss-st.prevLoss) < c.ToleranceChange {
			break
		}
	}
	st.d, st.t = d, t
	return origLoss, r.err
}

// cubicInterpolate is torch's _cubic_interpolate: the minimizer of the
// cubic through (x1, f1, g1) and (x2, f2, g2), within bounds.
func cubicInterpolate(x1, f1, g1, x2, f2, g2 float64, bounds *[2]float64) float64 {
	lo, hi := min(x1, x2), max(x1, x2)
	if bounds != nil {
		lo, hi = bounds[0], bounds[1]
	}
	d1 := g1 + g2 - 3*(f1-f2)/(x1-x2)
	d2sq := d1*d1 - g1*g2
	if d2sq >= 0 {
		d2 := math.Sqrt(d2sq)
		var m float64
		if x1 <= x2 {
			m = x2 - (x2-x1)*((g2+d2-d1)/(g2-g1+2*d2))
		} else {
			m = x1 - (x1-x2)*((g1+d2-d1)/(g1-g2+2*d2))
		}
		return min(max(m, lo), hi)
	}
	return (lo + hi) / 2
}

// strongWolfe is torch's _strong_wolfe (c1 1e-4, c2 0.9, 25 evaluations
// at most): it returns the loss, the flat gradient and the step it found
// and the number of evaluations.
func (r *lbfgsRun) strongWolfe(obj func(float64, *lathe.Tensor) (float64, *lathe.Tensor), t float64, d *lathe.Tensor,
	f float64, g *lathe.Tensor, gtd, tolChange float64) (float64, *lathe.Tensor, float64, int) {
	const c1, c2, maxLS = 1e-4, 0.9, 25
	dNorm := r.absMax(d)
	fNew, gNew := obj(t, d)
	evals := 1
	gtdNew := r.dot(gNew, d)
	tPrev, fPrev, gPrev, gtdPrev := 0.0, f, g, gtd
	done := false
	lsIter := 0
	var bracket, bracketF, bracketGtd []float64
	var bracketG []*lathe.Tensor
	for lsIter < maxLS && r.err == nil {
		if fNew > f+c1*t*gtd || (lsIter > 1 && fNew >= fPrev) {
			bracket, bracketF, bracketG, bracketGtd = []float64{tPrev, t}, []float64{fPrev, fNew}, []*lathe.Tensor{gPrev, gNew}, []float64{gtdPrev, gtdNew}
			break
		}
		if math.Abs(gtdNew) <= -c2*gtd {
			bracket, bracketF, bracketG = []float64{t}, []float64{fNew}, []*lathe.Tensor{gNew}
			done = true
			break
		}
		if gtdNew >= 0 {
			bracket, bracketF, bracketG, bracketGtd = []float64{tPrev, t}, []float64{fPrev, fNew}, []*lathe.Tensor{gPrev, gNew}, []float64{gtdPrev, gtdNew}
			break
		}
		minStep := t + 0.01*(t-tPrev)
		maxStep := t * 10
		tmp := t
		t = cubicInterpolate(tPrev, fPrev, gtdPrev, t, fNew, gtdNew, &[2]float64{minStep, maxStep})
		tPrev, fPrev, gPrev, gtdPrev = tmp, fNew, gNew, gtdNew
		fNew, gNew = obj(t, d)
		evals++
		gtdNew = r.dot(gNew, d)
		lsIter++
	}
	if r.err != nil {
		return f, g, t, evals
	}
	if lsIter == maxLS {
		bracket, bracketF, bracketG = []float64{0, t}, []float64{f, fNew}, []*lathe.Tensor{g, gNew}
		// torch leaves bracket_gtd as it was, undefined on the first pass:
		// the zoom below would fail there (NameError); it is not reached
		// with 25 evaluations spent.
	}
	insufProgress := false
	low, high := 0, 1
	if !(bracketF[0] <= bracketF[len(bracketF)-1]) && len(bracket) == 2 { // torch's test; NaN picks the second
		low, high = 1, 0
	}
	for !done && lsIter < maxLS && r.err == nil {
		if math.Abs(bracket[1]-bracket[0])*dNorm < tolChange {
			break
		}
		t = cubicInterpolate(bracket[0], bracketF[0], bracketGtd[0], bracket[1], bracketF[1], bracketGtd[1], nil)
		bmax, bmin := max(bracket[0], bracket[1]), min(bracket[0], bracket[1])
		eps := 0.1 * (bmax - bmin)
		if min(bmax-t, t-bmin) < eps {
			if insufProgress || t >= bmax || t <= bmin {
				if math.Abs(t-bmax) < math.Abs(t-bmin) {
					t = bmax - eps
				} else {
					t = bmin + eps
				}
				insufProgress = false
			} else {
				insufProgress = true
			}
		} else {
			insufProgress = false
		}
		fNew, gNew = obj(t, d)
		evals++
		gtdNew = r.dot(gNew, d)
		lsIter++
		if fNew > f+c1*t*gtd || fNew >= bracketF[low] {
			bracket[high], bracketF[high], bracketG[high], bracketGtd[high] = t, fNew, gNew, gtdNew
			if bracketF[0] <= bracketF[1] {
				low, high = 0, 1
			} else {
				low, high = 1, 0
			}
		} else {
			if math.Abs(gtdNew) <= -c2*gtd {
				done = true
			} else if gtdNew*(bracket[high]-bracket[low]) >= 0 {
				bracket[high], bracketF[high], bracketG[high], bracketGtd[high] = bracket[low], bracketF[low], bracketG[low], bracketGtd[low]
			}
			bracket[low], bracketF[low], bracketG[low], bracketGtd[low] = t, fNew, gNew, gtdNew
		}
	}
	return bracketF[low], bracketG[low], bracket[low], evals
}

func (o *LBFGS) kind() string { return "lbfgs" }
func (o *LBFGS) hypers() []hyper {
	return []hyper{{"lr", &o.LR, nil}, {"tolerance_grad", &o.cfg.ToleranceGrad, nil}, {"tolerance_change", &o.cfg.ToleranceChange, nil}}
}
func (o *LBFGS) slots() []slot  { return nil }
func (o *LBFGS) counts() *[]int { return nil }

// flatSave is LBFGS's integer settings and its history: numbers in the
// metadata, vectors as "lbfgs.<name>" tensors.
func (o *LBFGS) flatSave() (map[string]string, []Param) {
	st := &o.st
	m := map[string]string{
		"lbfgs.max_iter": strconv.Itoa(o.cfg.MaxIter), "lbfgs.max_eval": strconv.Itoa(o.cfg.MaxEval),
		"lbfgs.history_size": strconv.Itoa(o.cfg.HistorySize), "lbfgs.line_search_fn": o.cfg.LineSearch,
		"lbfgs.func_evals": strconv.Itoa(st.funcEvals), "lbfgs.n_iter": strconv.Itoa(st.nIter),
		"lbfgs.t": fmtFloat(st.t), "lbfgs.H_diag": fmtFloat(st.hDiag), "lbfgs.prev_loss": fmtFloat(st.prevLoss),
		"lbfgs.history": strconv.Itoa(len(st.oldDirs)),
	}
	var ts []Param
	if st.d != nil {
		ts = append(ts, Param{"lbfgs.d", st.d}, Param{"lbfgs.prev_flat_grad", st.prevFlatGrad})
	}
	for k := range st.oldDirs {
		n := strconv.Itoa(k)
		m["lbfgs.ro."+n] = fmtFloat(st.ro[k])
		ts = append(ts, Param{"lbfgs.old_dirs." + n, st.oldDirs[k]}, Param{"lbfgs.old_stps." + n, st.oldStps[k]})
	}
	return m, ts
}

func (o *LBFGS) flatName(name string) bool { return strings.HasPrefix(name, "lbfgs.") }

func (o *LBFGS) flatTemplate() *lathe.Tensor {
	n := 0
	for _, p := range o.params {
		n += p.T.Numel()
	}
	p := o.params[0].T
	return lathe.Zeros(p.Device(), p.DType(), n)
}

// flatStage checks the file's LBFGS numbers and vectors, all or none.
func (o *LBFGS) flatStage(meta map[string]string, ts map[string]*lathe.Tensor) (func(), error) {
	const op = "load_optimizer"
	bad := func(key, detail string) error {
		return nnError(op, lathe.ErrValue, key, detail, "load into the optimizer the file was saved from, made the same way")
	}
	num := func(key string) (float64, error) {
		v, ok := meta[key]
		if !ok {
			return 0, bad(key, "is missing from the file's metadata")
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, bad(key, "is "+strconv.Quote(v)+", not a number")
		}
		return f, nil
	}
	count := func(key string) (int, error) {
		v, ok := meta[key]
		if !ok {
			return 0, bad(key, "is missing from the file's metadata")
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, bad(key, "is "+strconv.Quote(v)+", not a count")
		}
		return n, nil
	}
	cfg := o.cfg
	var st lbfgsState
	var err error
	var nHist int
	search, ok := meta["lbfgs.line_search_fn"]
	if !ok {
		return nil, bad("lbfgs.line_search_fn", "is missing from the file's metadata")
	}
	cfg.LineSearch = search
	for _, f := range []struct {
		key string
		to  *int
	}{{"lbfgs.max_iter", &cfg.MaxIter}, {"lbfgs.max_eval", &cfg.MaxEval}, {"lbfgs.history_size", &cfg.HistorySize},
		{"lbfgs.func_evals", &st.funcEvals}, {"lbfgs.n_iter", &st.nIter}, {"lbfgs.history", &nHist}} {
		if *f.to, err = count(f.key); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		key string
		to  *float64
	}{{"lbfgs.t", &st.t}, {"lbfgs.H_diag", &st.hDiag}, {"lbfgs.prev_loss", &st.prevLoss}} {
		if *f.to, err = num(f.key); err != nil {
			return nil, err
		}
	}
	was := o.cfg
	o.cfg = cfg
	err = o.check()
	o.cfg = was
	if err != nil {
		return nil, err
	}
	if nHist > cfg.HistorySize {
		return nil, bad("lbfgs.history", "is "+strconv.Itoa(nHist)+", more than history_size "+strconv.Itoa(cfg.HistorySize))
	}
	need := map[string]bool{}
	if st.nIter > 0 {
		need["lbfgs.d"], need["lbfgs.prev_flat_grad"] = true, true
		st.d, st.prevFlatGrad = ts["lbfgs.d"], ts["lbfgs.prev_flat_grad"]
	}
	for k := range nHist {
		n := strconv.Itoa(k)
		need["lbfgs.old_dirs."+n], need["lbfgs.old_stps."+n] = true, true
		st.oldDirs = append(st.oldDirs, ts["lbfgs.old_dirs."+n])
		st.oldStps = append(st.oldStps, ts["lbfgs.old_stps."+n])
		r, err := num("lbfgs.ro." + n)
		if err != nil {
			return nil, err
		}
		st.ro = append(st.ro, r)
	}
	for name := range need {
		if ts[name] == nil {
			return nil, bad(name, "is missing from the file")
		}
	}
	for name := range ts {
		if !need[name] {
			return nil, bad(name, "is not a state tensor of this LBFGS (n_iter "+strconv.Itoa(st.nIter)+", history "+strconv.Itoa(nHist)+")")
		}
	}
	return func() {
		o.flatReset()
		o.st = st // the tolerances are hypers, which LoadOptimizer sets
		o.cfg.MaxIter, o.cfg.MaxEval, o.cfg.HistorySize, o.cfg.LineSearch = cfg.MaxIter, cfg.MaxEval, cfg.HistorySize, cfg.LineSearch
	}, nil
}
