package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// ClipGradNorm scales the gradients of params so that their global L2 norm
// (the norm of all gradients taken as one vector) is at most maxNorm, and
// returns the norm before clipping, as torch.nn.utils.clip_grad_norm_ does:
// each gradient is multiplied by min(1, maxNorm/(total+1e-6)). Parameters
// without a gradient are skipped, and one listed twice (a tied weight)
// counts once; a nil, failed or released one is an error. As in PyTorch (error_if_nonfinite=False),
// a NaN or infinite norm is returned, not refused, and the gradients are
// scaled by the resulting NaN or zero.
func ClipGradNorm(params []Param, maxNorm float64) (float64, error) {
	if !(maxNorm >= 0) {
		return 0, nnError("clip_grad_norm", lathe.ErrValue, "max_norm", "is "+strconv.FormatFloat(maxNorm, 'g', -1, 64), "use max_norm ≥ 0")
	}
	// Each gradient's norm in its own dtype (torch also takes per-tensor
	// norms first), stacked by dtype and device and read back together: one
	// wait per dtype and device, where reading each norm stopped a GPU once
	// per parameter. Their norm is then taken in float64, in parameter
	// order. The parameters may be on several devices (model parallelism),
	// as torch's, which moves the norms to one device: a stack of norms from
	// two devices was an ErrDevice of stack.
	for _, p := range params {
		if p.T == nil {
			return 0, nnError("clip_grad_norm", lathe.ErrValue, p.Name, "is nil", "pass the model's parameters")
		}
		if err := p.T.CheckArg("clip_grad_norm", p.Name); err != nil {
			return 0, err
		}
		if g := p.T.Grad(); g != nil {
			if err := g.CheckArg("clip_grad_norm", p.Name+".grad"); err != nil {
				return 0, err
			}
		}
	}
	var grads, owners []*lathe.Tensor
	type group struct {
		dt  lathe.DType
		dev lathe.Device
	}
	type slot struct {
		g  group
		at int
	}
	var slots []slot
	norms := map[group][]*lathe.Tensor{}
	var groups []group
	seen := map[*lathe.Tensor]bool{}
	lathe.NoGrad(func() {
		for _, p := range params {
			if seen[p.T] {
				continue // a tied weight, listed under each name, counts once, as torch's parameters() yields it once
			}
			seen[p.T] = true
			g := p.T.Grad()
			if g == nil {
				continue
			}
			sq := g.Square()
			sum := sq.Sum()
			sq.Release()
			n := sum.Sqrt()
			sum.Release()
			k := group{g.DType(), g.Device()}
			if _, ok := norms[k]; !ok {
				groups = append(groups, k)
			}
			slots = append(slots, slot{k, len(norms[k])})
			norms[k] = append(norms[k], n)
			grads, owners = append(grads, g), append(owners, p.T)
		}
	})
	read := map[group][]float64{}
	var err error
	for _, k := range groups {
		if err == nil {
			stacked := lathe.Stack(norms[k], 0)
			host := stacked.To(lathe.CPU)
			wide := host.Cast(lathe.Float64)
			read[k], err = wide.Float64s()
			for _, t := range []*lathe.Tensor{stacked, host, wide} {
				t.Release()
			}
		}
		for _, n := range norms[k] {
			n.Release() // those of the groups after a failed one too
		}
	}
	if err != nil {
		return 0, err
	}
	var sq float64
	for _, s := range slots {
		n := read[s.g][s.at]
		sq += n * n
	}
	total := math.Sqrt(sq)
	coef := maxNorm / (total + 1e-6)
	if coef >= 1 {
		return total, nil // torch multiplies by exactly 1 here: nothing changes
	}
	scaled := make([]*lathe.Tensor, len(grads))
	lathe.NoGrad(func() {
		for i, g := range grads {
			scaled[i] = g.MulScalar(coef)
		}
	})
	for _, s := range scaled {
		if err := s.Err(); err != nil {
			for _, s := range scaled {
				s.Release()
			}
			return total, err
		}
	}
	for i, s := range scaled {
		if err := owners[i].SetGrad(s); err != nil {
			return total, err
		}
	}
	return total, nil
}

// ClipGradValue clamps every element of the gradients of params to
// [-clipValue, clipValue], as torch.nn.utils.clip_grad_value_ does.
// Parameters without a gradient are skipped, and one listed twice (a tied
// weight) is clamped once; a NaN element stays NaN, as in torch. A nil,
// failed or released parameter or gradient is an error, and so is a
// clipValue that is NaN or negative (where torch's clamp would set every
// element to -|clipValue|); on error no gradient changes.
func ClipGradValue(params []Param, clipValue float64) error {
	const op = "clip_grad_value"
	if !(clipValue >= 0) {
		return nnError(op, lathe.ErrValue, "clip_value", "is "+strconv.FormatFloat(clipValue, 'g', -1, 64), "use clip_value ≥ 0")
	}
	var owners, clamped []*lathe.Tensor
	seen := map[*lathe.Tensor]bool{}
	for _, p := range params {
		if p.T == nil {
			return nnError(op, lathe.ErrValue, p.Name, "is nil", "pass the model's parameters")
		}
		if err := p.T.CheckArg(op, p.Name); err != nil {
			return err
		}
		if g := p.T.Grad(); g != nil {
			if err := g.CheckArg(op, p.Name+".grad"); err != nil {
				return err
			}
		}
	}
	release := func() {
		for _, c := range clamped {
			c.Release()
		}
	}
	var err error
	lathe.NoGrad(func() {
		for _, p := range params {
			g := p.T.Grad()
			if g == nil || seen[p.T] {
				continue
			}
			seen[p.T] = true
			c := g.Clamp(-clipValue, clipValue)
			clamped, owners = append(clamped, c), append(owners, p.T)
			if err = c.Err(); err != nil {
				return
			}
		}
	})
	if err != nil {
		release()
		return err
	}
	for i, c := range clamped {
		if err := owners[i].SetGrad(c); err != nil {
			for _, c := range clamped[i:] { // those before are the owners' now
				c.Release()
			}
			return err // SetGrad checks shape, dtype and device, which a clamp keeps: not reached
		}
	}
	return nil
}
