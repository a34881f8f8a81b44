package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The samplers of torch's distributions: Bernoulli, Poisson and Normal,
// whose parameters are tensors, and Exponential, Geometric, LogNormal and
// Cauchy (random_dists.go), whose parameters are numbers. Each reads its
// parameters to the host, checks them, draws its values there from the
// stream that Seed resets (with drawUniform and drawNormal, the draws of
// Rand and RandN), computes in float64, rounds once to the result's dtype
// and uploads: the same values on every device, and a call refused for
// a parameter draws nothing. The results leave the tape, as torch's
// samples do (torch.normal's gradients with respect to mean and std are
// zeros in torch 1.13: no reparameterisation).

// drawValues makes a tensor of dt and shape on dev whose n values draw
// computes from the stream, in float64, with rngMu held from its first
// draw to the end of the upload (so that a call's values are one unbroken
// run of the stream, as drawAndUpload's). Where draw returns an error (a
// value that dt cannot hold) or the upload fails, the stream is put back:
// a failed call draws nothing.
func drawValues(op string, dev Device, dt DType, shape []int, draw func(out []float64) error) *Tensor {
	n := dispatch.Numel(shape)
	if err := checkHost(op, "shape", n, 8+dt.Size()); err != nil { // 8: the float64 values made first
		return failed(err)
	}
	out := make([]float64, n)
	rngMu.Lock()
	defer rngMu.Unlock()
	beginDraw()
	p := pcg()
	saved := *p
	if err := draw(out); err != nil {
		*p = saved
		return failed(err)
	}
	t, err := dispatch.Upload(dev, ops.HostData(dt, out), dt, shape)
	if err != nil {
		*p = saved
		return failed(located(err, op))
	}
	return wrap(t)
}

// paramValues is the values of x, a float tensor of a sampler's
// parameters (arg), widened to float64 on the host, each checked by ok
// (which returns what is wrong with a value, or ""): a bad value is an
// ErrValue naming its element and fix.
func paramValues(op, arg string, x *Tensor, ok func(v float64) string, fix string) ([]float64, error) {
	if err := x.CheckArg(op, arg); err != nil {
		return nil, err
	}
	if !x.t.DType.IsFloat() {
		return nil, errorf(op, ErrDType, arg, "is "+x.t.DType.String()+", but "+op+" takes float parameters (as torch's)",
			"cast it with .Cast(lathe.Float32)")
	}
	n := dispatch.Numel(x.t.Shape)
	if err := checkHost(op, arg, n, 8); err != nil {
		return nil, err
	}
	data, done, err := x.lend(op, arg)
	if err != nil {
		return nil, err
	}
	defer done()
	var v []float64
	switch d := data.(type) {
	case []float64:
		v = append([]float64(nil), d...)
	case []float32:
		v = widen(d)
	default:
		v = widen(halfFloat32s(d))
	}
	for i, x := range v {
		if what := ok(x); what != "" {
			return nil, errorf(op, ErrValue, arg, "has "+ftoa(x)+" at element "+strconv.Itoa(i)+": "+what, fix)
		}
	}
	return v, nil
}

// Bernoulli draws 0 or 1 for each element of p, 1 with the element's
// probability, as torch.bernoulli(p): the result has p's shape, dtype (a
// float one) and device. Each probability must lie in [0, 1] (NaN is
// refused), as torch checks, else ErrValue, and nothing is drawn. Float16
// and bfloat16 are taken (as torch's cuda kernels take them).
func Bernoulli(p *Tensor) *Tensor {
	const op = "bernoulli"
	probs, err := paramValues(op, "p", p, probability, "give probabilities in [0, 1], e.g. with Sigmoid of logits")
	if err != nil {
		return failed(err)
	}
	return drawValues(op, p.t.Device, p.t.DType, p.t.Shape, func(out []float64) error {
		drawUniform(out)
		for i, u := range out {
			out[i] = bernoulliOf(u, probs[i])
		}
		return nil
	})
}

// BernoulliLike draws 0 or 1 for each element of a tensor of x's shape,
// dtype (any, Bool and the integers too) and device, 1 with probability
// p, as torch.bernoulli(x, p) (x's values are not read). p outside [0, 1]
// or NaN is ErrValue.
func BernoulliLike(x *Tensor, p float64) *Tensor {
	const op = "bernoulli_like"
	if err := x.CheckArg(op, "x"); err != nil {
		return failed(err)
	}
	if what := probability(p); what != "" {
		return failed(errorf(op, ErrValue, "p", "is "+ftoa(p)+": "+what, "give a probability in [0, 1]"))
	}
	return drawValues(op, x.t.Device, x.t.DType, x.t.Shape, func(out []float64) error {
		drawUniform(out)
		for i, u := range out {
			out[i] = bernoulliOf(u, p)
		}
		return nil
	})
}

// bernoulliOf is 1 where the uniform u in [0, 1) falls below p: never for
// p = 0, always for p = 1.
func bernoulliOf(u, p float64) float64 {
	if u < p {
		return 1
	}
	return 0
}

func probability(p float64) string {
	if !(p >= 0 && p <= 1) {
		return "probabilities lie in [0, 1]"
	}
	return ""
}

// poissonSmall is the rate below which Poisson multiplies uniforms
// (Knuth's method, exact, about rate+1 draws a value); from it on, it
// uses transformed rejection, as torch and numpy do.
const poissonSmall = 10

