package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// checkLR is the error of a scheduler whose rule gave a learning rate an
// optimizer refuses (NaN or negative, from a user's function or an
// overflowing power), where torch would set it and train on garbage.
func checkLR(op, what string, lr float64) error {
	if lr >= 0 && !math.IsInf(lr, 1) {
		return nil
	}
	return nnError(op, lathe.ErrValue, what, "gives the learning rate "+fmtFloat(lr),
		"make the schedule give a finite learning rate ≥ 0")
}

// LambdaLR sets the learning rate to the base rate times Lambda(epoch)
// (torch.optim.lr_scheduler.LambdaLR). A NaN, infinite or negative rate
// from Lambda is an ErrValue of Step (and of the constructor, for epoch
// 0), and the step changes nothing.
type LambdaLR struct {
	schedCore
	Lambda func(epoch int) float64
}

// NewLambdaLR makes a LambdaLR on opt.
func NewLambdaLR(opt Optimizer, lambda func(epoch int) float64) (*LambdaLR, error) {
	c, err := attach("lambda_lr", opt)
	if err != nil {
		return nil, err
	}
	s := &LambdaLR{schedCore: c, Lambda: lambda}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *LambdaLR) check() error {
	if s.Lambda == nil {
		return nnError("lambda_lr", lathe.ErrValue, "lr_lambda", "is nil", "pass a func of the epoch")
	}
	return nil
}

// Step moves to the next epoch.
func (s *LambdaLR) Step() error { return advance(s, false, 0) }

func (s *LambdaLR) chain() (float64, error) {
	lr := s.baseLR * s.Lambda(s.lastEpoch)
	return lr, checkLR("lambda_lr", "lr_lambda("+strconv.Itoa(s.lastEpoch)+")", lr)
}

// MultiplicativeLR multiplies the learning rate by Lambda(epoch) at each
// epoch after the first (torch.optim.lr_scheduler.MultiplicativeLR). A
// NaN, infinite or negative rate is an ErrValue of Step, which changes
// nothing.
type MultiplicativeLR struct {
	schedCore
	Lambda func(epoch int) float64
}

// NewMultiplicativeLR makes a MultiplicativeLR on opt.
func NewMultiplicativeLR(opt Optimizer, lambda func(epoch int) float64) (*MultiplicativeLR, error) {
	c, err := attach("multiplicative_lr", opt)
	if err != nil {
		return nil, err
	}
	s := &MultiplicativeLR{schedCore: c, Lambda: lambda}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *MultiplicativeLR) check() error {
	if s.Lambda == nil {
		return nnError("multiplicative_lr", lathe.ErrValue, "lr_lambda", "is nil", "pass a func of the epoch")
	}
	return nil
}

// Step moves to the next epoch.
func (s *MultiplicativeLR) Step() error { return advance(s, false, 0) }

func (s *MultiplicativeLR) chain() (float64, error) {
	lr := s.opt.LearningRate()
	if s.lastEpoch > 0 {
		lr *= s.Lambda(s.lastEpoch)
	}
	return lr, checkLR("multiplicative_lr", "lr_lambda("+strconv.Itoa(s.lastEpoch)+")", lr)
}

// ConstantLR multiplies the learning rate by Factor until epoch
// TotalIters, then restores it (torch.optim.lr_scheduler.ConstantLR).
type ConstantLR struct {
	schedCore
	Factor     float64
	TotalIters int
}

// NewConstantLR makes a ConstantLR on opt (torch's defaults are 1/3 and
// 5). Factor lies in [0, 1], as torch requires; a Factor of 0 cannot be
// undone, and reaching TotalIters with it is an ErrValue (torch's
// ZeroDivisionError).
func NewConstantLR(opt Optimizer, factor float64, totalIters int) (*ConstantLR, error) {
	c, err := attach("constant_lr", opt)
	if err != nil {
		return nil, err
	}
	s := &ConstantLR{schedCore: c, Factor: factor, TotalIters: totalIters}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *ConstantLR) check() error {
	return checkHyper("constant_lr", "factor", s.Factor, s.Factor >= 0 && s.Factor <= 1, "in [0, 1]")
}

