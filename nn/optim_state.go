package nn

import (
	"io"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe"
)

// Saving and loading where training stands. SaveOptimizer writes one
// safetensors file: each parameter's state tensors as
// "state.<i>.<name>" (i the parameter's place in the optimizer, the names
// PyTorch's state_dict uses: momentum_buffer, exp_avg, exp_avg_sq,
// square_avg, grad_avg, sum), and in __metadata__ the optimizer's kind,
// its parameters' names, its hyperparameters (lr among them, which the
// schedulers move), each parameter's step count ("state.<i>.step") and
// each scheduler's position ("scheduler.<j>.last_epoch", ...). Floats are
// written so that they read back exactly.

// laterFlags are the switches added to optimizers after files were saved
// without them: one missing from a file reads as false, as those files
// were saved with it off.
var laterFlags = map[string]bool{"amsgrad": true, "maximize": true}

// hyper is one hyperparameter of an optimizer, by torch's name.
type hyper struct {
	name string
	f    *float64
	b    *bool
}

// slot is one per-parameter state tensor of an optimizer.
type slot struct {
	name string
	ts   *[]*lathe.Tensor
}

// perParamFloat is a number an optimizer keeps per parameter (NAdam's
// mu_product), saved in the metadata as "state.<i>.<name>"; reset is its
// value before the first step, and a value read from a file must lie in
// [lo, hi].
type perParamFloat struct {
	name   string
	vals   *[]float64
	reset  float64
	lo, hi float64
}

// perParamFloats of o, if it keeps any.
func perParamFloats(o statefulOptim) []perParamFloat {
	if x, ok := o.(interface{ perParam() []perParamFloat }); ok {
		return x.perParam()
	}
	return nil
}

// flatStater is an optimizer whose state is not per parameter (LBFGS's
// history of flat vectors): SaveOptimizer writes its numbers and tensors
// beside the rest, LoadOptimizer reads and stages them, and ResetOptimizer
// forgets them.
type flatStater interface {
	flatSave() (map[string]string, []Param)
	// flatName reports whether a tensor of that name is flat state;
	// flatTemplate is a tensor of the shape, dtype and device each has.
	flatName(name string) bool
	flatTemplate() *lathe.Tensor
	// flatStage checks the file's numbers and tensors (ts, which commit
	// takes over) and returns what sets them; it changes nothing.
	flatStage(meta map[string]string, ts map[string]*lathe.Tensor) (commit func(), err error)
	flatReset()
}

// statefulOptim is an optimizer of this package, described for saving.
type statefulOptim interface {
	Optimizer
	base() *paramSet
	kind() string
	hypers() []hyper
	slots() []slot
	counts() *[]int // nil: no step counts
	check() error
}

func (s *SGD) kind() string { return "sgd" }
func (s *SGD) hypers() []hyper {
	return []hyper{{"lr", &s.LR, nil}, {"momentum", &s.Momentum, nil}, {"dampening", &s.Dampening, nil},
		{"weight_decay", &s.WeightDecay, nil}, {"nesterov", nil, &s.Nesterov}, {"maximize", nil, &s.Maximize}}
}
func (s *SGD) slots() []slot  { return []slot{{"momentum_buffer", &s.buf}} }
func (s *SGD) counts() *[]int { return nil }

func (a *Adam) hypers() []hyper {
	return []hyper{{"lr", &a.LR, nil}, {"beta1", &a.Betas[0], nil}, {"beta2", &a.Betas[1], nil}, {"eps", &a.Eps, nil},
		{"weight_decay", &a.WeightDecay, nil}, {"amsgrad", nil, &a.AMSGrad}, {"maximize", nil, &a.Maximize}}
}
func (a *Adam) slots() []slot {
	return []slot{{"exp_avg", &a.m}, {"exp_avg_sq", &a.v}, {"max_exp_avg_sq", &a.vmax}}
}
func (a *Adam) counts() *[]int { return &a.steps }

