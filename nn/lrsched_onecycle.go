package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// OneCycleLR is the 1cycle policy (torch.optim.lr_scheduler.OneCycleLR):
// the learning rate climbs from MaxLR/DivFactor to MaxLR over the first
// PctStart of TotalSteps and anneals to MaxLR/DivFactor/FinalDivFactor
// over the rest (ThreePhase: back down to the start first), while the
// momentum (SGD's and RMSprop's momentum, Adam's β1) moves the opposite
// way between BaseMomentum and MaxMomentum. Step it after every batch; a
// step past TotalSteps is an ErrValue, as in torch.
type OneCycleLR struct {
	schedCore
	cfg    OneCycleConfig
	phases []cyclePhase
	minLR  float64
}

// OneCycleConfig holds OneCycleLR's settings; DefaultOneCycle gives
// PyTorch's defaults.
type OneCycleConfig struct {
	MaxLR                     float64
	TotalSteps                int
	PctStart                  float64 // the share of the steps spent climbing (0.3)
	AnnealLinear              bool    // anneal linearly, not along a cosine (anneal_strategy)
	CycleMomentum             bool    // move the momentum too (true)
	BaseMomentum, MaxMomentum float64 // 0.85, 0.95
	DivFactor, FinalDivFactor float64 // 25, 1e4
	ThreePhase                bool
}

// DefaultOneCycle gives PyTorch's OneCycleLR settings for maxLR and
// totalSteps.
func DefaultOneCycle(maxLR float64, totalSteps int) OneCycleConfig {
	return OneCycleConfig{MaxLR: maxLR, TotalSteps: totalSteps, PctStart: 0.3, CycleMomentum: true,
		BaseMomentum: 0.85, MaxMomentum: 0.95, DivFactor: 25, FinalDivFactor: 1e4}
}

// cyclePhase is one of torch's _schedule_phases, its ends resolved.
type cyclePhase struct {
	end                   float64
	startLR, endLR        float64
	startMom, endMomentum float64
}

// momentumSetter is an optimizer whose momentum OneCycleLR can move:
// torch's 'momentum' or 'betas' in optimizer.defaults.
type momentumSetter interface {
	setMomentum(m float64)
	momentum() float64
}

func (s *SGD) setMomentum(m float64)     { s.Momentum = m }
func (r *RMSprop) setMomentum(m float64) { r.Momentum = m }
func (a *Adam) setMomentum(m float64)    { a.Betas[0] = m }
func (s *SGD) momentum() float64         { return s.Momentum }
func (r *RMSprop) momentum() float64     { return r.Momentum }
func (a *Adam) momentum() float64        { return a.Betas[0] }