// Step moves to the next epoch.
func (s *ConstantLR) Step() error { return advance(s, false, 0) }

func (s *ConstantLR) chain() (float64, error) {
	lr := s.opt.LearningRate()
	switch {
	case s.lastEpoch == 0:
		return lr * s.Factor, nil
	case s.lastEpoch != s.TotalIters:
		return lr, nil
	case s.Factor == 0:
		return 0, nnError("constant_lr", lathe.ErrValue, "factor", "is 0, which the rate at total_iters cannot be divided by",
			"give a factor in (0, 1]")
	}
	return lr * (1 / s.Factor), nil
}

func (s *ConstantLR) closed() (float64, bool) {
	f := s.Factor
	if s.lastEpoch >= s.TotalIters {
		f += 1 - s.Factor
	}
	return s.baseLR * f, true
}

// PolynomialLR decays the learning rate by (1 - epoch/TotalIters)^Power
// until TotalIters, then keeps it (torch.optim.lr_scheduler.PolynomialLR,
// new in 1.13). Power must be ≥ 0 here: torch takes a negative power and
// fails dividing by zero at TotalIters.
type PolynomialLR struct {
	schedCore
	TotalIters int
	Power      float64
}

// NewPolynomialLR makes a PolynomialLR on opt (torch's defaults are 5 and
// 1).
func NewPolynomialLR(opt Optimizer, totalIters int, power float64) (*PolynomialLR, error) {
	c, err := attach("polynomial_lr", opt)
	if err != nil {
		return nil, err
	}
	s := &PolynomialLR{schedCore: c, TotalIters: totalIters, Power: power}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *PolynomialLR) check() error {
	return checkHyper("polynomial_lr", "power", s.Power, s.Power >= 0 && !math.IsInf(s.Power, 1), "that is finite and ≥ 0")
}

// Step moves to the next epoch.
func (s *PolynomialLR) Step() error { return advance(s, false, 0) }

func (s *PolynomialLR) chain() (float64, error) {
	lr := s.opt.LearningRate()
	if s.lastEpoch == 0 || s.lastEpoch > s.TotalIters {
		return lr, nil
	}
	e, T := float64(s.lastEpoch), float64(s.TotalIters)
	return lr * math.Pow((1-e/T)/(1-(e-1)/T), s.Power), nil
}

func (s *PolynomialLR) closed() (float64, bool) {
	if s.TotalIters <= 0 {
		return 0, false // torch divides by zero
	}
	return s.baseLR * math.Pow(1-float64(min(s.TotalIters, s.lastEpoch))/float64(s.TotalIters), s.Power), true
}

// CosineAnnealingWarmRestarts anneals the learning rate from its base to
// EtaMin along half a cosine over T0 epochs, then restarts, each period
// TMult times the last (SGDR; torch.optim.lr_scheduler.
// CosineAnnealingWarmRestarts):
//
//	lr = EtaMin + (base - EtaMin)·(1 + cos(π·Tcur/Ti))/2
type CosineAnnealingWarmRestarts struct {
	schedCore
	t0, tMult int
	EtaMin    float64
	tCur, tI  float64 // torch's T_cur and T_i (floats after a fractional StepAt)
}

