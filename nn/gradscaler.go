package nn

import (
	"cmp"
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// GradScaler scales a float16 loss so that its small gradients do not flush
// to zero, and undoes the scale before the optimizer steps, as PyTorch
// 1.13's torch.cuda.amp.GradScaler (torch/cuda/amp/grad_scaler.py, and
// _amp_update_scale_ for Update):
//
//	loss := scaler.Scale(loss)         // loss·scale
//	loss.Backward()
//	scaler.Unscale(opt)                // optional: before ClipGradNorm
//	stepped, err := scaler.Step(opt)   // skips opt.Step if a gradient is Inf or NaN
//	err = scaler.Update()              // backs off, or grows every GrowthInterval clean steps
//
// A GradScaler works with lathe's own optimizers (SGD, Adam, ...), whose
// parameters it reaches through the optimizer. It is for one goroutine.
// The zero GradScaler is NewGradScaler's: a zero factor or interval takes
// torch's default.
type GradScaler struct {
	// GrowthFactor (above 1) multiplies the scale after GrowthInterval
	// steps in a row without Inf or NaN; BackoffFactor (in (0, 1))
	// multiplies it after a step with one.
	GrowthFactor, BackoffFactor float64
	GrowthInterval              int

	scale   float32 // float32, as torch's scale tensor; 0 until first used
	tracker int     // clean steps since the last growth or backoff
	// per optimizer since the last Update: unscaled, what it found, stepped
	unscaled, foundInf, stepped map[Optimizer]bool
}

// NewGradScaler returns a GradScaler with torch's defaults: scale 2¹⁶,
// growth factor 2, backoff factor 0.5, growth interval 2000.
func NewGradScaler() *GradScaler {
	s := &GradScaler{}
	s.start()
	return s
}

// start gives what is unset torch's defaults, the first time s is used.
func (s *GradScaler) start() {
	if s.scale != 0 {
		return
	}
	s.scale = 65536
	s.GrowthFactor = cmp.Or(s.GrowthFactor, 2)
	s.BackoffFactor = cmp.Or(s.BackoffFactor, 0.5)
	s.GrowthInterval = cmp.Or(s.GrowthInterval, 2000)
	s.unscaled, s.foundInf, s.stepped = map[Optimizer]bool{}, map[Optimizer]bool{}, map[Optimizer]bool{}
}

// CurrentScale returns the scale (torch's get_scale).
func (s *GradScaler) CurrentScale() float64 {
	s.start()
	return float64(s.scale)
}

// Scale returns loss multiplied by the scale (torch's scale(outputs)). A
// float16 or bfloat16 loss is scaled in float32, as torch's is (its scale
// is a float32 tensor of one element, which promotes), so that the scaled
// loss reads as a number: float16 holds at most 65504, less than the
// initial scale. The gradient flows back in the loss's dtype, where a
// float16 one overflows as torch's does; Autocast computes losses in
// float32.
func (s *GradScaler) Scale(loss *lathe.Tensor) *lathe.Tensor {
	if err := loss.CheckArg("scale", "loss"); err != nil {
		return lathe.Failed(err)
	}
	s.start()
	if dt := loss.DType(); dt != lathe.Float16 && dt != lathe.BFloat16 {
		return loss.MulScalar(float64(s.scale))
	}
	wide := loss.Cast(lathe.Float32)
	out := wide.MulScalar(float64(s.scale))
	lathe.ReleaseWithGraph(out, wide)
	return out
}

// Unscale divides the gradients of opt's parameters by the scale (times
// the float32 reciprocal, as torch's unscale_) and records whether any was
// Inf or NaN. A second Unscale of opt before Update is an ErrValue, as in
// torch; on any error nothing changes.
func (s *GradScaler) Unscale(opt Optimizer) error {
	s.start()
	switch {
	case !(s.GrowthFactor > 1) || math.IsInf(s.GrowthFactor, 1):
		return nnError("unscale", lathe.ErrValue, "GrowthFactor", "is "+strconv.FormatFloat(s.GrowthFactor, 'g', -1, 64), "use a finite factor above 1 (torch's default is 2)")
	case !(s.BackoffFactor > 0 && s.BackoffFactor < 1):
		return nnError("unscale", lathe.ErrValue, "BackoffFactor", "is "+strconv.FormatFloat(s.BackoffFactor, 'g', -1, 64), "use a factor in (0, 1) (torch's default is 0.5)")
	case s.GrowthInterval < 1:
		return nnError("unscale", lathe.ErrValue, "GrowthInterval", "is "+strconv.Itoa(s.GrowthInterval), "use 1 or more steps (torch's default is 2000)")
	}
	if s.unscaled[opt] {
		return nnError("unscale", lathe.ErrValue, "opt", "was unscaled already since the last Update",
			"call Unscale once per step, before Step, and Update after Step")
	}
	ps := paramsOf(opt)
	if ps == nil {
		return nnError("unscale", lathe.ErrValue, "opt", "is not one of package nn's optimizers", "use nn.NewSGD, nn.NewAdam, ...")
	}
	for _, p := range ps.params {
		g := p.T.Grad()
		if g == nil {
			continue
		}
		if err := g.CheckArg("unscale", p.Name+".grad"); err != nil {
			return err
		}
		// A float16 gradient unscaled in float16 loses what the scale
		// lifted out of float16's subnormals: torch refuses it too
		// ("Attempting to unscale FP16 gradients").
		if g.DType() == lathe.Float16 {
			return nnError("unscale", lathe.ErrDType, p.Name+".grad", "is float16, which loses small gradients when unscaled",
				"keep the parameters in float32 and run the forward pass under lathe.Autocast(lathe.Float16, ...)")
		}
	}
	inv := float64(float32(1 / float64(s.scale)))
	grads := make([]*lathe.Tensor, len(ps.params))
	// Inf·0 and NaN·0 are NaN: one number per gradient says whether any
	// element is not finite. The numbers are read back together, one wait
	// for each device a step, as torch's found_inf is one per device
	// (reading each stopped a GPU once per parameter; stacking those of
	// parameters on several devices was an ErrDevice of stack).
	probes := map[lathe.Device][]*lathe.Tensor{}
	var devices []lathe.Device
	var err error
	lathe.NoGrad(func() {
		for i, p := range ps.params {
			g := p.T.Grad()
			if g == nil {
				continue
			}
			zeroed := g.MulScalar(0)
			sum := zeroed.Sum()
			zeroed.Release()
			dev := g.Device()
			if _, ok := probes[dev]; !ok {
				devices = append(devices, dev)
			}
			probes[dev] = append(probes[dev], sum.Cast(lathe.Float32))
			sum.Release()
			if grads[i] = g.MulScalar(inv); grads[i].Err() != nil {
				err = grads[i].Err()
				return
			}
		}
	})
	found := false
	for _, dev := range devices {
		if err == nil {
			stacked := lathe.Stack(probes[dev], 0)
			var probe []float32
			probe, err = stacked.Float32s()
			stacked.Release()
			for _, v := range probe {
				found = found || math.IsNaN(float64(v))
			}
		}
		for _, t := range probes[dev] {
			t.Release()
		}
	}
	if err != nil {
		for _, g := range grads {
			if g != nil {
				g.Release()
			}
		}
		return err
	}
	for i, p := range ps.params {
		if grads[i] != nil {
			if err := p.T.SetGrad(grads[i]); err != nil {
				return err
			}
		}
	}
	s.unscaled[opt], s.foundInf[opt] = true, found
	return nil
}

// Step unscales opt's gradients if Unscale has not, then calls opt.Step
// unless a gradient held Inf or NaN. stepped says whether it did. A second
// Step of opt before Update is an ErrValue, as in torch.
func (s *GradScaler) Step(opt Optimizer) (stepped bool, err error) {
	s.start()
	if s.stepped[opt] {
		return false, nnError("step", lathe.ErrValue, "opt", "was stepped already since the last Update",
			"call Step once per step, and Update after it")
	}
	if !s.unscaled[opt] {
		if err := s.Unscale(opt); err != nil {
			return false, err
		}
	}
	if s.foundInf[opt] {
		s.stepped[opt] = true
		return false, nil
	}
	if err := opt.Step(); err != nil {
		return false, err
	}
	s.stepped[opt] = true
	return true, nil
}

// Update sets the scale for the next step: times BackoffFactor if any
// optimizer found Inf or NaN since the last Update, else times
// GrowthFactor once GrowthInterval steps in a row were clean (torch's
// _amp_update_scale_); then it forgets the step's unscaling. An Update
// with no Unscale or Step since the last is an ErrValue and changes
// nothing (torch asserts): counted as a clean step, it grew the scale of
// a loop that never stepped.
func (s *GradScaler) Update() error {
	s.start()
	if len(s.unscaled) == 0 && len(s.stepped) == 0 {
		return nnError("update", lathe.ErrValue, "", "found no Unscale or Step since the last Update",
			"call Step (or Unscale) on each optimizer before Update")
	}
	inf := false
	for _, f := range s.foundInf {
		inf = inf || f
	}
	if inf {
		s.scale = float32(float64(s.scale) * s.BackoffFactor)
		s.tracker = 0
	} else if s.tracker++; s.tracker >= s.GrowthInterval {
		if grown := float32(float64(s.scale) * s.GrowthFactor); !math.IsInf(float64(grown), 0) {
			s.scale = grown
		}
		s.tracker = 0
	}
	clear(s.unscaled)
	clear(s.foundInf)
	clear(s.stepped)
	return nil
}
