package nn

import "github.com/lathe-ml/lathe"

// The activation modules of torch.nn that wrap one lathe op each. Those
// without arguments are plain values (nn.Mish{}); those with arguments
// have a constructor with torch's defaults and exported fields to set on
// the result, which Forward hands to the op, so that a bad value (a NaN
// alpha, min above max) fails Forward's result with an ErrValue naming
// it. None has parameters or acts differently in training. The zero
// value of one with arguments holds zeros, not torch's defaults (ELU{}
// has alpha 0): make it with its constructor, or set every field.

// ELU is x for x > 0 and Alpha·(exp(x)-1) elsewhere (torch.nn.ELU).
type ELU struct {
	activation
	Alpha float64
}

// NewELU makes an ELU with torch's default alpha, 1.
func NewELU() *ELU { return &ELU{Alpha: 1} }

// Forward applies ELU.
func (m ELU) Forward(x *lathe.Tensor) *lathe.Tensor { return x.ELU(m.Alpha) }

// SELU is scale·ELU(x, alpha) with the self-normalising constants
// (torch.nn.SELU).
type SELU struct{ activation }

// Forward applies SELU.
func (SELU) Forward(x *lathe.Tensor) *lathe.Tensor { return x.SELU() }

// CELU is max(0, x) + min(0, Alpha·(exp(x/Alpha)-1)) (torch.nn.CELU).
type CELU struct {
	activation
	Alpha float64
}

// NewCELU makes a CELU with torch's default alpha, 1.
func NewCELU() *CELU { return &CELU{Alpha: 1} }

// Forward applies CELU; an Alpha of 0 or NaN is ErrValue.
func (m CELU) Forward(x *lathe.Tensor) *lathe.Tensor { return x.CELU(m.Alpha) }

// Softplus is log(1+exp(Beta·x))/Beta, and x where Beta·x > Threshold
// (torch.nn.Softplus).
type Softplus struct {
	activation
	Beta, Threshold float64
}

// NewSoftplus makes a Softplus with torch's defaults, beta 1 and
// threshold 20.
func NewSoftplus() *Softplus { return &Softplus{Beta: 1, Threshold: 20} }

// Forward applies Softplus.
func (m Softplus) Forward(x *lathe.Tensor) *lathe.Tensor { return x.SoftplusWith(m.Beta, m.Threshold) }

// Softsign is x/(1+|x|) (torch.nn.Softsign).
type Softsign struct{ activation }

// Forward applies Softsign.
func (Softsign) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Softsign() }

// Hardtanh clamps x to [Min, Max] (torch.nn.Hardtanh: min_val and
// max_val).
type Hardtanh struct {
	activation
	Min, Max float64
}

// NewHardtanh makes a Hardtanh with torch's defaults, -1 and 1.
func NewHardtanh() *Hardtanh { return &Hardtanh{Min: -1, Max: 1} }

// Forward applies Hardtanh; Min above Max is ErrValue.
func (m Hardtanh) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Hardtanh(m.Min, m.Max) }

// ReLU6 is min(max(x, 0), 6) (torch.nn.ReLU6).
type ReLU6 struct{ activation }

// Forward applies ReLU6.
func (ReLU6) Forward(x *lathe.Tensor) *lathe.Tensor { return x.ReLU6() }

// Hardsigmoid is the piecewise-linear sigmoid min(max(x/6 + 1/2, 0), 1)
// (torch.nn.Hardsigmoid).
type Hardsigmoid struct{ activation }

// Forward applies Hardsigmoid.
func (Hardsigmoid) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Hardsigmoid() }

// Hardswish is x·Hardsigmoid(x) (torch.nn.Hardswish).
type Hardswish struct{ activation }

// Forward applies Hardswish.
func (Hardswish) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Hardswish() }

// Mish is x·tanh(softplus(x)) (torch.nn.Mish).
type Mish struct{ activation }

// Forward applies Mish.
func (Mish) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Mish() }