// NewCosineAnnealingWarmRestarts makes a CosineAnnealingWarmRestarts on
// opt: T0 > 0 and TMult ≥ 1 (torch's defaults: TMult 1, etaMin 0).
func NewCosineAnnealingWarmRestarts(opt Optimizer, t0, tMult int, etaMin float64) (*CosineAnnealingWarmRestarts, error) {
	const op = "cosine_annealing_warm_restarts"
	c, err := attach(op, opt)
	if err != nil {
		return nil, err
	}
	if t0 <= 0 {
		return nil, nnError(op, lathe.ErrValue, "T_0", "is "+strconv.Itoa(t0), "pass a positive integer T_0")
	}
	if tMult < 1 {
		return nil, nnError(op, lathe.ErrValue, "T_mult", "is "+strconv.Itoa(tMult), "pass an integer T_mult ≥ 1")
	}
	s := &CosineAnnealingWarmRestarts{schedCore: c, t0: t0, tMult: tMult, EtaMin: etaMin, tCur: -1, tI: float64(t0)}
	if err := s.check(); err != nil {
		return nil, err
	}
	return start(s)
}

func (s *CosineAnnealingWarmRestarts) check() error {
	return checkHyper("cosine_annealing_warm_restarts", "eta_min", s.EtaMin, !math.IsInf(s.EtaMin, 0), "that is finite")
}

func (s *CosineAnnealingWarmRestarts) rate() float64 {
	return s.EtaMin + (s.baseLR-s.EtaMin)*(1+math.Cos(math.Pi*s.tCur/s.tI))/2
}

// Step moves to the next epoch, restarting at the end of a period.
func (s *CosineAnnealingWarmRestarts) Step() error { return advance(s, false, 0) }

// chain is torch's step() without an epoch: advance has moved lastEpoch.
func (s *CosineAnnealingWarmRestarts) chain() (float64, error) {
	tCur, tI := s.tCur+1, s.tI
	if s.lastEpoch == 0 {
		tCur, tI = 0, float64(s.t0)
	} else if tCur >= tI {
		tCur -= tI
		tI *= float64(s.tMult)
	}
	was := [2]float64{s.tCur, s.tI}
	s.tCur, s.tI = tCur, tI
	lr := s.rate()
	if err := checkLR("cosine_annealing_warm_restarts", "step", lr); err != nil {
		s.tCur, s.tI = was[0], was[1]
		return 0, err
	}
	return lr, nil
}

// StepAt moves to epoch, which may be fractional (torch's step(epoch),
// called with epoch + i/iters after batch i to anneal within an epoch).
// A negative or non-finite epoch is an ErrValue, and changes nothing.
func (s *CosineAnnealingWarmRestarts) StepAt(epoch float64) error {
	const op = "cosine_annealing_warm_restarts"
	if s.opt == nil {
		return unmade(s)
	}
	if err := firstErr(s.check(),
		checkHyper(op, "epoch", epoch, epoch >= 0 && !math.IsInf(epoch, 1) && epoch < 1<<53, "that is finite and ≥ 0")); err != nil {
		return err
	}
	T0, mult := float64(s.t0), float64(s.tMult)
	tCur, tI := epoch, T0
	if epoch >= T0 {
		if s.tMult == 1 {
			tCur = math.Mod(epoch, T0)
		} else {
			n := math.Trunc(math.Log(epoch/T0*(mult-1)+1) / math.Log(mult))
			tCur = epoch - T0*(math.Pow(mult, n)-1)/(mult-1)
			tI = T0 * math.Pow(mult, n)
		}
	}
	was := [2]float64{s.tCur, s.tI}
	s.tCur, s.tI = tCur, tI
	lr := s.rate()
	if err := checkLR(op, "epoch", lr); err != nil || math.IsInf(tI, 0) {
		s.tCur, s.tI = was[0], was[1]
		if err == nil {
			err = nnError(op, lathe.ErrValue, "epoch", "is "+fmtFloat(epoch)+", past the periods a float64 holds", "pass a smaller epoch")
		}
		return err
	}
	s.stepCount++
	s.lastEpoch = int(math.Floor(epoch))
	s.opt.SetLearningRate(lr)
	s.lastLR = lr
	return nil
}

func (s *CosineAnnealingWarmRestarts) schedState() []field {
	return append(s.schedCore.schedState(), field{"T_cur", &s.tCur, nil}, field{"T_i", &s.tI, nil})
}

