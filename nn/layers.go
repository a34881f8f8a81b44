package nn

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Linear is y = x·Wᵀ + b over the last dim of x (torch.nn.Linear). Weight
// has shape [out, in] and Bias [out] (nil without a bias).
type Linear struct {
	Weight, Bias *lathe.Tensor
}

// NewLinear makes a Linear layer with PyTorch's default initialisation:
// kaiming_uniform_(a=√5) for the weight, which is U(-1/√in, 1/√in), and the
// bias from the same range. Values come from lathe's seeded stream, so call
// lathe.Seed first for a reproducible model.
func NewLinear(in, out int, opts ...Option) *Linear {
	o, optErr := layerOptions("Linear", opts)
	if optErr == nil && (in < 0 || out < 0 || (out > 0 && in > math.MaxInt/out)) {
		optErr = nnError("linear", lathe.ErrShape, "", "has in="+strconv.Itoa(in)+", out="+strconv.Itoa(out)+
			", which must be ≥ 0 and make a weight of at most MaxInt elements", "use smaller sizes")
	}
	if optErr != nil {
		err := lathe.Failed(optErr)
		l := &Linear{Weight: err}
		if !o.noBias {
			l.Bias = err
		}
		return l
	}
	bound := 0.0
	if in > 0 {
		bound = 1 / math.Sqrt(float64(in))
	}
	l := &Linear{Weight: newParam(uniform(o.dtype, bound, out, in), o)}
	if !o.noBias {
		l.Bias = newParam(uniform(o.dtype, bound, out), o)
	}
	return l
}

// uniform draws U(-bound, bound) on the cpu. A 16-bit dtype's values are
// torch's uniform_(-bound, bound) in it (TransformationHelper.h's
// uniform_real): x, a point of Rand's grid of dt, then x·2B - B with B
// the bound rounded to dt, computed in float32, where it is exact, and
// rounded to dt once, so that each of the grid's points is equally
// likely. Computing in dt rounded x·2b and then the difference: grid
// points merged, some drawn twice as often and others never.
func uniform(dt lathe.DType, bound float64, shape ...int) *lathe.Tensor {
	x := lathe.Rand(lathe.CPU, dt, shape...)
	if dt != lathe.Float16 && dt != lathe.BFloat16 {
		return x.MulScalar(2 * bound).SubScalar(bound)
	}
	b, err := lathe.Scalar(lathe.CPU, bound).Cast(dt).Item()
	if err != nil {
		return lathe.Failed(err)
	}
	return x.Cast(lathe.Float32).MulScalar(2 * b).SubScalar(b).Cast(dt)
}

// normal draws N(0, std²) on the cpu, rounded to dt once: a 16-bit
// dtype's values are RandN's float32 draws (the same draws that RandN of
// dt rounds) times std, rounded, as torch's normal_ rounds its product.
func normal(dt lathe.DType, std float64, shape ...int) *lathe.Tensor {
	if dt != lathe.Float16 && dt != lathe.BFloat16 {
		return lathe.RandN(lathe.CPU, dt, shape...).MulScalar(std)
	}
	return lathe.RandN(lathe.CPU, lathe.Float32, shape...).MulScalar(std).Cast(dt)
}

// Forward computes x·Wᵀ + b; x is [..., in].
func (l *Linear) Forward(x *lathe.Tensor) *lathe.Tensor {
	return x.Linear(l.Weight, l.Bias)
}

// Parameters lists "weight" and, if there is one, "bias".
func (l *Linear) Parameters() []Param {
	ps := []Param{{Name: "weight", T: l.Weight}}
	if l.Bias != nil {
		ps = append(ps, Param{Name: "bias", T: l.Bias})
	}
	return ps
}

// To moves the parameters to dev.
func (l *Linear) To(dev lathe.Device) error { return moveParams(l.Parameters(), dev) }

// Train does nothing: Linear acts the same in both modes.
func (l *Linear) Train(bool) {}