// LogSigmoid is log(sigmoid(x)) (torch.nn.LogSigmoid).
type LogSigmoid struct{ activation }

// Forward applies LogSigmoid.
func (LogSigmoid) Forward(x *lathe.Tensor) *lathe.Tensor { return x.LogSigmoid() }

// Softmax is exp(x)/Σexp(x) along Dim (torch.nn.Softmax). torch's dim=None
// picks a dim from x's rank, a deprecated guess; lathe takes the dim.
type Softmax struct {
	activation
	Dim int
}

// NewSoftmax makes a Softmax along dim (negative from the end).
func NewSoftmax(dim int) *Softmax { return &Softmax{Dim: dim} }

// Forward applies Softmax; a Dim out of range is an error.
func (m Softmax) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Softmax(m.Dim) }

// LogSoftmax is log(Softmax(x)) along Dim, computed stably
// (torch.nn.LogSoftmax; the dim as Softmax's).
type LogSoftmax struct {
	activation
	Dim int
}

// NewLogSoftmax makes a LogSoftmax along dim (negative from the end).
func NewLogSoftmax(dim int) *LogSoftmax { return &LogSoftmax{Dim: dim} }

// Forward applies LogSoftmax.
func (m LogSoftmax) Forward(x *lathe.Tensor) *lathe.Tensor { return x.LogSoftmax(m.Dim) }

// Softmin is Softmax(-x) along Dim (torch.nn.Softmin; the dim as
// Softmax's).
type Softmin struct {
	activation
	Dim int
}

// NewSoftmin makes a Softmin along dim (negative from the end).
func NewSoftmin(dim int) *Softmin { return &Softmin{Dim: dim} }

// Forward applies Softmin.
func (m Softmin) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Softmin(m.Dim) }

// Softshrink is x-Lambda above Lambda, x+Lambda below -Lambda and 0
// between (torch.nn.Softshrink: lambd).
type Softshrink struct {
	activation
	Lambda float64
}

// NewSoftshrink makes a Softshrink with torch's default lambda, 0.5.
func NewSoftshrink() *Softshrink { return &Softshrink{Lambda: 0.5} }

// Forward applies Softshrink; a negative or NaN Lambda is ErrValue.
func (m Softshrink) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Softshrink(m.Lambda) }

// Hardshrink is 0 where |x| ≤ Lambda and x elsewhere
// (torch.nn.Hardshrink: lambd).
type Hardshrink struct {
	activation
	Lambda float64
}

// NewHardshrink makes a Hardshrink with torch's default lambda, 0.5.
func NewHardshrink() *Hardshrink { return &Hardshrink{Lambda: 0.5} }

// Forward applies Hardshrink; a NaN Lambda is ErrValue.
func (m Hardshrink) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Hardshrink(m.Lambda) }

// Tanhshrink is x - tanh(x) (torch.nn.Tanhshrink).
type Tanhshrink struct{ activation }

// Forward applies Tanhshrink.
func (Tanhshrink) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Tanhshrink() }

// Threshold is Value where x ≤ Threshold and x elsewhere
// (torch.nn.Threshold, whose two arguments have no defaults).
type Threshold struct {
	activation
	Threshold, Value float64
}

// NewThreshold makes a Threshold of threshold and value.
func NewThreshold(threshold, value float64) *Threshold {
	return &Threshold{Threshold: threshold, Value: value}
}

// Forward applies Threshold; a NaN threshold or value is ErrValue.
func (m Threshold) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Threshold(m.Threshold, m.Value) }

// GLU is the gated linear unit a·sigmoid(b), a and b the halves of x along
// Dim (torch.nn.GLU).
type GLU struct {
	activation
	Dim int
}

// NewGLU makes a GLU along torch's default dim, -1.
func NewGLU() *GLU { return &GLU{Dim: -1} }

// Forward applies GLU; an odd size along Dim is ErrShape.
func (m GLU) Forward(x *lathe.Tensor) *lathe.Tensor { return x.GLU(m.Dim) }