// CyclicLR cycles the learning rate between BaseLR and MaxLR, up over
// StepSizeUp steps and down over StepSizeDown, the amplitude scaled per
// cycle (torch.optim.lr_scheduler.CyclicLR); step it after every batch.
// With CycleMomentum it moves the optimizer's momentum the opposite way
// between MaxMomentum and BaseMomentum, which, as in torch, needs an
// optimizer with a momentum (SGD, RMSprop).
type CyclicLR struct {
	schedCore
	cfg                CyclicConfig
	totalSize, stepRat float64
	ms                 momentumSetter
}

// CyclicConfig holds CyclicLR's settings; DefaultCyclic gives PyTorch's
// defaults.
type CyclicConfig struct {
	BaseLR, MaxLR float64
	// StepSizeUp and StepSizeDown are the steps of the rising and the
	// falling half of a cycle; a StepSizeDown of 0 is StepSizeUp (torch's
	// None).
	StepSizeUp, StepSizeDown int
	// Mode is "triangular" (every cycle the same), "triangular2" (the
	// amplitude halves each cycle) or "exp_range" (the amplitude scales by
	// Gamma^iterations). ScaleFn, where set, replaces it, applied to the
	// cycle number or (ScaleMode "iterations") the step.
	Mode      string
	Gamma     float64
	ScaleFn   func(x float64) float64
	ScaleMode string
	// CycleMomentum moves the momentum between BaseMomentum and
	// MaxMomentum.
	CycleMomentum             bool
	BaseMomentum, MaxMomentum float64
}

// DefaultCyclic gives PyTorch's CyclicLR settings for baseLR and maxLR:
// 2000 steps up and as many down, triangular, gamma 1, momentum cycled
// between 0.8 and 0.9.
func DefaultCyclic(baseLR, maxLR float64) CyclicConfig {
	return CyclicConfig{BaseLR: baseLR, MaxLR: maxLR, StepSizeUp: 2000, Mode: "triangular", Gamma: 1, ScaleMode: "cycle",
		CycleMomentum: true, BaseMomentum: 0.8, MaxMomentum: 0.9}
}