func (r *RMSprop) kind() string { return "rmsprop" }
func (r *RMSprop) hypers() []hyper {
	return []hyper{{"lr", &r.LR, nil}, {"alpha", &r.Alpha, nil}, {"eps", &r.Eps, nil}, {"weight_decay", &r.WeightDecay, nil},
		{"momentum", &r.Momentum, nil}, {"centered", nil, &r.Centered}, {"maximize", nil, &r.Maximize}}
}
func (r *RMSprop) slots() []slot {
	return []slot{{"square_avg", &r.squareAvg}, {"grad_avg", &r.gradAvg}, {"momentum_buffer", &r.buf}}
}
func (r *RMSprop) counts() *[]int { return &r.steps }

func (a *Adagrad) kind() string { return "adagrad" }
func (a *Adagrad) hypers() []hyper {
	return []hyper{{"lr", &a.LR, nil}, {"lr_decay", &a.LRDecay, nil}, {"weight_decay", &a.WeightDecay, nil},
		{"initial_accumulator_value", &a.InitialAccumulator, nil}, {"eps", &a.Eps, nil}, {"maximize", nil, &a.Maximize}}
}
func (a *Adagrad) slots() []slot  { return []slot{{"sum", &a.sum}} }
func (a *Adagrad) counts() *[]int { return &a.steps }

// A Resumable scheduler is one whose position SaveOptimizer can save and
// LoadOptimizer restore: every LRScheduler of this package, and
// ReduceLROnPlateau. Its settings (step size, gamma, ...) come from its
// constructor, not from the file.
type Resumable interface {
	LastLR() float64
	Epoch() int
	schedState() []field
	schedKind() string
}

// field is one number of a scheduler's state.
type field struct {
	name string
	f    *float64
	i    *int
}

func (c *schedCore) schedState() []field {
	return []field{{"last_epoch", nil, &c.lastEpoch}, {"step_count", nil, &c.stepCount}, {"base_lr", &c.baseLR, nil},
		{"last_lr", &c.lastLR, nil}}
}

func (s *StepLR) schedKind() string            { return "StepLR" }
func (s *MultiStepLR) schedKind() string       { return "MultiStepLR" }
func (s *ExponentialLR) schedKind() string     { return "ExponentialLR" }
func (s *CosineAnnealingLR) schedKind() string { return "CosineAnnealingLR" }
func (s *LinearLR) schedKind() string          { return "LinearLR" }
func (s *OneCycleLR) schedKind() string        { return "OneCycleLR" }
func (s *SequentialLR) schedKind() string      { return "SequentialLR" }

// schedState of a SequentialLR holds its children's too, as "<k>.<name>".
func (s *SequentialLR) schedState() []field { return withChildren(s.schedCore.schedState(), s.scheds) }

// withChildren is fs and then the state of each of a scheduler's children,
// named "<k>.<name>".
func withChildren(fs []field, scheds []scheduler) []field {
	for k, x := range scheds {
		for _, f := range x.(Resumable).schedState() {
			f.name = strconv.Itoa(k) + "." + f.name
			fs = append(fs, f)
		}
	}
	return fs
}

