package nn

import "github.com/lathe-ml/lathe"

// Upsample resamples the spatial dims of its input, as torch.nn.Upsample:
// its options are those of lathe's Interpolate (Size or ScaleFactor, Mode,
// AlignCorners, RecomputeScaleFactor), and it has no parameters.
//
//	up := nn.NewUpsample(lathe.ScaleFactor(2), lathe.Mode("bilinear"))
type Upsample struct {
	activation
	Options []lathe.InterpOption
}

// NewUpsample returns an Upsample with Interpolate's options. They are
// checked when Forward runs, against its input: a bad one gives a failed
// output naming it.
func NewUpsample(opts ...lathe.InterpOption) *Upsample {
	return &Upsample{Options: append([]lathe.InterpOption{}, opts...)}
}

// Forward interpolates x.
func (u *Upsample) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Interpolate(u.Options...) }