// NewCyclicLR makes a CyclicLR on opt. It sets opt's learning rate to
// BaseLR (and its momentum to BaseMomentum), as torch does.
func NewCyclicLR(opt Optimizer, cfg CyclicConfig) (*CyclicLR, error) {
	const op = "cyclic_lr"
	c, err := attach(op, opt)
	if err != nil {
		return nil, err
	}
	if cfg.ScaleFn == nil && cfg.Mode != "triangular" && cfg.Mode != "triangular2" && cfg.Mode != "exp_range" {
		return nil, nnError(op, lathe.ErrValue, "mode", "is "+strconv.Quote(cfg.Mode)+" and scale_fn is nil",
			`pass "triangular", "triangular2" or "exp_range", or a ScaleFn`)
	}
	if cfg.ScaleFn != nil && cfg.ScaleMode != "cycle" && cfg.ScaleMode != "iterations" {
		return nil, nnError(op, lathe.ErrValue, "scale_mode", "is "+strconv.Quote(cfg.ScaleMode), `pass "cycle" or "iterations"`)
	}
	if cfg.StepSizeUp <= 0 || cfg.StepSizeDown < 0 {
		return nil, nnError(op, lathe.ErrValue, "step_size_up", "is "+strconv.Itoa(cfg.StepSizeUp)+" (step_size_down "+strconv.Itoa(cfg.StepSizeDown)+")",
			"pass a positive step_size_up and a step_size_down ≥ 0 (0: as step_size_up)")
	}
	fin := func(name string, v float64) error {
		return checkHyper(op, name, v, v >= 0 && !math.IsInf(v, 1), "that is finite and ≥ 0")
	}
	if err := firstErr(fin("base_lr", cfg.BaseLR), fin("max_lr", cfg.MaxLR),
		checkHyper(op, "gamma", cfg.Gamma, !math.IsInf(cfg.Gamma, 0), "that is finite")); err != nil {
		return nil, err
	}
	var ms momentumSetter
	if cfg.CycleMomentum {
		if ms = momentumOnly(opt); ms == nil {
			return nil, nnError(op, lathe.ErrValue, "cycle_momentum", "needs an optimizer with a momentum (SGD, RMSprop)",
				"set CycleMomentum to false")
		}
		if err := firstErr(fin("base_momentum", cfg.BaseMomentum), fin("max_momentum", cfg.MaxMomentum)); err != nil {
			return nil, err
		}
	}
	if cfg.ScaleFn == nil {
		cfg.ScaleMode = "cycle"
		if cfg.Mode == "exp_range" {
			cfg.ScaleMode = "iterations"
		}
	}
	up, down := float64(cfg.StepSizeUp), float64(cfg.StepSizeDown)
	if cfg.StepSizeDown == 0 {
		down = up
	}
	s := &CyclicLR{schedCore: c, cfg: cfg, totalSize: up + down, stepRat: up / (up + down), ms: ms}
	lr := opt.LearningRate()
	var mom float64
	if ms != nil {
		mom = ms.momentum()
		ms.setMomentum(cfg.BaseMomentum)
	}
	opt.SetLearningRate(cfg.BaseLR)
	ps := paramsOf(opt)
	var initial float64
	var hadInitial bool
	if ps != nil {
		initial, hadInitial = ps.initialLR, ps.hasInitialLR
	}
	if !hadInitial {
		s.baseLR = cfg.BaseLR // torch's initial_lr: the rate just set, unless a scheduler set one before
	}
	made, err := start(s)
	if err != nil {
		opt.SetLearningRate(lr)
		if ms != nil {
			ms.setMomentum(mom)
		}
		if ps != nil {
			ps.initialLR, ps.hasInitialLR = initial, hadInitial
		}
		return nil, err
	}
	made.baseLR = cfg.BaseLR
	return made, nil
}

// momentumOnly is opt's momentum where torch's CyclicLR finds one
// ('momentum' in the optimizer's defaults: SGD, RMSprop; not Adam's
// betas).
func momentumOnly(opt Optimizer) momentumSetter {
	switch o := opt.(type) {
	case *SGD:
		return o
	case *RMSprop:
		return o
	}
	return nil
}

// Step moves to the next batch.
func (s *CyclicLR) Step() error { return advance(s, false, 0) }

func (s *CyclicLR) scale(x float64) float64 {
	switch {
	case s.cfg.ScaleFn != nil:
		return s.cfg.ScaleFn(x)
	case s.cfg.Mode == "triangular2":
		return 1 / math.Pow(2, x-1)
	case s.cfg.Mode == "exp_range":
		return math.Pow(s.cfg.Gamma, x)
	}
	return 1
}

func (s *CyclicLR) chain() (float64, error) {
	e := float64(s.lastEpoch)
	cycle := math.Floor(1 + e/s.totalSize)
	x := 1 + e/s.totalSize - cycle
	var factor float64
	if x <= s.stepRat {
		factor = x / s.stepRat
	} else {
		factor = (x - 1) / (s.stepRat - 1)
	}
	at := cycle
	if s.cfg.ScaleMode == "iterations" {
		at = e
	}
	sc := s.scale(at)
	lr := s.baseLR + (s.cfg.MaxLR-s.baseLR)*factor*sc
	if err := checkLR("cyclic_lr", "the schedule at step "+strconv.Itoa(s.lastEpoch), lr); err != nil {
		return 0, err
	}
	if s.ms != nil {
		m := s.cfg.MaxMomentum - (s.cfg.MaxMomentum-s.cfg.BaseMomentum)*factor*sc
		if !(m >= 0) {
			return 0, nnError("cyclic_lr", lathe.ErrValue, "the schedule at step "+strconv.Itoa(s.lastEpoch), "gives the momentum "+fmtFloat(m),
				"make the scale function give finite values")
		}
		s.ms.setMomentum(m)
	}
	return lr, nil
}

