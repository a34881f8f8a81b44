package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// The channel dropouts (Dropout1d, 2d, 3d) and the SELU-preserving alpha
// dropouts, as torch 1.13's feature_dropout and alpha_dropout
// (ATen/native/Dropout.cpp): a keep mask drawn from Bernoulli(1-P), one
// value per element or per (n, c) channel, made on x's device from the
// stream Seed sets. In evaluation mode, with P 0 or with x empty, Forward
// returns x's values in a new handle; with P 1 it returns zeros, as
// torch. P outside [0, 1] is ErrValue, x of another dtype than a float
// ErrDType.

// Dropout1d zeroes whole channels of (N, C, L) or (C, L) inputs with
// probability P in training mode and scales the rest by 1/(1-P)
// (torch.nn.Dropout1d; torch's default p is 0.5).
type Dropout1d struct {
	P    float64
	Eval bool // true after Train(false)
}

// Dropout2d zeroes whole channels of (N, C, H, W) inputs with probability
// P in training mode and scales the rest by 1/(1-P) (torch.nn.Dropout2d;
// torch's default p is 0.5). As torch 1.13's, it takes dim 1 of any input
// of 2 dims or more as the channel: a 3-d input is (N, C, L), not an
// unbatched (C, H, W) (torch warns so).
type Dropout2d struct {
	P    float64
	Eval bool // true after Train(false)
}

// Dropout3d zeroes whole channels of (N, C, D, H, W) or (C, D, H, W)
// inputs with probability P in training mode and scales the rest by
// 1/(1-P) (torch.nn.Dropout3d; torch's default p is 0.5). As torch
// 1.13's, an input of other than 5 dims is taken as unbatched, dim 0 its
// channel.
type Dropout3d struct {
	P    float64
	Eval bool // true after Train(false)
}

// AlphaDropout is dropout for SELU networks (torch.nn.AlphaDropout;
// torch's default p is 0.5): in training mode each element is dropped
// with probability P to SELU's negative saturation -α' (α' =
// 1.7580993408473766), then scaled and shifted, as torch computes it:
// a·keep·x + α'·a·(keep - 1 + P), a = 1/√((α'²P+1)(1-P)), which keeps a
// zero-mean unit-variance input so.
type AlphaDropout struct {
	P    float64
	Eval bool // true after Train(false)
}

// FeatureAlphaDropout is AlphaDropout of whole (n, c) channels
// (torch.nn.FeatureAlphaDropout; torch's default p is 0.5), for inputs of
// 2 dims or more, dim 1 the channel.
type FeatureAlphaDropout struct {
	P    float64
	Eval bool // true after Train(false)
}

// NewDropout1d makes a Dropout1d layer, in training mode.
func NewDropout1d(p float64) *Dropout1d { return &Dropout1d{P: p} }

// NewDropout2d makes a Dropout2d layer, in training mode.
func NewDropout2d(p float64) *Dropout2d { return &Dropout2d{P: p} }

// NewDropout3d makes a Dropout3d layer, in training mode.
func NewDropout3d(p float64) *Dropout3d { return &Dropout3d{P: p} }

// NewAlphaDropout makes an AlphaDropout layer, in training mode.
func NewAlphaDropout(p float64) *AlphaDropout { return &AlphaDropout{P: p} }

// NewFeatureAlphaDropout makes a FeatureAlphaDropout layer, in training
// mode.
func NewFeatureAlphaDropout(p float64) *FeatureAlphaDropout { return &FeatureAlphaDropout{P: p} }

// Forward applies channel dropout if the layer is in training mode; x of
// other than 2 or 3 dims is ErrShape, as torch's.
func (d *Dropout1d) Forward(x *lathe.Tensor) *lathe.Tensor {
	const op = "dropout1d"
	if err := x.CheckArg(op, "x"); err != nil {
		return lathe.Failed(err)
	}
	if r := x.Rank(); r != 2 && r != 3 {
		return lathe.Failed(nnError(op, lathe.ErrShape, "x", "has shape "+shapeString(x.Shape())+", but dropout1d takes (N, C, L) or (C, L)",
			"give a 2-d or 3-d input"))
	}
	return featureDropout(op, x, d.P, !d.Eval, x.Rank() == 3, false)
}

// Forward applies channel dropout if the layer is in training mode; x of
// fewer than 2 dims is ErrShape.
func (d *Dropout2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return featureDropout("dropout2d", x, d.P, !d.Eval, true, false)
}

// Forward applies channel dropout if the layer is in training mode; a 0-d
// x is ErrShape.
func (d *Dropout3d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return featureDropout("dropout3d", x, d.P, !d.Eval, x != nil && x.Err() == nil && x.Rank() == 5, false)
}

// Forward applies alpha dropout if the layer is in training mode.
func (d *AlphaDropout) Forward(x *lathe.Tensor) *lathe.Tensor {
	return dropoutMask("alpha_dropout", x, d.P, !d.Eval, nil, true)
}

// Forward applies channel alpha dropout if the layer is in training
// mode; x of fewer than 2 dims is ErrShape.
func (d *FeatureAlphaDropout) Forward(x *lathe.Tensor) *lathe.Tensor {
	return featureDropout("feature_alpha_dropout", x, d.P, !d.Eval, true, true)
}

