package nn

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe"
)

// An LRScheduler sets an optimizer's learning rate as training goes on, by
// torch.optim.lr_scheduler's rules (PyTorch 1.13). Making one sets the
// learning rate of epoch 0; call Step after each epoch's optimizer steps
// (or after each batch, for OneCycleLR) to move to the next.
//
// The schedulers use PyTorch's chainable forms: each multiplies or shifts
// the optimizer's current learning rate, so the rates round as PyTorch's
// do, and a learning rate set in between (SetLearningRate) carries on.
// The first scheduler made on an optimizer records its learning rate as
// the base of every later one (torch's initial_lr). ReduceLROnPlateau,
// which steps on a metric, is not an LRScheduler.
type LRScheduler interface {
	// Step moves to the next epoch and sets the optimizer's learning rate.
	// On error (a OneCycleLR stepped past its total) nothing changes.
	Step() error
	// LastLR is the learning rate the scheduler set last (get_last_lr).
	LastLR() float64
	// Epoch is the number of Steps since the scheduler was made (torch's
	// last_epoch).
	Epoch() int
}

// schedCore is the state every LRScheduler keeps, torch's _LRScheduler.
type schedCore struct {
	opt       Optimizer
	baseLR    float64 // base_lrs[0]
	lastEpoch int
	stepCount int // _step_count: CosineAnnealingLR reads it
	lastLR    float64
}

// scheduler is an LRScheduler of this package: its rule, in torch's
// chainable form (get_lr) and closed form (_get_closed_form_lr).
type scheduler interface {
	LRScheduler
	core() *schedCore
	// chain is get_lr at core().lastEpoch, from the optimizer's rate.
	chain() (float64, error)
	// closed is _get_closed_form_lr, where the scheduler has one.
	closed() (float64, bool)
	schedKind() string
	// check refuses settings the constructor refuses, since the exported
	// fields may have changed since (a StepSize of 0 divided by zero).
	check() error
}

func (c *schedCore) core() *schedCore { return c }

// LastLR returns the learning rate the scheduler set last.
func (c *schedCore) LastLR() float64 { return c.lastLR }

// Epoch returns the number of steps taken since the scheduler was made.
func (c *schedCore) Epoch() int { return c.lastEpoch }

func (c *schedCore) closed() (float64, bool) { return 0, false }

// check is nothing for a scheduler with no settings of its own to change.
func (c *schedCore) check() error { return nil }

// attach is _LRScheduler's constructor up to the initial step: the base
// learning rate is the optimizer's initial_lr, or its rate if no scheduler
// has set that yet. It changes nothing: start does, once the constructor's
// checks have passed.
func attach(op string, opt Optimizer) (schedCore, error) {
	if isNil(opt) {
		return schedCore{}, nnError(op, lathe.ErrValue, "opt", "is nil", "pass the optimizer to schedule")
	}
	c := schedCore{opt: opt, baseLR: opt.LearningRate(), lastEpoch: -1}
	if ps := paramsOf(opt); ps != nil && ps.hasInitialLR {
		c.baseLR = ps.initialLR
	}
	return c, nil
}

// start records the base as the optimizer's initial_lr if it has none and
// takes the initial step, which sets the rate of epoch 0.
func start[S scheduler](s S) (S, error) {
	c := s.core()
	ps := paramsOf(c.opt)
	set := ps != nil && !ps.hasInitialLR
	if set {
		ps.initialLR, ps.hasInitialLR = c.baseLR, true
	}
	if err := initialStep(s); err != nil {
		if set { // a failed constructor changes nothing
			ps.initialLR, ps.hasInitialLR = 0, false
		}
		var zero S
		return zero, err
	}
	return s, nil
}

// paramsOf gives an optimizer of this package's shared state, or nil.
func paramsOf(opt Optimizer) *paramSet {
	if b, ok := opt.(interface{ base() *paramSet }); ok {
		return b.base()
	}
	return nil
}

// advance is _LRScheduler.step: to the next epoch by the chainable form,
// or (explicit) to epoch by the closed form where there is one.
func advance(s scheduler, explicit bool, epoch int) error {
	c := s.core()
	if c.opt == nil {
		return unmade(s)
	}
	if err := s.check(); err != nil {
		return err
	}
	saved := *c
	c.stepCount++
	if explicit {
		c.lastEpoch = epoch
	} else {
		c.lastEpoch++
	}
	lr, ok := 0.0, false
	if explicit {
		lr, ok = s.closed()
	}
	if !ok {
		var err error
		if lr, err = s.chain(); err != nil {
			*c = saved
			return err
		}
	}
	c.opt.SetLearningRate(lr)
	c.lastLR = lr
	return nil
}