// Embedding maps integer indices to rows of Weight ([num, dim]),
// as torch.nn.Embedding.
type Embedding struct {
	Weight *lathe.Tensor
	// Padded makes row PaddingIdx (in [0, num)) the padding row (torch's
	// padding_idx): it is looked up as it is, but its gradient is always
	// zero, so training leaves it as it was (NewEmbedding makes it zeros).
	Padded     bool
	PaddingIdx int
	// MaxNorm, when not 0, renormalises each row that a Forward looks up
	// and whose NormType-norm exceeds it to norm MaxNorm, in Weight,
	// before the lookup (torch's max_norm). NormType 0 is the 2-norm.
	// Such a Forward is a step of the module's state, like a training-mode
	// BatchNorm2d's: calls from several goroutines at once race.
	MaxNorm, NormType float64
	// ScaleGradByFreq scales the gradient each row of Weight gets from a
	// Forward by 1 over the number of times its index appears in that
	// Forward's indices (torch's scale_grad_by_freq). The indices are
	// read to the host to count them.
	ScaleGradByFreq bool
}

// NewEmbedding makes an Embedding of num rows of size dim, initialised
// N(0, 1) as PyTorch does, with the padding row, if any, zeros. It takes
// PaddingIdx, MaxNorm, NormType and ScaleGradByFreq (torch's padding_idx,
// max_norm, norm_type and scale_grad_by_freq).
func NewEmbedding(num, dim int, opts ...Option) *Embedding {
	o, err := layerOptions("Embedding", opts)
	switch {
	case err != nil:
	case num < 0 || dim < 0:
		err = nnError("embedding", lathe.ErrShape, "", "has num_embeddings="+strconv.Itoa(num)+", embedding_dim="+strconv.Itoa(dim)+
			", which must be ≥ 0", "use sizes ≥ 0")
	case o.paddingIdxSet && (o.paddingIdx < -num || o.paddingIdx >= num):
		// torch: "Padding_idx must be within num_embeddings"
		err = nnError("embedding", lathe.ErrValue, "padding_idx", "is "+strconv.Itoa(o.paddingIdx)+" for "+strconv.Itoa(num)+" embeddings",
			"give a row in [-"+strconv.Itoa(num)+", "+strconv.Itoa(num)+"), negative ones counting from the end")
	case o.maxNormSet && !(o.maxNorm > 0):
		err = nnError("embedding", lathe.ErrValue, "max_norm", "is "+strconv.FormatFloat(o.maxNorm, 'g', -1, 64), "give a positive finite max_norm")
	case o.normTypeSet && !(o.normType > 0):
		err = nnError("embedding", lathe.ErrValue, "norm_type", "is "+strconv.FormatFloat(o.normType, 'g', -1, 64),
			"give a positive p (math.Inf(1) for the max norm)")
	}
	if o.paddingIdx < 0 {
		o.paddingIdx += num // torch: a negative padding_idx counts from the end
	}
	e := &Embedding{Padded: o.paddingIdxSet, PaddingIdx: o.paddingIdx, MaxNorm: o.maxNorm, NormType: o.normType,
		ScaleGradByFreq: o.scaleGradByFreq}
	if err == nil {
		err = e.checkOptions(num)
	}
	if err != nil {
		e.Weight = lathe.Failed(err)
		return e
	}
	e.Weight = embeddingWeight(num, dim, e.Padded, e.PaddingIdx, o)
	return e
}

// embeddingWeight is Embedding's and EmbeddingBag's initial weight, as
// torch's reset_parameters: normal_, then the padding row (if padded)
// zeroed.
func embeddingWeight(num, dim int, padded bool, paddingIdx int, o options) *lathe.Tensor {
	w := lathe.RandN(lathe.CPU, o.dtype, num, dim)
	if padded {
		w = w.IndexPut([]*lathe.Tensor{lathe.FromSlice(lathe.CPU, []int64{int64(paddingIdx)}, 1)}, lathe.Zeros(lathe.CPU, o.dtype, dim), false)
	}
	return newParam(w, o)
}

// checkOptions checks the padding row and the renormalisation's norm for
// an Embedding of num rows.
func (e *Embedding) checkOptions(num int) *lathe.Error {
	switch {
	case e.Padded && (e.PaddingIdx < 0 || e.PaddingIdx >= num):
		return nnError("embedding", lathe.ErrValue, "padding_idx", "is "+strconv.Itoa(e.PaddingIdx)+" for "+strconv.Itoa(num)+" embeddings",
			"give a row in [0, "+strconv.Itoa(num)+")")
	case !(e.MaxNorm >= 0) || math.IsInf(e.MaxNorm, 1):
		return nnError("embedding", lathe.ErrValue, "max_norm", "is "+strconv.FormatFloat(e.MaxNorm, 'g', -1, 64),
			"give a positive finite max_norm, or 0 for none")
	case !(e.NormType >= 0):
		return nnError("embedding", lathe.ErrValue, "norm_type", "is "+strconv.FormatFloat(e.NormType, 'g', -1, 64),
			"give a positive p (math.Inf(1) for the max norm), or 0 for the 2-norm")
	}
	return nil
}

