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
// without a gradient are skipped. As in PyTorch (error_if_nonfinite=False),
// a NaN or infinite norm is returned, not refused, and the gradients are
// scaled by the resulting NaN or zero.
func ClipGradNorm(params []Param, maxNorm float64) (float64, error) {
	if !(maxNorm >= 0) {
		return 0, nnError("clip_grad_norm", lathe.ErrValue, "max_norm", "is "+strconv.FormatFloat(maxNorm, 'g', -1, 64), "use max_norm ≥ 0")
	}
	var grads []*lathe.Tensor
	var owners []*lathe.Tensor
	var sq float64
	var err error
	lathe.NoGrad(func() {
		for _, p := range params {
			g := p.T.Grad()
			if g == nil {
				continue
			}
			// Each norm in the gradient's dtype, then their norm in float64:
			// torch also takes per-tensor norms first.
			var n float64
			n, err = g.Square().Sum().Sqrt().Item()
			if err != nil {
				return
			}
			sq += n * n
			grads, owners = append(grads, g), append(owners, p.T)
		}
	})
	if err != nil {
		return 0, err
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