func (s *ReduceLROnPlateau) schedKind() string { return "ReduceLROnPlateau" }
func (s *ReduceLROnPlateau) schedState() []field {
	return []field{{"best", &s.best, nil}, {"num_bad_epochs", nil, &s.badEpochs}, {"cooldown_counter", nil, &s.cooldownLeft},
		{"last_epoch", nil, &s.lastEpoch}, {"last_lr", &s.lastLR, nil}}
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func asStateful(op string, opt Optimizer) (statefulOptim, error) {
	if isNil(opt) {
		return nil, nnError(op, lathe.ErrValue, "opt", "is nil", "")
	}
	o, ok := opt.(statefulOptim)
	if !ok {
		return nil, nnError(op, lathe.ErrValue, "opt", "is not an optimizer of package nn", "save the state of your own optimizer yourself")
	}
	return o, nil
}

// ResetOptimizer forgets the state opt keeps per parameter (momentum
// buffers, moment estimates, sums, step counts), as a new optimizer of
// the same parameters and hyperparameters starts, and keeps the learning
// rate that the schedulers set (torch: opt.state.clear()). It is how a
// run recovers whose state a failed step's values reached: on a device
// whose value checks settle later (a bad index on wgpu or cuda), a step
// may take a gradient that then fails, and every later step fails with
// it. It is an ErrValue for an optimizer not of package nn.
func ResetOptimizer(opt Optimizer) error {
	o, err := asStateful("reset_optimizer", opt)
	if err != nil {
		return err
	}
	if fs, ok := o.(flatStater); ok {
		fs.flatReset()
	}
	for _, sl := range o.slots() {
		for i, t := range *sl.ts {
			if t != nil {
				t.Release()
				(*sl.ts)[i] = nil
			}
		}
	}
	if c := o.counts(); c != nil {
		clear(*c)
	}
	for _, f := range perParamFloats(o) {
		for i := range *f.vals {
			(*f.vals)[i] = f.reset
		}
	}
	return nil
}

// SaveOptimizer writes opt's state, and the position of each scheduler in
// scheds, to w in the safetensors format, so that LoadOptimizer can resume
// training exactly where it stands (PyTorch's optimizer.state_dict() and
// scheduler.state_dict(), in one file). Save the model beside it with Save.
func SaveOptimizer(w io.Writer, opt Optimizer, scheds ...Resumable) error {
	const op = "save_optimizer"
	if isNil(w) {
		return nilModule(op, "w")
	}
	o, err := asStateful(op, opt)
	if err != nil {
		return err
	}
	ps := o.base()
	meta := map[string]string{"optimizer": o.kind(), "params": strconv.Itoa(len(ps.params)),
		"schedulers": strconv.Itoa(len(scheds))}
	for _, h := range o.hypers() {
		if h.f != nil {
			meta[h.name] = fmtFloat(*h.f)
		} else {
			meta[h.name] = strconv.FormatBool(*h.b)
		}
	}
	if ps.hasInitialLR {
		meta["initial_lr"] = fmtFloat(ps.initialLR)
	}
	var ts []Param
	for i, p := range ps.params {
		prefix := "state." + strconv.Itoa(i) + "."
		meta["param."+strconv.Itoa(i)] = p.Name
		if c := o.counts(); c != nil {
			meta[prefix+"step"] = strconv.Itoa((*c)[i])
		}
		for _, f := range perParamFloats(o) {
			meta[prefix+f.name] = fmtFloat((*f.vals)[i])
		}
		for _, sl := range o.slots() {
			if t := (*sl.ts)[i]; t != nil {
				ts = append(ts, Param{prefix + sl.name, t})
			}
		}
	}
	if fs, ok := o.(flatStater); ok {
		m, flat := fs.flatSave()
		for k, v := range m {
			meta[k] = v
		}
		ts = append(ts, flat...)
	}
	for j, s := range scheds {
		if isNil(s) {
			return nnError(op, lathe.ErrValue, "scheds["+strconv.Itoa(j)+"]", "is nil", "")
		}
		prefix := "scheduler." + strconv.Itoa(j) + "."
		meta[prefix+"kind"] = s.schedKind()
		for _, f := range s.schedState() {
			if f.f != nil {
				meta[prefix+f.name] = fmtFloat(*f.f)
			} else {
				meta[prefix+f.name] = strconv.Itoa(*f.i)
			}
		}
	}
	return writeSafetensors(op, w, ts, meta)
}

// LoadOptimizer reads a file that SaveOptimizer wrote into opt and scheds,
// which must be of the kinds saved, opt over parameters of the same names,
// shapes and dtypes, in the same order. Everything is read and checked
// first; on any error opt and scheds are unchanged. The state tensors go
// to each parameter's device.
func LoadOptimizer(r io.Reader, opt Optimizer, scheds ...Resumable) error {
	const op = "load_optimizer"
	if isNil(r) {
		return nilModule(op, "r")
	}
	o, err := asStateful(op, opt)
	if err != nil {
		return err
	}
	bad := func(arg, detail string) error {
		return nnError(op, lathe.ErrValue, arg, detail, "load into the optimizer and schedulers the file was saved from, made the same way")
	}
	entries, meta, err := readHeaderMeta(r)
	if err != nil {
		return err
	}
	get := func(key string) (string, error) {
		v, ok := meta[key]
		if !ok {
			return "", bad(key, "is missing from the file's metadata")
		}
		return v, nil
	}
	getFloat := func(key string) (float64, error) {
		v, err := get(key)
		if err != nil {
			return 0, err
		}
		f, perr := strconv.ParseFloat(v, 64)
		if perr != nil {
			return 0, bad(key, "is "+strconv.Quote(v)+", not a number")
		}
		return f, nil
	}
	getInt := func(key string) (int, error) {
		v, err := get(key)
		if err != nil {
			return 0, err
		}
		n, perr := strconv.Atoi(v)
		if perr != nil {
			return 0, bad(key, "is "+strconv.Quote(v)+", not an integer")
		}
		return n, nil
	}
	ps := o.base()
	if k, err := get("optimizer"); err != nil {
		return err
	} else if k != o.kind() {
		return bad("optimizer", "is "+strconv.Quote(k)+" in the file but the optimizer is "+o.kind())
	}
	if n, err := getInt("params"); err != nil {
		return err
	} else if n != len(ps.params) {
		return bad("params", "are "+strconv.Itoa(n)+" in the file but "+strconv.Itoa(len(ps.params))+" in the optimizer")
	}
	for i, p := range ps.params {
		if name, err := get("param." + strconv.Itoa(i)); err != nil {
			return err
		} else if name != p.Name {
			return bad("param."+strconv.Itoa(i), "is "+strconv.Quote(name)+" in the file but "+strconv.Quote(p.Name)+" in the optimizer")
		}
	}
	if n, err := getInt("schedulers"); err != nil {
		return err
	} else if n != len(scheds) {
		return bad("schedulers", "are "+strconv.Itoa(n)+" in the file but "+strconv.Itoa(len(scheds))+" were passed")
	}

	// The optimizer's numbers.
	hs := o.hypers()
	hf := make([]float64, len(hs))
	hb := make([]bool, len(hs))
	for k, h := range hs {
		if h.f != nil {
			if hf[k], err = getFloat(h.name); err != nil {
				return err
			}
			continue
		}
		if _, ok := meta[h.name]; !ok && laterFlags[h.name] {
			continue // hb[k] is false
		}
		v, err := get(h.name)
		if err != nil {
			return err
		}
		if hb[k], err = strconv.ParseBool(v); err != nil {
			return bad(h.name, "is "+strconv.Quote(v)+", not true or false")
		}
	}
	initial, hasInitial := 0.0, false
	if _, ok := meta["initial_lr"]; ok {
		if initial, err = getFloat("initial_lr"); err != nil {
			return err
		}
		hasInitial = true
	}
	var counts []int
	if c := o.counts(); c != nil {
		counts = make([]int, len(ps.params))
		for i := range counts {
			key := "state." + strconv.Itoa(i) + ".step"
			if counts[i], err = getInt(key); err != nil {
				return err
			}
			if counts[i] < 0 {
				return bad(key, "is negative")
			}
		}
	}

	pfs := perParamFloats(o)
	pfVals := make([][]float64, len(pfs))
	for k, f := range pfs {
		pfVals[k] = make([]float64, len(ps.params))
		for i := range pfVals[k] {
			key := "state." + strconv.Itoa(i) + "." + f.name
			if pfVals[k][i], err = getFloat(key); err != nil {
				return err
			}
			if v := pfVals[k][i]; !(v >= f.lo && v <= f.hi) {
				return bad(key, "is "+fmtFloat(v)+", not in ["+fmtFloat(f.lo)+", "+fmtFloat(f.hi)+"]")
			}
		}
	}

	// The state tensors: each one a slot of a parameter, of its shape and
	// dtype.
	slots := o.slots()
	want := map[string]bool{}
	where := map[string][2]int{} // name: parameter, slot
	fs, _ := o.(flatStater)
	var template *lathe.Tensor // the flat state's shape, dtype and device
	defer func() { template.Release() }()
	flat := map[string]*lathe.Tensor{}
	for name, e := range entries {
		i, sl, ok := parseStateName(name, len(ps.params), slots)
		if !ok && fs != nil && fs.flatName(name) {
			if template == nil {
				if template = fs.flatTemplate(); template.Err() != nil {
					return template.Err()
				}
			}
			if err := checkEntry(Param{name, template}, e, false); err != nil {
				return err
			}
			want[name], flat[name] = true, nil
			continue
		}
		if !ok {
			return bad(name, "is not a state tensor of this optimizer")
		}
		if err := checkEntry(Param{name, ps.params[i].T}, e, false); err != nil {
			return err // a dtype or shape not the parameter's
		}
		want[name], where[name] = true, [2]int{i, sl}
	}
	staged := make([][]*lathe.Tensor, len(slots))
	for k := range staged {
		staged[k] = make([]*lathe.Tensor, len(ps.params))
	}
	committed := false
	defer func() { // a load that fails gives back what it read
		if !committed {
			for _, row := range staged {
				for _, t := range row {
					if t != nil {
						t.Release()
					}
				}
			}
			for _, t := range flat {
				if t != nil {
					t.Release()
				}
			}
		}
	}()
	err = readData(r, entries, want, func(name string, r io.Reader) error {
		if _, ok := flat[name]; ok {
			dt, _ := stDType(entries[name].DType)
			t := decodeLike(r, dt, template)
			flat[name] = t
			return t.Err()
		}
		at := where[name]
		dt, _ := stDType(entries[name].DType) // the parameter's (checkEntry)
		t := decodeLike(r, dt, ps.params[at[0]].T)
		staged[at[1]][at[0]] = t
		return t.Err()
	})
	if err != nil {
		return err
	}

	// The schedulers' numbers.
	type schedSet struct {
		f   field
		fv  float64
		iv  int
		key string
	}
	var sets []schedSet
	for j, s := range scheds {
		prefix := "scheduler." + strconv.Itoa(j) + "."
		if isNil(s) {
			return nnError(op, lathe.ErrValue, "scheds["+strconv.Itoa(j)+"]", "is nil", "")
		}
		if k, err := get(prefix + "kind"); err != nil {
			return err
		} else if k != s.schedKind() {
			return bad(prefix+"kind", "is "+k+" in the file but "+s.schedKind()+" was passed")
		}
		for _, f := range s.schedState() {
			st := schedSet{f: f, key: prefix + f.name}
			if f.f != nil {
				st.fv, err = getFloat(st.key)
			} else {
				st.iv, err = getInt(st.key)
			}
			if err != nil {
				return err
			}
			sets = append(sets, st)
		}
	}

	commitFlat := func() {}
	if fs != nil {
		if commitFlat, err = fs.flatStage(meta, flat); err != nil {
			return err
		}
	}

	// Check the hyperparameters as the constructor does, then commit.
	oldF, oldB := make([]float64, len(hs)), make([]bool, len(hs))
	for k, h := range hs {
		if h.f != nil {
			oldF[k], *h.f = *h.f, hf[k]
		} else {
			oldB[k], *h.b = *h.b, hb[k]
		}
	}
	if err := firstErr(checkHyper(op, "lr", ps.LR, ps.LR >= 0, "≥ 0"), o.check()); err != nil {
		for k, h := range hs {
			if h.f != nil {
				*h.f = oldF[k]
			} else {
				*h.b = oldB[k]
			}
		}
		return err
	}
	ps.initialLR, ps.hasInitialLR = initial, hasInitial
	for k, sl := range slots {
		for i, old := range *sl.ts {
			if old != nil { // the optimizer's own, which the file's replaces
				old.Release()
			}
			(*sl.ts)[i] = staged[k][i]
		}
	}
	commitFlat()
	committed = true
	if c := o.counts(); c != nil {
		copy(*c, counts)
	}
	for k, f := range pfs {
		copy(*f.vals, pfVals[k])
	}
	for _, st := range sets {
		if st.f.f != nil {
			*st.f.f = st.fv
		} else {
			*st.f.i = st.iv
		}
	}
	return nil
}

// parseStateName splits "state.<i>.<slot>" into the parameter and the
// slot's index.
func parseStateName(name string, n int, slots []slot) (int, int, bool) {
	rest, ok := strings.CutPrefix(name, "state.")
	if !ok {
		return 0, 0, false
	}
	num, sl, ok := strings.Cut(rest, ".")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= n || strconv.Itoa(i) != num {
		return 0, 0, false
	}
	for k, s := range slots {
		if s.name == sl {
			return i, k, true
		}
	}
	return 0, 0, false
}