// Forward looks up the rows for indices x (Int64 or Int32, any shape); the
// result has shape x.shape + [dim]. With MaxNorm it first renormalises the
// rows x names, as torch's embedding_renorm_: Weight is rebound (keeping
// its gradient), as an optimizer step rebinds it.
func (e *Embedding) Forward(x *lathe.Tensor) *lathe.Tensor {
	if err := e.Weight.CheckArg("embedding", "weight"); err != nil {
		return lathe.Failed(err)
	}
	if e.Weight.Rank() != 2 { // the lookup names it
		return lathe.Embedding(x, e.Weight)
	}
	if err := e.checkOptions(e.Weight.Dim(0)); err != nil {
		return lathe.Failed(err)
	}
	if e.MaxNorm != 0 {
		if err := e.renorm(x); err != nil {
			return lathe.Failed(err)
		}
	}
	y := e.lookup(x)
	if !e.Padded || y.Err() != nil {
		return y
	}
	// torch's embedding_backward leaves out the padding row's gradient:
	// where x is the padding index the output is the row, detached.
	var ne, keep, fixed *lathe.Tensor
	lathe.NoGrad(func() {
		ne = x.NeScalar(float64(e.PaddingIdx))
		keep, fixed = ne.Unsqueeze(-1), y.Detach()
	})
	out := lathe.Where(keep, y, fixed)
	lathe.ReleaseWithGraph(out, ne, keep, fixed, y)
	return out
}

// lookup is lathe.Embedding(x, Weight), whose gradient, with
// ScaleGradByFreq, is scaled by 1 over each index's count in x.
func (e *Embedding) lookup(x *lathe.Tensor) *lathe.Tensor {
	if !e.ScaleGradByFreq || x.Err() != nil || !e.Weight.RequiresGrad() ||
		(x.DType() != lathe.Int64 && x.DType() != lathe.Int32) {
		return lathe.Embedding(x, e.Weight)
	}
	ids, err := hostInts(x)
	if err != nil {
		return lathe.Failed(wrapErr("embedding", err))
	}
	s := freqScale(ids, e.Weight.DType(), e.Weight.Device())
	out := lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		w, ix, s := a[0], a[1], a[2]
		y := lathe.Embedding(ix, w)
		if err := scaleGrad(y, s.Reshape(append(ix.Shape(), 1)...)); err != nil {
			return lathe.Failed(err)
		}
		return y.Reshape(y.Shape()...) // y's hook runs before any of the result's
	}, e.Weight, x, s)
	lathe.ReleaseWithGraph(out, s)
	return out
}

// renorm scales each row of Weight that x names and whose norm exceeds
// MaxNorm by MaxNorm/(norm+1e-7), as torch's embedding_renorm_, outside
// the tape. Indices that the lookup will refuse (a dtype other than Int64
// or Int32, a row out of range) leave Weight alone, for the lookup to
// report.
func (e *Embedding) renorm(x *lathe.Tensor) error {
	return renormRows(e.Weight, x, e.MaxNorm, e.NormType)
}

