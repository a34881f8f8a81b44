package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Logspace makes the 1-D tensor of steps values base^e for the steps
// exponents e evenly spaced from start to end, both included, as
// torch.logspace(start, end, steps, base, dtype=dt): torch 1.13's cpu
// formula, in float64 (pow of the exponent start + step·i in the first
// half and end - step·(steps-1-i) in the rest, step = (end - start) /
// (steps-1), start and end first converted to dt, their difference
// taken in dt), then converted to dt as torch converts a double (through
// float32 for the 16-bit floats; truncated for an integer dtype).
// base^e may overflow a float dtype to +Inf, as torch's does, and a
// negative base gives NaN at fractional exponents (C's pow); a value that
// an integer dtype cannot hold is ErrValue (torch wraps it: an int8
// logspace(0, 10, 4, base=2) ends in 0). Float16, which torch's cpu
// refuses, is computed as bfloat16 is (torch's cuda takes it); Bool is
// ErrDType. steps is 0 (empty) or more; start and end must be finite and
// base not NaN, else ErrValue (torch gives NaN).
//
// torch counts the exponent's index i in dt, so that past 256 steps its
// bfloat16 (and past 127 its int8) logspace repeats values; lathe counts
// it exactly.
func Logspace(dev Device, dt DType, start, end float64, steps int, base float64) *Tensor {
	const op = "logspace"
	switch {
	case steps < 0:
		return failed(errorf(op, ErrValue, "steps", "is "+strconv.Itoa(steps), "use steps ≥ 0"))
	case math.IsInf(start, 0) || math.IsNaN(start) || math.IsInf(end, 0) || math.IsNaN(end):
		return failed(errorf(op, ErrValue, "start", "is "+ftoa(start)+" and end "+ftoa(end)+": both must be finite", "give finite exponents"))
	case math.IsNaN(base):
		return failed(errorf(op, ErrValue, "base", "is NaN", "give a number, such as 10"))
	case !dt.Valid():
		return failed(errorf(op, ErrDType, "dtype", "is not a dtype", "use one of lathe's dtypes, such as lathe.Float32"))
	case dt == Bool:
		return failed(errorf(op, ErrDType, "dtype", "is bool, which torch's logspace does not fill", "use a numeric dtype"))
	}
	if err := checkHost(op, "steps", steps, 8+dt.Size()); err != nil {
		return failed(err)
	}
	// start and end as torch converts them to dt, and their difference in dt.
	toDT := func(v float64) float64 {
		switch dt {
		case Float32:
			return float64(float32(v))
		case Float16, BFloat16:
			return roundHalf(dt, v)
		case Float64:
			return v
		}
		return math.Trunc(v)
	}
	if dt.IsInt() {
		for _, a := range [...]struct {
			name string
			v    float64
		}{{"start", start}, {"end", end}} {
			if err := ops.CheckScalar(dt, math.Trunc(a.v), a.name); err != nil {
				return failed(located(err, op))
			}
		}
	}
	s, e := toDT(start), toDT(end)
	vals := make([]float64, steps)
	if steps == 1 {
		vals[0] = math.Pow(base, s)
	} else if steps > 1 {
		step := toDT(e-s) / float64(steps-1)
		half := steps / 2
		for i := range vals {
			if i < half {
				vals[i] = math.Pow(base, s+step*float64(i))
			} else {
				vals[i] = math.Pow(base, e-step*float64(steps-1-i))
			}
		}
	}
	if dt.IsInt() {
		least, most, _ := exactInts(dt)
		for i, v := range vals {
			v = math.Trunc(v)
			if !(v >= float64(least) && v <= float64(most)) || v == 0x1p63 { // float64(most) of int64 is 2^63
				return failed(errorf(op, ErrValue, "end", "gives "+ftoa(vals[i])+" at step "+strconv.Itoa(i)+", which "+dt.String()+
					" cannot hold", "use a smaller range or a wider dtype"))
			}
			vals[i] = v
		}
	}
	return hostTensor(op, dev, dt, vals, []int{steps})
}

// roundHalf is v rounded to the 16-bit float dt as torch converts a
// double to one: through float32.
func roundHalf(dt DType, v float64) float64 {
	d := ops.HostData(dt, []float64{v})
	return widen(halfFloat32s(d))[0]
}