// Poisson draws a count for each element of rates from the Poisson
// distribution of that rate, as torch.poisson(rates): the result has
// rates' shape, dtype (a float one) and device. Below a rate of 10 the
// counts come from Knuth's multiplication of uniforms; from 10 on from
// Hörmann's transformed rejection with squeeze (PTRS, "The transformed
// rejection method for generating Poisson random variables", 1993, as
// numpy's random_poisson_ptrs and torch's sampler): both exact. A rate
// that is negative, NaN or infinite is ErrValue (torch refuses the first
// two and returns garbage for +Inf); a rate of 0 gives 0.
func Poisson(rates *Tensor) *Tensor {
	const op = "poisson"
	lam, err := paramValues(op, "rates", rates, func(v float64) string {
		if !(v >= 0) || math.IsInf(v, 1) {
			return "rates are finite and ≥ 0"
		}
		return ""
	}, "give finite rates ≥ 0")
	if err != nil {
		return failed(err)
	}
	return drawValues(op, rates.t.Device, rates.t.DType, rates.t.Shape, func(out []float64) error {
		r := rng()
		for i, l := range lam {
			switch {
			case l == 0:
				out[i] = 0
			case l < poissonSmall:
				out[i] = poissonKnuth(r.Float64, l)
			default:
				out[i] = poissonPTRS(r.Float64, l)
			}
		}
		return nil
	})
}

// poissonKnuth counts the uniforms whose running product stays above
// exp(-lam): Poisson(lam) exactly (Knuth, TAOCP vol. 2, 3.4.1).
func poissonKnuth(uniform func() float64, lam float64) float64 {
	limit := math.Exp(-lam)
	k, prod := 0.0, uniform()
	for prod > limit {
		k++
		prod *= uniform()
	}
	return k
}

// poissonPTRS is Hörmann's PTRS for lam ≥ 10, as numpy's
// random_poisson_ptrs writes it.
func poissonPTRS(uniform func() float64, lam float64) float64 {
	slam, loglam := math.Sqrt(lam), math.Log(lam)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	invalpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	for {
		u := uniform() - 0.5
		v := uniform()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + lam + 0.43)
		if us >= 0.07 && v <= vr {
			return k
		}
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		lg, _ := math.Lgamma(k + 1)
		// log(v) of v = 0 is -Inf, which accepts, as numpy's does.
		if math.Log(v)+math.Log(invalpha)-math.Log(a/(us*us)+b) <= -lam+k*loglam-lg {
			return k
		}
	}
}

// Normal draws a value for each element of the broadcast of mean and std
// from the normal distribution of that mean and standard deviation, as
// torch.normal(mean, std): mean + std·z for z the standard normal draws
// that RandN makes (so Normal of zeros and ones gives RandN's values).
// The result has the broadcast shape, mean's dtype (as torch's) and
// device; both are float tensors on one device. A std < 0 or NaN, and a
// NaN mean, are ErrValue (torch refuses the first and returns NaN for
// the others); a std of 0 gives mean. No gradient flows to mean or std
// (torch 1.13 gives them zero gradients: the draw is not
// reparameterised; write mean.Add(std.Mul(RandNLike(std))) for one that
// is).
func Normal(mean, std *Tensor) *Tensor {
	const op = "normal"
	notNaN := func(v float64) string {
		if math.IsNaN(v) {
			return "a mean is a number"
		}
		return ""
	}
	m, err := paramValues(op, "mean", mean, notNaN, "give means that are not NaN")
	if err != nil {
		return failed(err)
	}
	s, err := paramValues(op, "std", std, func(v float64) string {
		if !(v >= 0) {
			return "standard deviations are ≥ 0"
		}
		return ""
	}, "give standard deviations ≥ 0, e.g. with Exp or Softplus of a raw parameter")
	if err != nil {
		return failed(err)
	}
	if std.t.Device != mean.t.Device {
		return failed(errorf(op, ErrDevice, "std", "is on "+std.t.Device.String()+" but mean is on "+mean.t.Device.String(),
			"move it with .To("+mean.t.Device.String()+")"))
	}
	shape, ok := ops.BroadcastShapes(mean.t.Shape, std.t.Shape)
	if !ok {
		return failed(errorf(op, ErrShape, "std", "has shape "+dispatch.FormatShape(std.t.Shape)+", which does not broadcast with mean's "+
			dispatch.FormatShape(mean.t.Shape), "give shapes whose sizes match or are 1, aligned from the right"))
	}
	if _, ok := dispatch.CheckedNumel(shape); !ok {
		return failed(located(dispatch.ShapeError("std", shape), op))
	}
	return drawValues(op, mean.t.Device, mean.t.DType, shape, func(out []float64) error {
		drawNormal(out)
		mi, si := broadcastOffsets(mean.t.Shape, shape), broadcastOffsets(std.t.Shape, shape)
		for i, z := range out {
			out[i] = m[mi(i)] + s[si(i)]*z
		}
		return nil
	})
}

// broadcastOffsets maps the row-major index of an element of out to that
// of the element of a tensor of shape (which broadcasts to out) it comes
// from.
func broadcastOffsets(shape, out []int) func(int) int {
	if dispatch.Numel(shape) == dispatch.Numel(out) {
		return func(i int) int { return i }
	}
	lead := len(out) - len(shape)
	strides := make([]int, len(out)) // shape's strides in out's dims, 0 where broadcast
	for d, s := len(shape)-1, 1; d >= 0; d-- {
		if shape[d] != 1 {
			strides[lead+d] = s
		}
		s *= shape[d]
	}
	return func(i int) int {
		off := 0
		for d := len(out) - 1; d >= 0; d-- {
			off += i % out[d] * strides[d]
			i /= out[d]
		}
		return off
	}
}