// unmade is the error of a scheduler's zero value, which has no optimizer
// to schedule: only its constructor makes one.
func unmade(s interface{ schedKind() string }) error {
	k := s.schedKind()
	return nnError(strings.ToLower(k), lathe.ErrValue, "", "is a zero "+k+", with no optimizer to schedule", "make it with nn.New"+k)
}

// initialStep is _LRScheduler._initial_step.
func initialStep(s scheduler) error {
	s.core().stepCount = 0
	return advance(s, false, 0)
}

// StepLR multiplies the learning rate by Gamma every StepSize epochs
// (torch.optim.lr_scheduler.StepLR).
type StepLR struct {
	schedCore
	StepSize int
	Gamma    float64
}

// NewStepLR makes a StepLR on opt (torch's default gamma is 0.1).
func NewStepLR(opt Optimizer, stepSize int, gamma float64) (*StepLR, error) {
	c, err := attach("step_lr", opt)
	if err != nil {
		return nil, err
	}
	s := &StepLR{schedCore: c, StepSize: stepSize, Gamma: gamma}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *StepLR) check() error {
	if s.StepSize <= 0 {
		return nnError("step_lr", lathe.ErrValue, "step_size", "is "+strconv.Itoa(s.StepSize), "pass a positive step size")
	}
	return checkHyper("step_lr", "gamma", s.Gamma, s.Gamma >= 0, "≥ 0")
}

// Step moves to the next epoch.
func (s *StepLR) Step() error { return advance(s, false, 0) }

func (s *StepLR) chain() (float64, error) {
	lr := s.opt.LearningRate()
	if s.lastEpoch == 0 || s.lastEpoch%s.StepSize != 0 {
		return lr, nil
	}
	return lr * s.Gamma, nil
}

func (s *StepLR) closed() (float64, bool) {
	return s.baseLR * math.Pow(s.Gamma, float64(s.lastEpoch/s.StepSize)), true
}

// MultiStepLR multiplies the learning rate by Gamma at each milestone
// epoch, by Gammaᵏ at a milestone listed k times
// (torch.optim.lr_scheduler.MultiStepLR).
type MultiStepLR struct {
	schedCore
	milestones []int // sorted
	Gamma      float64
}

// NewMultiStepLR makes a MultiStepLR on opt (torch's default gamma is 0.1).
func NewMultiStepLR(opt Optimizer, milestones []int, gamma float64) (*MultiStepLR, error) {
	c, err := attach("multi_step_lr", opt)
	if err != nil {
		return nil, err
	}
	ms := slices.Clone(milestones)
	slices.Sort(ms)
	s := &MultiStepLR{schedCore: c, milestones: ms, Gamma: gamma}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *MultiStepLR) check() error {
	return checkHyper("multi_step_lr", "gamma", s.Gamma, s.Gamma >= 0, "≥ 0")
}

// Step moves to the next epoch.
func (s *MultiStepLR) Step() error { return advance(s, false, 0) }

func (s *MultiStepLR) chain() (float64, error) {
	lr := s.opt.LearningRate()
	k := 0
	for _, m := range s.milestones {
		if m == s.lastEpoch {
			k++
		}
	}
	if k == 0 {
		return lr, nil
	}
	return lr * math.Pow(s.Gamma, float64(k)), nil
}

func (s *MultiStepLR) closed() (float64, bool) {
	k := sort.SearchInts(s.milestones, s.lastEpoch+1) // bisect_right
	return s.baseLR * math.Pow(s.Gamma, float64(k)), true
}

// ExponentialLR multiplies the learning rate by Gamma every epoch
// (torch.optim.lr_scheduler.ExponentialLR).
type ExponentialLR struct {
	schedCore
	Gamma float64
}

// NewExponentialLR makes an ExponentialLR on opt.
func NewExponentialLR(opt Optimizer, gamma float64) (*ExponentialLR, error) {
	c, err := attach("exponential_lr", opt)
	if err != nil {
		return nil, err
	}
	s := &ExponentialLR{schedCore: c, Gamma: gamma}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *ExponentialLR) check() error {
	return checkHyper("exponential_lr", "gamma", s.Gamma, s.Gamma >= 0, "≥ 0")
}

// Step moves to the next epoch.
func (s *ExponentialLR) Step() error { return advance(s, false, 0) }

func (s *ExponentialLR) chain() (float64, error) {
	if s.lastEpoch == 0 {
		return s.opt.LearningRate(), nil
	}
	return s.opt.LearningRate() * s.Gamma, nil
}

func (s *ExponentialLR) closed() (float64, bool) {
	return s.baseLR * math.Pow(s.Gamma, float64(s.lastEpoch)), true
}