// renormRows is Embedding's and EmbeddingBag's max_norm: it scales each
// row of w that x names and whose normType-norm (0: the 2-norm) exceeds
// maxNorm by maxNorm/(norm+1e-7), as torch's embedding_renorm_, and
// rebinds w (keeping its gradient).
func renormRows(w, x *lathe.Tensor, maxNorm, normType float64) error {
	if x.Err() != nil || (x.DType() != lathe.Int64 && x.DType() != lathe.Int32) {
		return nil
	}
	// Every tensor made here is a temporary (next goes to rebind): left
	// to the collector, each step took new device memory for them.
	var temps []*lathe.Tensor
	defer func() {
		for _, t := range temps {
			t.Release()
		}
	}()
	tmp := func(t *lathe.Tensor) *lathe.Tensor {
		temps = append(temps, t)
		return t
	}
	var ids []int64
	var err error
	lathe.NoGrad(func() { ids, err = tmp(tmp(x.To(lathe.CPU)).Cast(lathe.Int64)).Int64s() })
	if err != nil {
		return err
	}
	num := int64(w.Dim(0))
	seen := map[int64]bool{}
	var rows []int64
	for _, i := range ids {
		if i < 0 || i >= num {
			return nil
		}
		if !seen[i] {
			seen[i] = true
			rows = append(rows, i)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	slices.Sort(rows)
	p := normType
	if p == 0 {
		p = 2
	}
	var idx, picked, norms *lathe.Tensor
	lathe.NoGrad(func() {
		idx = tmp(tmp(lathe.FromSlice(lathe.CPU, rows, len(rows))).To(w.Device()))
		picked = tmp(tmp(w.Detach()).IndexSelect(0, idx))
		norms = tmp(picked.Norm(p, 1))
	})
	var ns []float64
	lathe.NoGrad(func() { ns, err = tmp(tmp(norms.To(lathe.CPU)).Cast(lathe.Float64)).Float64s() })
	if err != nil {
		return err
	}
	scale := make([]float64, len(ns))
	over := false
	for i, n := range ns {
		scale[i] = 1
		if n > maxNorm {
			scale[i], over = maxNorm/(n+1e-7), true
		}
	}
	if !over {
		return nil
	}
	var next *lathe.Tensor
	lathe.NoGrad(func() {
		s := tmp(tmp(tmp(lathe.FromSlice(lathe.CPU, scale, len(scale), 1)).Cast(w.DType())).To(w.Device()))
		next = tmp(w.Detach()).IndexPut([]*lathe.Tensor{idx}, tmp(picked.Mul(s)), false)
	})
	if err := next.Err(); err != nil {
		return err
	}
	return rebind(w, next, w.Grad())
}

// Parameters lists "weight".
func (e *Embedding) Parameters() []Param { return []Param{{Name: "weight", T: e.Weight}} }

// To moves the weight to dev.
func (e *Embedding) To(dev lathe.Device) error { return moveParams(e.Parameters(), dev) }

// Train does nothing: Embedding acts the same in both modes.
func (e *Embedding) Train(bool) {}

// LayerNorm normalises over the last dims of its input and applies an
// elementwise affine map (torch.nn.LayerNorm); with NoAffine (torch's
// elementwise_affine=False) Weight and Bias are nil and there is none.
type LayerNorm struct {
	Shape        []int
	Eps          float64
	Weight, Bias *lathe.Tensor // Shape: ones and zeros at first; nil with NoAffine
}

// NewLayerNorm makes a LayerNorm over trailing dims of the given shape, with
// weight ones, bias zeros and PyTorch's eps 1e-5 (set Eps on the result for
// another).
func NewLayerNorm(shape []int, opts ...Option) *LayerNorm {
	o, err := layerOptions("LayerNorm", opts)
	if err != nil {
		f := lathe.Failed(err)
		return &LayerNorm{Shape: append([]int(nil), shape...), Eps: 1e-5, Weight: f, Bias: f}
	}
	n := &LayerNorm{Shape: append([]int(nil), shape...), Eps: 1e-5}
	if o.affine || !o.affineSet {
		n.Weight = newParam(lathe.Ones(lathe.CPU, o.dtype, shape...), o)
		n.Bias = newParam(lathe.Zeros(lathe.CPU, o.dtype, shape...), o)
	}
	return n
}

// Forward normalises x, whose last dims must be Shape.
func (n *LayerNorm) Forward(x *lathe.Tensor) *lathe.Tensor {
	return x.LayerNorm(n.Shape, n.Weight, n.Bias, n.Eps)
}

// Parameters lists "weight" and "bias", those the layer has.
func (n *LayerNorm) Parameters() []Param {
	return present(Param{Name: "weight", T: n.Weight}, Param{Name: "bias", T: n.Bias})
}

// To moves the parameters to dev.
func (n *LayerNorm) To(dev lathe.Device) error { return moveParams(n.Parameters(), dev) }

// Train does nothing: LayerNorm acts the same in both modes.
func (n *LayerNorm) Train(bool) {}

// Dropout zeroes elements with probability P in training mode and scales the
// rest by 1/(1-P); in evaluation mode it passes x through (torch.nn.Dropout).
type Dropout struct {
	P    float64
	Eval bool // true after Train(false)
}

// NewDropout makes a Dropout layer, in training mode.
func NewDropout(p float64) *Dropout { return &Dropout{P: p} }

// Forward applies dropout if the layer is in training mode.
func (d *Dropout) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Dropout(d.P, !d.Eval) }

// Parameters is empty.
func (d *Dropout) Parameters() []Param { return nil }

// To does nothing: Dropout has no parameters.
func (d *Dropout) To(lathe.Device) error { return nil }

// Train switches between dropping (true) and passing through (false).
func (d *Dropout) Train(on bool) { d.Eval = !on }

// activation is the parameterless part of the activation modules.
type activation struct{}

// Parameters is empty.
func (activation) Parameters() []Param { return nil }

// To does nothing: an activation has no parameters.
func (activation) To(lathe.Device) error { return nil }

// Train does nothing: an activation acts the same in both modes.
func (activation) Train(bool) {}

// parameterless is the bookkeeping of a layer without parameters that
// takes options (the poolings, Upsample). A constructor that refused an
// option sets failed; the layer then lists it as the parameter "options",
// so that Err, Save and the optimizers report it as they report a failed
// parameter of any layer, and Forward returns the error.
type parameterless struct {
	activation
	failed *lathe.Tensor
}

func refused(err *lathe.Error) parameterless { return parameterless{failed: lathe.Failed(err)} }

// Parameters is empty, or the failed "options" of a refused option.
func (p parameterless) Parameters() []Param {
	if p.failed == nil {
		return nil
	}
	return []Param{{Name: "options", T: p.failed}}
}

// fail is a fresh failed result with the refusal's error.
func (p parameterless) fail() *lathe.Tensor { return lathe.Failed(p.failed.Err()) }

// ReLU is max(x, 0) as a module.
type ReLU struct{ activation }

// Forward applies ReLU.
func (ReLU) Forward(x *lathe.Tensor) *lathe.Tensor { return x.ReLU() }

// GELU is x·Φ(x) as a module; Tanh selects the tanh approximation
// (torch.nn.GELU(approximate="tanh")).
type GELU struct {
	activation
	Tanh bool
}

// Forward applies GELU.
func (g GELU) Forward(x *lathe.Tensor) *lathe.Tensor {
	if g.Tanh {
		return x.GELUTanh()
	}
	return x.GELU()
}

// Tanh is the hyperbolic tangent as a module.
type Tanh struct{ activation }

// Forward applies tanh.
func (Tanh) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Tanh() }