// ChainedScheduler steps several schedulers of one optimizer together, at
// each Step each in turn, so that their changes to the learning rate
// compose (torch.optim.lr_scheduler.ChainedScheduler). Epoch counts its
// steps.
type ChainedScheduler struct {
	schedCore
	scheds []scheduler
}

// NewChainedScheduler makes a ChainedScheduler of schedulers made on one
// optimizer by this package. Making it changes nothing, as in torch.
func NewChainedScheduler(scheds ...LRScheduler) (*ChainedScheduler, error) {
	const op = "chained_scheduler"
	if len(scheds) == 0 {
		return nil, nnError(op, lathe.ErrValue, "schedulers", "is empty", "pass the schedulers to chain")
	}
	s := &ChainedScheduler{}
	for i, x := range scheds {
		in, ok := x.(scheduler)
		if !ok || isNil(x) || in.core().opt == nil {
			return nil, nnError(op, lathe.ErrValue, "schedulers["+strconv.Itoa(i)+"]", "is not a scheduler made by nn", "")
		}
		if in.core().opt != scheds[0].(scheduler).core().opt {
			return nil, nnError(op, lathe.ErrValue, "schedulers["+strconv.Itoa(i)+"]", "schedules another optimizer than schedulers[0]",
				"chain schedulers of one optimizer")
		}
		s.scheds = append(s.scheds, in)
	}
	s.opt = s.scheds[0].core().opt
	s.baseLR, s.lastLR = s.opt.LearningRate(), s.opt.LearningRate()
	return s, nil
}

// Step steps each scheduler in turn. If one fails, those before it are
// put back as they were, with the optimizer's rate and momentum.
func (s *ChainedScheduler) Step() error {
	if len(s.scheds) == 0 {
		return unmade(s)
	}
	lr := s.opt.LearningRate()
	ms, _ := s.opt.(momentumSetter)
	var mom float64
	if ms != nil {
		mom = ms.momentum()
	}
	fs := s.schedState() // every number of every scheduler chained, nested ones too
	fv, iv := make([]float64, len(fs)), make([]int, len(fs))
	for k, f := range fs {
		if f.f != nil {
			fv[k] = *f.f
		} else {
			iv[k] = *f.i
		}
	}
	for _, x := range s.scheds {
		if err := x.Step(); err != nil {
			for k, f := range fs {
				if f.f != nil {
					*f.f = fv[k]
				} else {
					*f.i = iv[k]
				}
			}
			s.opt.SetLearningRate(lr)
			if ms != nil {
				ms.setMomentum(mom)
			}
			return err
		}
	}
	s.lastEpoch++
	s.stepCount++
	s.lastLR = s.opt.LearningRate()
	return nil
}

func (s *ChainedScheduler) chain() (float64, error) { return s.lastLR, nil } // not used: Step is its own

// schedState of a ChainedScheduler holds its children's too, as
// "<k>.<name>".
func (s *ChainedScheduler) schedState() []field {
	return withChildren(s.schedCore.schedState(), s.scheds)
}

func (s *LambdaLR) schedKind() string                    { return "LambdaLR" }
func (s *MultiplicativeLR) schedKind() string            { return "MultiplicativeLR" }
func (s *ConstantLR) schedKind() string                  { return "ConstantLR" }
func (s *PolynomialLR) schedKind() string                { return "PolynomialLR" }
func (s *CosineAnnealingWarmRestarts) schedKind() string { return "CosineAnnealingWarmRestarts" }
func (s *CyclicLR) schedKind() string                    { return "CyclicLR" }
func (s *ChainedScheduler) schedKind() string            { return "ChainedScheduler" }
