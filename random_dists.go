package lathe

import "math"

// The samplers that torch has as in-place methods of a tensor
// (x.exponential_(lambd), x.geometric_(p), x.log_normal_(mean, std),
// x.cauchy_(median, sigma)). lathe's tensors do not change, so each is a
// constructor in Rand's form: Exponential(x.Device(), x.DType(), lambd,
// x.Shape()...) is x.exponential_(lambd). The values are drawn on the
// host from the stream that Seed resets and uploaded, as those of the
// samplers of random_sampling.go; a refused call draws nothing.

// checkSampleShape checks shape and that dt is one that op fills (floats,
// and the integers for geometric).
func checkSampleShape(op string, dt DType, ints bool, shape []int) ([]int, error) {
	switch {
	case !dt.Valid():
		return nil, errorf(op, ErrDType, "dtype", "is not a dtype", "use one of lathe's dtypes, such as lathe.Float32")
	case dt == Bool || (!ints && !dt.IsFloat()):
		return nil, errorf(op, ErrDType, "dtype", "is "+dt.String()+", which torch's "+op+"_ does not fill",
			"use lathe.Float32 or lathe.Float64")
	}
	return checkShape(op, shape, -1)
}

// notFinite says what is wrong with a parameter that is NaN or infinite.
func notFinite(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "is " + ftoa(v) + ", but the parameter is a finite number"
	}
	return ""
}

// Exponential makes a float tensor of draws from the exponential
// distribution of rate lambd (mean 1/lambd), as x.exponential_(lambd):
// -log1p(-u)/lambd of uniform draws u, as torch computes them. lambd = 0
// gives +Inf (as torch); lambd < 0 or NaN is ErrValue.
func Exponential(dev Device, dt DType, lambd float64, shape ...int) *Tensor {
	const op = "exponential"
	if !(lambd >= 0) {
		return failed(errorf(op, ErrValue, "lambd", "is "+ftoa(lambd)+", but a rate is ≥ 0", "give a rate ≥ 0 (the mean is 1/lambd)"))
	}
	s, err := checkSampleShape(op, dt, false, shape)
	if err != nil {
		return failed(err)
	}
	return drawValues(op, dev, dt, s, func(out []float64) error {
		drawUniform(out)
		for i, u := range out {
			if lambd == 0 {
				out[i] = math.Inf(1)
			} else {
				out[i] = -math.Log1p(-u) / lambd
			}
		}
		return nil
	})
}

// Geometric makes a tensor of draws from the geometric distribution of
// success probability p: the number of Bernoulli trials up to and
// including the first success (1, 2, ...), as x.geometric_(p), in a float
// or integer dtype (not Bool, as torch): ceil(log(u)/log1p(-p)) of uniform
// draws u in (0, 1). p must lie in (0, 1), as torch checks, else ErrValue.
// A draw that dt cannot hold (a long run of failures in Int8 or Uint8,
// which torch wraps, or past Float16's 65504) is ErrValue, and nothing is
// drawn.
func Geometric(dev Device, dt DType, p float64, shape ...int) *Tensor {
	const op = "geometric"
	if !(p > 0 && p < 1) {
		return failed(errorf(op, ErrValue, "p", "is "+ftoa(p)+", but torch's geometric takes p in (0, 1)", "give a probability in (0, 1)"))
	}
	s, err := checkSampleShape(op, dt, true, shape)
	if err != nil {
		return failed(err)
	}
	most := math.MaxFloat32 // the float dtypes' largest finite values
	switch dt {
	case Float64:
		most = math.MaxFloat64
	case Float16:
		most = 65504
	case BFloat16:
		most = 0x1.fep127
	}
	if dt.IsInt() {
		_, m, _ := exactInts(dt)
		most = float64(m)
	}
	den := math.Log1p(-p)
	return drawValues(op, dev, dt, s, func(out []float64) error {
		drawUniform(out)
		for i, u := range out {
			v := math.Ceil(math.Log(u+0x1p-54) / den) // u + 2^-54: in (0, 1), so v ≥ 1
			if v > most {
				return errorf(op, ErrValue, "dtype", "is "+dt.String()+", which cannot hold the draw "+ftoa(v)+" of p = "+ftoa(p),
					"use a wider dtype, such as lathe.Int64")
			}
			out[i] = v
		}
		return nil
	})
}

// LogNormal makes a float tensor of draws whose logarithm is normal with
// the given mean and std, as x.log_normal_(mean, std): exp(mean + std·z)
// of RandN's draws z. std must be > 0 (as torch checks) and mean finite,
// else ErrValue.
func LogNormal(dev Device, dt DType, mean, std float64, shape ...int) *Tensor {
	const op = "log_normal"
	if what := notFinite(mean); what != "" {
		return failed(errorf(op, ErrValue, "mean", what, "give a finite mean"))
	}
	if !(std > 0) || math.IsInf(std, 1) {
		return failed(errorf(op, ErrValue, "std", "is "+ftoa(std)+", but torch's log_normal takes a finite std > 0", "give a finite std > 0"))
	}
	s, err := checkSampleShape(op, dt, false, shape)
	if err != nil {
		return failed(err)
	}
	return drawValues(op, dev, dt, s, func(out []float64) error {
		drawNormal(out)
		for i, z := range out {
			out[i] = math.Exp(mean + std*z)
		}
		return nil
	})
}

// Cauchy makes a float tensor of draws from the Cauchy distribution of
// the given median and scale sigma, as x.cauchy_(median, sigma):
// median + sigma·tan(π(u - ½)) of uniform draws u, torch's formula. Both
// must be finite, and sigma ≥ 0, else ErrValue (torch takes a negative
// sigma, which gives the same distribution as its absolute value; lathe
// refuses it as the mistake it likely is).
func Cauchy(dev Device, dt DType, median, sigma float64, shape ...int) *Tensor {
	const op = "cauchy"
	if what := notFinite(median); what != "" {
		return failed(errorf(op, ErrValue, "median", what, "give a finite median"))
	}
	if !(sigma >= 0) || math.IsInf(sigma, 1) {
		return failed(errorf(op, ErrValue, "sigma", "is "+ftoa(sigma)+", but a scale is finite and ≥ 0", "give a finite sigma ≥ 0"))
	}
	s, err := checkSampleShape(op, dt, false, shape)
	if err != nil {
		return failed(err)
	}
	return drawValues(op, dev, dt, s, func(out []float64) error {
		drawUniform(out)
		for i, u := range out {
			out[i] = median + sigma*math.Tan(math.Pi*(u-0.5))
		}
		return nil
	})
}