// featureDropout draws one keep value per (n, c) channel, dims 0 and 1 of
// x where batched, else one per dim-0 channel.
func featureDropout(op string, x *lathe.Tensor, p float64, train, batched, alpha bool) *lathe.Tensor {
	if err := x.CheckArg(op, "x"); err != nil {
		return lathe.Failed(err)
	}
	s := x.Shape()
	need := 1
	if batched {
		need = 2
	}
	if len(s) < need {
		// torch: "Feature dropout requires at least 2 dimensions in the input"
		return lathe.Failed(nnError(op, lathe.ErrShape, "x", "has shape "+shapeString(s)+", with no channel dim",
			"give an input with a batch and a channel dim"))
	}
	mask := make([]int, len(s))
	for i := range mask {
		mask[i] = 1
	}
	copy(mask, s[:need])
	return dropoutMask(op, x, p, train, mask, alpha)
}

// dropoutMask is dropout of x with a keep mask of shape mask (x's own
// where nil), broadcast over x.
func dropoutMask(op string, x *lathe.Tensor, p float64, train bool, mask []int, alpha bool) *lathe.Tensor {
	if err := x.CheckArg(op, "x"); err != nil {
		return lathe.Failed(err)
	}
	if !(p >= 0 && p <= 1) {
		// torch: "dropout probability has to be between 0 and 1"
		return lathe.Failed(nnError(op, lathe.ErrValue, "p", "is "+strconv.FormatFloat(p, 'g', -1, 64), "give a probability in [0, 1]"))
	}
	if !x.DType().IsFloat() {
		return lathe.Failed(nnError(op, lathe.ErrDType, "x", "is "+x.DType().String(), "give a float tensor"))
	}
	if !train || p == 0 || x.Numel() == 0 {
		return x.Dropout(0, false) // x's values in a new handle
	}
	if p == 1 {
		z := lathe.Zeros(x.Device(), x.DType()) // 0-d, in x's dtype (wgpu:0 holds no float64)
		out := x.Mul(z)
		lathe.ReleaseWithGraph(out, z)
		return out
	}
	if mask == nil {
		mask = x.Shape()
	}
	var keep *lathe.Tensor
	lathe.NoGrad(func() {
		dt := lathe.Float32 // a 16-bit grid would round p
		if x.DType() == lathe.Float64 {
			dt = lathe.Float64
		}
		u := lathe.Rand(x.Device(), dt, mask...)
		ge := u.GeScalar(p)
		keep = ge.Cast(x.DType())
		u.Release()
		ge.Release()
	})
	if !alpha {
		var scale *lathe.Tensor
		lathe.NoGrad(func() { scale = keep.MulScalar(1 / (1 - p)) })
		keep.Release()
		out := x.Mul(scale)
		lathe.ReleaseWithGraph(out, scale)
		return out
	}
	const alphaP = 1.7580993408473766 // SELU's scale·alpha
	a := 1 / math.Sqrt((alphaP*alphaP*p+1)*(1-p))
	var noise, b *lathe.Tensor
	lathe.NoGrad(func() {
		noise = keep.MulScalar(a)
		km := keep.SubScalar(1)
		kma := km.MulScalar(alphaP * a)
		b = kma.AddScalar(alphaP * a * p)
		km.Release()
		kma.Release()
	})
	keep.Release()
	y := x.Mul(noise)
	out := y.Add(b)
	lathe.ReleaseWithGraph(out, y, noise, b)
	return out
}

// Parameters is empty.
func (d *Dropout1d) Parameters() []Param { return nil }

// To does nothing: Dropout1d has no parameters.
func (d *Dropout1d) To(lathe.Device) error { return nil }

// Train switches between dropping (true) and passing through (false).
func (d *Dropout1d) Train(on bool) { d.Eval = !on }

// Parameters is empty.
func (d *Dropout2d) Parameters() []Param { return nil }

// To does nothing: Dropout2d has no parameters.
func (d *Dropout2d) To(lathe.Device) error { return nil }

// Train switches between dropping (true) and passing through (false).
func (d *Dropout2d) Train(on bool) { d.Eval = !on }

// Parameters is empty.
func (d *Dropout3d) Parameters() []Param { return nil }

// To does nothing: Dropout3d has no parameters.
func (d *Dropout3d) To(lathe.Device) error { return nil }

// Train switches between dropping (true) and passing through (false).
func (d *Dropout3d) Train(on bool) { d.Eval = !on }

// Parameters is empty.
func (d *AlphaDropout) Parameters() []Param { return nil }

// To does nothing: AlphaDropout has no parameters.
func (d *AlphaDropout) To(lathe.Device) error { return nil }

// Train switches between dropping (true) and passing through (false).
func (d *AlphaDropout) Train(on bool) { d.Eval = !on }

// Parameters is empty.
func (d *FeatureAlphaDropout) Parameters() []Param { return nil }

// To does nothing: FeatureAlphaDropout has no parameters.
func (d *FeatureAlphaDropout) To(lathe.Device) error { return nil }

// Train switches between dropping (true) and passing through (false).
func (d *FeatureAlphaDropout) Train(on bool) { d.Eval = !on }