// NewOneCycleLR makes a OneCycleLR on opt. It sets opt's base learning
// rate to MaxLR/DivFactor, as torch does, whatever schedulers came before.
func NewOneCycleLR(opt Optimizer, cfg OneCycleConfig) (*OneCycleLR, error) {
	const op = "one_cycle_lr"
	c, err := attach(op, opt)
	if err != nil {
		return nil, err
	}
	if cfg.TotalSteps <= 0 {
		return nil, nnError(op, lathe.ErrValue, "total_steps", "is "+strconv.Itoa(cfg.TotalSteps), "pass a positive number of steps")
	}
	if err := firstErr(
		checkHyper(op, "max_lr", cfg.MaxLR, cfg.MaxLR >= 0 && !math.IsInf(cfg.MaxLR, 0), "that is finite and ≥ 0"),
		checkHyper(op, "pct_start", cfg.PctStart, cfg.PctStart >= 0 && cfg.PctStart <= 1, "in [0, 1]"),
		checkHyper(op, "div_factor", cfg.DivFactor, cfg.DivFactor > 0, "> 0"),
		checkHyper(op, "final_div_factor", cfg.FinalDivFactor, cfg.FinalDivFactor > 0, "> 0"),
	); err != nil {
		return nil, err
	}
	if cfg.CycleMomentum {
		// Adam's β1 must lie in [0, 1), and a momentum past it diverges.
		if err := firstErr(
			checkHyper(op, "base_momentum", cfg.BaseMomentum, cfg.BaseMomentum >= 0 && cfg.BaseMomentum < 1, "in [0, 1)"),
			checkHyper(op, "max_momentum", cfg.MaxMomentum, cfg.MaxMomentum >= 0 && cfg.MaxMomentum < 1, "in [0, 1)"),
		); err != nil {
			return nil, err
		}
	}
	var ms momentumSetter
	if cfg.CycleMomentum {
		var ok bool
		if ms, ok = opt.(momentumSetter); !ok {
			return nil, nnError(op, lathe.ErrValue, "cycle_momentum", "needs an optimizer with momentum (SGD, RMSprop, Adam, AdamW, Adamax, NAdam, RAdam)",
				"set CycleMomentum to false")
		}
	}
	initial := cfg.MaxLR / cfg.DivFactor
	s := &OneCycleLR{schedCore: c, cfg: cfg, minLR: initial / cfg.FinalDivFactor}
	s.baseLR = initial
	n := float64(cfg.TotalSteps)
	if cfg.ThreePhase {
		s.phases = []cyclePhase{
			{cfg.PctStart*n - 1, initial, cfg.MaxLR, cfg.MaxMomentum, cfg.BaseMomentum},
			{2*cfg.PctStart*n - 2, cfg.MaxLR, initial, cfg.BaseMomentum, cfg.MaxMomentum},
			{n - 1, initial, s.minLR, cfg.MaxMomentum, cfg.MaxMomentum},
		}
	} else {
		s.phases = []cyclePhase{
			{cfg.PctStart*n - 1, initial, cfg.MaxLR, cfg.MaxMomentum, cfg.BaseMomentum},
			{n - 1, cfg.MaxLR, s.minLR, cfg.BaseMomentum, cfg.MaxMomentum},
		}
	}
	// torch sets initial_lr whatever a scheduler set before. A failed
	// first step (a phase of no steps) puts back what the constructor set.
	ps := paramsOf(opt)
	var undo []func()
	if ps != nil {
		was, had := ps.initialLR, ps.hasInitialLR
		undo = append(undo, func() { ps.initialLR, ps.hasInitialLR = was, had })
		ps.initialLR, ps.hasInitialLR = initial, true
	}
	if ms != nil {
		was := ms.momentum()
		undo = append(undo, func() { ms.setMomentum(was) })
		ms.setMomentum(cfg.MaxMomentum)
	}
	lr := opt.LearningRate()
	made, err := start(s)
	if err != nil {
		for _, u := range undo {
			u()
		}
		opt.SetLearningRate(lr)
		return nil, err
	}
	return made, nil
}

// Step moves to the next batch.
func (s *OneCycleLR) Step() error { return advance(s, false, 0) }

func (s *OneCycleLR) anneal(from, to, pct float64) float64 {
	if s.cfg.AnnealLinear {
		return (to-from)*pct + from
	}
	return to + (from-to)/2.0*(math.Cos(math.Pi*pct)+1)
}

func (s *OneCycleLR) chain() (float64, error) {
	t := s.lastEpoch
	if t > s.cfg.TotalSteps {
		return 0, nnError("one_cycle_lr", lathe.ErrValue, "step", "is step "+strconv.Itoa(t+1)+" of "+strconv.Itoa(s.cfg.TotalSteps),
			"make the scheduler with the number of steps you take")
	}
	var lr, mom float64
	start := 0.0
	for i, ph := range s.phases {
		if float64(t) <= ph.end || i == len(s.phases)-1 {
			if ph.end == start { // torch's ZeroDivisionError
				return 0, nnError("one_cycle_lr", lathe.ErrValue, "pct_start", "makes phase "+strconv.Itoa(i+1)+" of "+strconv.Itoa(len(s.phases))+
					" end where it starts ("+strconv.FormatFloat(s.cfg.PctStart, 'g', -1, 64)+" of "+strconv.Itoa(s.cfg.TotalSteps)+" steps)",
					"give each phase at least one step: more steps, or a pct_start inside (0, 1)")
			}
			pct := (float64(t) - start) / (ph.end - start)
			lr = s.anneal(ph.startLR, ph.endLR, pct)
			mom = s.anneal(ph.startMom, ph.endMomentum, pct)
			break
		}
		start = ph.end
	}
	if s.cfg.CycleMomentum {
		s.opt.(momentumSetter).setMomentum(mom)
	}
	return lr, nil
}
