package nn

import "github.com/lathe-ml/lathe"

// Upsample resamples the spatial dims of its input, as torch.nn.Upsample:
// its options (Size or ScaleFactor, Mode, AlignCorners,
// RecomputeScaleFactor) are those of lathe's Interpolate, and it has no
// parameters.
//
//	up := nn.NewUpsample(nn.ScaleFactor(2), nn.Mode("bilinear"))
type Upsample struct {
	activation
	Options []lathe.InterpOption
}

// NewUpsample returns an Upsample with Interpolate's options. They are
// checked when Forward runs, against its input: a bad one gives a failed
// output naming it.
func NewUpsample(opts ...Option) *Upsample {
	return &Upsample{Options: append([]lathe.InterpOption{}, layerOptions(opts).interp...)}
}

// Forward interpolates x.
func (u *Upsample) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Interpolate(u.Options...) }