// CosineAnnealingLR anneals the learning rate from its base to EtaMin
// along half a cosine over TMax epochs, and back up over the next TMax
// (torch.optim.lr_scheduler.CosineAnnealingLR, without restarts):
//
//	lr(t) = EtaMin + (base - EtaMin)·(1 + cos(π·t/TMax))/2
//
// computed, as torch does, as a ratio of each epoch's value to the last.
type CosineAnnealingLR struct {
	schedCore
	TMax   int
	EtaMin float64
}

// NewCosineAnnealingLR makes a CosineAnnealingLR on opt (torch's default
// etaMin is 0).
func NewCosineAnnealingLR(opt Optimizer, tMax int, etaMin float64) (*CosineAnnealingLR, error) {
	c, err := attach("cosine_annealing_lr", opt)
	if err != nil {
		return nil, err
	}
	s := &CosineAnnealingLR{schedCore: c, TMax: tMax, EtaMin: etaMin}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *CosineAnnealingLR) check() error {
	if s.TMax <= 0 {
		return nnError("cosine_annealing_lr", lathe.ErrValue, "T_max", "is "+strconv.Itoa(s.TMax), "pass a positive number of epochs")
	}
	return checkHyper("cosine_annealing_lr", "eta_min", s.EtaMin, !math.IsInf(s.EtaMin, 0), "that is finite")
}

// Step moves to the next epoch.
func (s *CosineAnnealingLR) Step() error { return advance(s, false, 0) }

func (s *CosineAnnealingLR) chain() (float64, error) {
	lr, e, T := s.opt.LearningRate(), float64(s.lastEpoch), float64(s.TMax)
	switch {
	case s.lastEpoch == 0:
		return lr, nil
	case s.stepCount == 1 && s.lastEpoch > 0:
		return s.EtaMin + (s.baseLR-s.EtaMin)*(1+math.Cos(e*math.Pi/T))/2, nil
	case pyMod(s.lastEpoch-1-s.TMax, 2*s.TMax) == 0:
		return lr + (s.baseLR-s.EtaMin)*(1-math.Cos(math.Pi/T))/2, nil
	}
	return (1+math.Cos(math.Pi*e/T))/(1+math.Cos(math.Pi*(e-1)/T))*(lr-s.EtaMin) + s.EtaMin, nil
}

func (s *CosineAnnealingLR) closed() (float64, bool) {
	return s.EtaMin + (s.baseLR-s.EtaMin)*(1+math.Cos(math.Pi*float64(s.lastEpoch)/float64(s.TMax)))/2, true
}

// pyMod is Python's %: the sign of the divisor.
func pyMod(a, b int) int {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}

// LinearLR scales the learning rate by a factor that goes linearly from
// StartFactor to EndFactor over TotalIters epochs, then stays
// (torch.optim.lr_scheduler.LinearLR): a warm-up when StartFactor < 1.
type LinearLR struct {
	schedCore
	StartFactor, EndFactor float64
	TotalIters             int
}

// NewLinearLR makes a LinearLR on opt (torch's defaults are 1/3, 1, 5).
// Both factors lie in [0, 1], as torch requires.
func NewLinearLR(opt Optimizer, startFactor, endFactor float64, totalIters int) (*LinearLR, error) {
	c, err := attach("linear_lr", opt)
	if err != nil {
		return nil, err
	}
	s := &LinearLR{schedCore: c, StartFactor: startFactor, EndFactor: endFactor, TotalIters: totalIters}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *LinearLR) check() error {
	if err := firstErr(
		checkHyper("linear_lr", "start_factor", s.StartFactor, s.StartFactor > 0 && s.StartFactor <= 1, "in (0, 1]"),
		checkHyper("linear_lr", "end_factor", s.EndFactor, s.EndFactor >= 0 && s.EndFactor <= 1, "in [0, 1]"),
	); err != nil {
		return err
	}
	if s.TotalIters <= 0 {
		return nnError("linear_lr", lathe.ErrValue, "total_iters", "is "+strconv.Itoa(s.TotalIters), "pass a positive number of epochs")
	}
	return nil
}

// Step moves to the next epoch.
func (s *LinearLR) Step() error { return advance(s, false, 0) }

func (s *LinearLR) chain() (float64, error) {
	lr := s.opt.LearningRate()
	switch {
	case s.lastEpoch == 0:
		return lr * s.StartFactor, nil
	case s.lastEpoch > s.TotalIters:
		return lr, nil
	}
	d := s.EndFactor - s.StartFactor
	return lr * (1 + d/(float64(s.TotalIters)*s.StartFactor+float64(s.lastEpoch-1)*d)), nil
}

