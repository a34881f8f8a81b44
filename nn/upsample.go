package nn

import "github.com/lathe-ml/lathe"

// Upsample resamples the spatial dims of its input, as torch.nn.Upsample:
// its options (Size or ScaleFactor, Mode, AlignCorners,
// RecomputeScaleFactor) are those of lathe's Interpolate, and it has no
// parameters.
//
//	up := nn.NewUpsample(nn.ScaleFactor(2), nn.Mode("bilinear"))
type Upsample struct {
	parameterless
	Options []lathe.InterpOption
}

// NewUpsample returns an Upsample with Interpolate's options. They are
// checked when Forward runs, against its input: a bad one gives a failed
// output naming it. An option that is not Interpolate's fails the layer:
// Err reports it, and Forward returns it.
func NewUpsample(opts ...Option) *Upsample {
	o, err := layerOptions("Upsample", opts)
	if err != nil {
		return &Upsample{parameterless: refused(err)}
	}
	return &Upsample{Options: append([]lathe.InterpOption{}, o.interp...)}
}

// Forward interpolates x.
func (u *Upsample) Forward(x *lathe.Tensor) *lathe.Tensor {
	if u.failed != nil {
		return u.fail()
	}
	return x.Interpolate(u.Options...)
}
