package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// ReduceLROnPlateau multiplies the learning rate by Factor when a metric
// has not improved for more than Patience epochs
// (torch.optim.lr_scheduler.ReduceLROnPlateau). An epoch improves on the
// best so far when its metric is below best·(1-Threshold) (Mode "min",
// ThresholdMode "rel"), below best-Threshold ("abs"), or above
// best·(1+Threshold) or best+Threshold in Mode "max". After a reduction it
// waits Cooldown epochs before counting bad epochs again; the rate never
// goes below MinLR, and a change smaller than Eps is not made.
type ReduceLROnPlateau struct {
	opt Optimizer
	cfg PlateauConfig
	// torch's state
	best         float64
	badEpochs    int
	cooldownLeft int
	lastEpoch    int
	lastLR       float64
}

// PlateauConfig holds ReduceLROnPlateau's settings; DefaultPlateau gives
// PyTorch's defaults.
type PlateauConfig struct {
	Mode          string // "min" or "max"
	Factor        float64
	Patience      int
	Threshold     float64
	ThresholdMode string // "rel" or "abs"
	Cooldown      int
	MinLR         float64
	Eps           float64
}

// DefaultPlateau gives PyTorch's ReduceLROnPlateau settings: mode "min",
// factor 0.1, patience 10, threshold 1e-4 "rel", cooldown 0, min_lr 0,
// eps 1e-8.
func DefaultPlateau() PlateauConfig {
	return PlateauConfig{Mode: "min", Factor: 0.1, Patience: 10, Threshold: 1e-4, ThresholdMode: "rel", Eps: 1e-8}
}

// NewReduceLROnPlateau makes a ReduceLROnPlateau on opt.
func NewReduceLROnPlateau(opt Optimizer, cfg PlateauConfig) (*ReduceLROnPlateau, error) {
	const op = "reduce_lr_on_plateau"
	if isNil(opt) {
		return nil, nnError(op, lathe.ErrValue, "opt", "is nil", "pass the optimizer to schedule")
	}
	if cfg.Mode != "min" && cfg.Mode != "max" {
		return nil, nnError(op, lathe.ErrValue, "mode", "is "+strconv.Quote(cfg.Mode), `pass "min" or "max"`)
	}
	if cfg.ThresholdMode != "rel" && cfg.ThresholdMode != "abs" {
		return nil, nnError(op, lathe.ErrValue, "threshold_mode", "is "+strconv.Quote(cfg.ThresholdMode), `pass "rel" or "abs"`)
	}
	if cfg.Patience < 0 || cfg.Cooldown < 0 {
		return nil, nnError(op, lathe.ErrValue, "patience", "or cooldown is negative", "")
	}
	if err := firstErr(
		checkHyper(op, "factor", cfg.Factor, cfg.Factor >= 0 && cfg.Factor < 1, "in [0, 1)"),
		checkHyper(op, "threshold", cfg.Threshold, true, "that is a number"),
		checkHyper(op, "min_lr", cfg.MinLR, cfg.MinLR >= 0, "≥ 0"),
		checkHyper(op, "eps", cfg.Eps, cfg.Eps >= 0, "≥ 0"),
	); err != nil {
		return nil, err
	}
	s := &ReduceLROnPlateau{opt: opt, cfg: cfg, lastLR: opt.LearningRate()}
	s.best = s.worst()
	return s, nil
}

func (s *ReduceLROnPlateau) worst() float64 {
	if s.cfg.Mode == "min" {
		return math.Inf(1)
	}
	return math.Inf(-1)
}

func (s *ReduceLROnPlateau) better(a, best float64) bool {
	switch {
	case s.cfg.Mode == "min" && s.cfg.ThresholdMode == "rel":
		return a < best*(1-s.cfg.Threshold)
	case s.cfg.Mode == "min":
		return a < best-s.cfg.Threshold
	case s.cfg.ThresholdMode == "rel":
		return a > best*(s.cfg.Threshold+1)
	}
	return a > best+s.cfg.Threshold
}

// Step ends an epoch whose metric (a validation loss, say) was metric, and
// reduces the learning rate if it has not improved for too long. A NaN
// metric is no improvement. Its only error is a zero ReduceLROnPlateau's.
func (s *ReduceLROnPlateau) Step(metric float64) error {
	if s.opt == nil {
		return unmade(s)
	}
	s.lastEpoch++
	if s.better(metric, s.best) {
		s.best, s.badEpochs = metric, 0
	} else {
		s.badEpochs++
	}
	if s.cooldownLeft > 0 {
		s.cooldownLeft--
		s.badEpochs = 0 // bad epochs in cooldown do not count
	}
	if s.badEpochs > s.cfg.Patience {
		old := s.opt.LearningRate()
		next := math.Max(old*s.cfg.Factor, s.cfg.MinLR)
		if old-next > s.cfg.Eps {
			s.opt.SetLearningRate(next)
		}
		s.cooldownLeft, s.badEpochs = s.cfg.Cooldown, 0
	}
	s.lastLR = s.opt.LearningRate()
	return nil
}

// LastLR is the optimizer's learning rate after the last Step.
func (s *ReduceLROnPlateau) LastLR() float64 { return s.lastLR }

// Epoch is the number of Steps taken.
func (s *ReduceLROnPlateau) Epoch() int { return s.lastEpoch }

// Best is the best metric so far (+Inf in mode "min", -Inf in mode "max"
// before the first Step).
func (s *ReduceLROnPlateau) Best() float64 { return s.best }

// BadEpochs is the number of epochs since the metric last improved, not
// counting those in cooldown.
func (s *ReduceLROnPlateau) BadEpochs() int { return s.badEpochs }