func (s *LinearLR) closed() (float64, bool) {
	return s.baseLR * (s.StartFactor + (s.EndFactor-s.StartFactor)*float64(min(s.TotalIters, s.lastEpoch))/float64(s.TotalIters)), true
}

// SequentialLR runs schedulers one after another: the first until the
// first milestone epoch, the second from there (restarted at its epoch 0)
// until the next, and so on (torch.optim.lr_scheduler.SequentialLR).
type SequentialLR struct {
	schedCore
	scheds     []scheduler
	milestones []int
}

// NewSequentialLR makes a SequentialLR on opt from schedulers made on opt
// (of this package, not used elsewhere after) and len(scheds)-1 increasing
// milestones. As in torch, it resets opt's learning rate to its base and
// restarts the first scheduler.
func NewSequentialLR(opt Optimizer, scheds []LRScheduler, milestones []int) (*SequentialLR, error) {
	const op = "sequential_lr"
	c, err := attach(op, opt)
	if err != nil {
		return nil, err
	}
	if len(scheds) == 0 || len(milestones) != len(scheds)-1 {
		return nil, nnError(op, lathe.ErrValue, "milestones", "has "+strconv.Itoa(len(milestones))+" epochs for "+
			strconv.Itoa(len(scheds))+" schedulers", "pass one milestone fewer than schedulers")
	}
	if !slices.IsSorted(milestones) {
		return nil, nnError(op, lathe.ErrValue, "milestones", "are not increasing", "")
	}
	s := &SequentialLR{schedCore: c, milestones: slices.Clone(milestones)}
	for i, x := range scheds {
		in, ok := x.(scheduler)
		if !ok || isNil(x) || in.core().opt != opt {
			return nil, nnError(op, lathe.ErrValue, "scheds["+strconv.Itoa(i)+"]", "is not a scheduler of opt made by nn", "")
		}
		switch x.(type) {
		case *SequentialLR, *ChainedScheduler:
			// Stepped here by its rule, which it has not (its Step is its
			// own), it would leave the rate as it was; torch's fails at
			// the milestone (step(0) takes no epoch).
			return nil, nnError(op, lathe.ErrValue, "scheds["+strconv.Itoa(i)+"]", "is a "+in.schedKind()+", which SequentialLR cannot run",
				"pass the schedulers it runs instead")
		}
		s.scheds = append(s.scheds, in)
	}
	opt.SetLearningRate(c.baseLR)
	for _, x := range s.scheds {
		x.core().lastEpoch--
	}
	if err := initialStep(s.scheds[0]); err != nil {
		return nil, err
	}
	s.lastEpoch, s.lastLR = 0, s.scheds[0].LastLR()
	return s, nil
}

// Step moves to the next epoch, handing over to the next scheduler at a
// milestone.
func (s *SequentialLR) Step() error {
	if len(s.scheds) == 0 {
		return unmade(s)
	}
	e := s.lastEpoch + 1
	i := sort.SearchInts(s.milestones, e+1) // bisect_right
	x := s.scheds[i]
	var err error
	if i > 0 && s.milestones[i-1] == e {
		err = advance(x, true, 0)
	} else {
		err = advance(x, false, 0)
	}
	if err != nil {
		return err
	}
	s.lastEpoch, s.lastLR = e, x.LastLR()
	return nil
}

func (s *SequentialLR) chain() (float64, error) { return s.lastLR, nil } // not used: Step is its own

// NewWarmupCosine makes the usual warm-up then cosine schedule over total
// epochs as PyTorch users compose it: LinearLR(opt, startFactor, 1,
// warmup) for the first warmup epochs, then CosineAnnealingLR(opt,
// total-warmup, etaMin), in a SequentialLR with the milestone warmup.
func NewWarmupCosine(opt Optimizer, warmup, total int, startFactor, etaMin float64) (*SequentialLR, error) {
	if warmup <= 0 || total <= warmup {
		return nil, nnError("warmup_cosine", lathe.ErrValue, "warmup", "is "+strconv.Itoa(warmup)+" of "+strconv.Itoa(total)+" epochs",
			"pass 0 < warmup < total")
	}
	// Checked first so that LinearLR, once made, is followed by the rest.
	if err := checkHyper("warmup_cosine", "eta_min", etaMin, !math.IsInf(etaMin, 0), "that is finite"); err != nil {
		return nil, err
	}
	warm, err := NewLinearLR(opt, startFactor, 1, warmup)
	if err != nil {
		return nil, err
	}
	cos, err := NewCosineAnnealingLR(opt, total-warmup, etaMin)
	if err != nil {
		return nil, err
	}
	return NewSequentialLR(opt, []LRScheduler{warm, cos}, []int{warmup})
}