// Sigmoid is 1/(1+exp(-x)) as a module.
type Sigmoid struct{ activation }

// Forward applies the sigmoid.
func (Sigmoid) Forward(x *lathe.Tensor) *lathe.Tensor { return x.Sigmoid() }

// SiLU is x·sigmoid(x) as a module.
type SiLU struct{ activation }

// Forward applies SiLU.
func (SiLU) Forward(x *lathe.Tensor) *lathe.Tensor { return x.SiLU() }

// LeakyReLU is max(x, 0) + Slope·min(x, 0) as a module (torch.nn.LeakyReLU;
// PyTorch's default slope is 0.01).
type LeakyReLU struct {
	activation
	Slope float64
}

// Forward applies the leaky ReLU.
func (l LeakyReLU) Forward(x *lathe.Tensor) *lathe.Tensor { return x.LeakyReLU(l.Slope) }

// PReLU is max(x, 0) + a·min(x, 0) with a learned slope a (Weight)
// per channel, or one for all (torch.nn.PReLU). The channel is dim 1 of x;
// an input of fewer than 2 dims has none, so it takes only a single slope,
// as torch 1.13's does.
type PReLU struct {
	Weight *lathe.Tensor
}

// NewPReLU makes a PReLU with numParameters slopes (torch's
// num_parameters: 1, or the channel count), each 0.25, or v with
// Init(v). Options: Init, WithDType, OnDevice.
func NewPReLU(numParameters int, opts ...Option) *PReLU {
	o, err := layerOptions("PReLU", opts)
	if err == nil && numParameters < 1 {
		err = nnError("prelu", lathe.ErrValue, "num_parameters", "is "+strconv.Itoa(numParameters), "use 1, or the channel count")
	}
	if err != nil {
		return &PReLU{Weight: lathe.Failed(err)}
	}
	init := 0.25
	if o.initSet {
		init = o.init
	}
	return &PReLU{Weight: newParam(lathe.Full(lathe.CPU, o.dtype, init, numParameters), o)}
}

// Init sets PReLU's initial slope (torch's init; 0.25 by default).
func Init(v float64) Option {
	return Option{"init", func(o *options) { o.init, o.initSet = v, true }}
}

// Forward is x where x > 0 and Weight·x elsewhere, the slopes broadcast
// over dim 1 (torch.prelu, whose gradient this has: the slope's, at 0 as
// below 0). x must have Weight's dtype, and as many channels as Weight
// has slopes unless it has one.
func (p *PReLU) Forward(x *lathe.Tensor) *lathe.Tensor {
	const op = "prelu"
	if err := x.CheckArg(op, "x"); err != nil {
		return lathe.Failed(err)
	}
	if err := p.Weight.CheckArg(op, "weight"); err != nil {
		return lathe.Failed(err)
	}
	xs, ws := x.Shape(), p.Weight.Shape()
	if len(ws) != 1 {
		return lathe.Failed(nnError(op, lathe.ErrShape, "weight", "has shape "+shapeString(ws)+" but must be 1-d, one slope per channel",
			"give it shape [1] or [channels]"))
	}
	if x.DType() != p.Weight.DType() {
		return lathe.Failed(nnError(op, lathe.ErrDType, "x", "is "+x.DType().String()+" but the weight is "+p.Weight.DType().String(),
			"cast it with .Cast("+p.Weight.DType().GoString()+")"))
	}
	if dev := p.Weight.Device(); x.Device() != dev {
		// The slopes' product named mul's "rhs".
		return lathe.Failed(nnError(op, lathe.ErrDevice, "x", "is on "+x.Device().String()+" but the layer's weight is on "+dev.String(),
			"move x with To("+dev.String()+"), or the layer with To("+x.Device().String()+")"))
	}
	shape := make([]int, len(xs))
	for i := range shape {
		shape[i] = 1
	}
	if n := ws[0]; n != 1 {
		if len(xs) < 2 || xs[1] != n {
			return lathe.Failed(nnError(op, lathe.ErrShape, "x", "has shape "+shapeString(xs)+" but the weight has "+strconv.Itoa(n)+
				" slopes, which must match x's channels (dim 1; an x of fewer than 2 dims has 1)", "give x "+strconv.Itoa(n)+" channels in dim 1, or use one slope"))
		}
		shape[1] = n
	}
	w := p.Weight.Reshape(shape...)
	pos, scaled := x.GtScalar(0), x.Mul(w)
	out := lathe.Where(pos, x, scaled)
	// w, a view, would keep the weight's storage from the pool once a
	// step has replaced it.
	lathe.ReleaseWithGraph(out, w, pos, scaled)
	return out
}

// Parameters lists "weight".
func (p *PReLU) Parameters() []Param { return []Param{{Name: "weight", T: p.Weight}} }

// To moves the weight to dev.
func (p *PReLU) To(dev lathe.Device) error { return moveParams(p.Parameters(), dev) }

// Train does nothing: PReLU acts the same in both modes.
func (p *PReLU) Train(bool) {}

// Flatten keeps the batch dim and flattens the rest, [N, C, H, W] to
// [N, C·H·W], as torch.nn.Flatten() does; it sits between convolutional
// and linear layers. NewFlatten makes one of other dims (torch's
// start_dim and end_dim).
type Flatten struct {
	activation
	// start and end are the dims NewFlatten gave; set is false in
	// Flatten{}, torch's defaults 1 and -1.
	start, end int
	set        bool
}

// NewFlatten makes a Flatten of the dims startDim to endDim, both included
// and either negative from the end, as torch.nn.Flatten(start_dim,
// end_dim): NewFlatten(0, -1) flattens all to one dim (a 0-d x to [1]).
// Forward fails with ErrValue where x has no such dims or startDim comes
// after endDim.
func NewFlatten(startDim, endDim int) *Flatten {
	return &Flatten{start: startDim, end: endDim, set: true}
}

// Forward flattens every dim but the first (or NewFlatten's dims); a 0-d
// or 1-d x has no dim after the batch's to flatten and fails with
// ErrShape, as in PyTorch (start_dim 1 out of range). An empty batch keeps
// its feature size ([0, 2, 3] gives [0, 6]).
func (f Flatten) Forward(x *lathe.Tensor) *lathe.Tensor {
	if err := x.CheckArg("flatten", "x"); err != nil {
		return lathe.Failed(err)
	}
	if f.set {
		return x.Flatten(f.start, f.end)
	}
	shape := x.Shape()
	if len(shape) < 2 {
		return lathe.Failed(nnError("flatten", lathe.ErrShape, "x", "has shape "+shapeString(shape)+", with no dim after the batch dim to flatten",
			"give it a batch dim and at least one more (Reshape(1, -1) for a single sample)"))
	}
	// The product, not -1: Reshape cannot infer a size from 0 elements.
	n := 1
	for _, d := range shape[1:] {
		n *= d
	}
	return x.Reshape(shape[0], n)
}

// Identity is torch.nn.Identity: its output is its input (a view of x,
// which the caller releases apart from x). A placeholder where a model
// leaves out a layer, so that the state-dict names of the rest stay.
type Identity struct{ activation }

// Forward returns x, as a view of its storage.
func (Identity) Forward(x *lathe.Tensor) *lathe.Tensor {
	if err := x.CheckArg("identity", "x"); err != nil {
		return lathe.Failed(err)
	}
	return x.View(x.Shape()...)
}

// Unflatten is torch.nn.Unflatten: it splits dim Dim of x (negative from
// the end) into Sizes, whose product must be that dim's size; one of Sizes
// may be -1, inferred from the others.
type Unflatten struct {
	activation
	Dim   int
	Sizes []int
}

// NewUnflatten makes an Unflatten of dim into sizes, torch's
// nn.Unflatten(dim, unflattened_size).
func NewUnflatten(dim int, sizes ...int) *Unflatten {
	return &Unflatten{Dim: dim, Sizes: slices.Clone(sizes)}
}

// Forward returns a view of x (a copy where its strides do not allow one)
// with dim Dim split into Sizes. An x without that dim, no sizes, sizes
// below -1, more than one -1, or sizes that do not multiply up to the
// dim's size (or leave -1 ambiguous, where they multiply to 0) are
// ErrShape or ErrValue errors, as torch's.
func (u *Unflatten) Forward(x *lathe.Tensor) *lathe.Tensor {
	const op = "unflatten"
	if u == nil {
		return lathe.Failed(nilModule(op, "u"))
	}
	if err := x.CheckArg(op, "x"); err != nil {
		return lathe.Failed(err)
	}
	shape := x.Shape()
	d := u.Dim
	if d < 0 {
		d += len(shape)
	}
	if d < 0 || d >= len(shape) {
		return lathe.Failed(nnError(op, lathe.ErrShape, "Dim", "is "+strconv.Itoa(u.Dim)+" but x has shape "+shapeString(shape),
			"give a dim of x, in [-rank, rank)"))
	}
	if len(u.Sizes) == 0 {
		return lathe.Failed(nnError(op, lathe.ErrValue, "Sizes", "is empty", "give the sizes that dim "+strconv.Itoa(u.Dim)+" splits into"))
	}
	known, infer := 1, -1
	for i, n := range u.Sizes {
		switch {
		case n == -1 && infer < 0:
			infer = i
		case n == -1:
			return lathe.Failed(nnError(op, lathe.ErrValue, "Sizes", "is "+shapeString(u.Sizes)+", with more than one -1", "leave at most one size to infer"))
		case n < 0:
			return lathe.Failed(nnError(op, lathe.ErrValue, "Sizes", "is "+shapeString(u.Sizes)+", with a negative size", "give sizes ≥ 0, or -1 for one to infer"))
		case known > 0 && n > math.MaxInt/known:
			return lathe.Failed(nnError(op, lathe.ErrValue, "Sizes", "is "+shapeString(u.Sizes)+", whose product overflows", "give the sizes of dim "+strconv.Itoa(u.Dim)))
		default:
			known *= n
		}
	}
	sizes := slices.Clone(u.Sizes)
	switch {
	case infer >= 0 && known == 0:
		return lathe.Failed(nnError(op, lathe.ErrValue, "Sizes", "is "+shapeString(u.Sizes)+": with a 0 among them the -1 could be any size",
			"give every size"))
	case infer >= 0 && shape[d]%known == 0:
		sizes[infer] = shape[d] / known
	case infer < 0 && known == shape[d]:
	default:
		return lathe.Failed(nnError(op, lathe.ErrShape, "Sizes", "is "+shapeString(u.Sizes)+", which does not multiply up to the size of dim "+
			strconv.Itoa(u.Dim)+" of x "+shapeString(shape), "give sizes whose product is "+strconv.Itoa(shape[d])))
	}
	out := append(append(slices.Clone(shape[:d]), sizes...), shape[d+1:]...)
	return x.Reshape(out...)
}
