package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// ZerosLike makes a tensor of zeros with x's shape, dtype and device
// (torch.zeros_like). A failed x gives its error.
func ZerosLike(x *Tensor) *Tensor { return fullLike("zeros_like", x, 0) }

// OnesLike makes a tensor of ones with x's shape, dtype and device.
func OnesLike(x *Tensor) *Tensor { return fullLike("ones_like", x, 1) }

// FullLike makes a tensor of value with x's shape, dtype and device; a
// value that x's dtype cannot hold is an ErrValue, as in Full.
func FullLike(x *Tensor, value float64) *Tensor { return fullLike("full_like", x, value) }

// RandLike makes a tensor of values uniform on [0, 1) with x's shape, dtype
// (a float one) and device.
func RandLike(x *Tensor) *Tensor {
	if err := checkRandLike("rand_like", x); err != nil {
		return failed(err)
	}
	return randUniform("rand_like", x.Device(), x.DType(), x.Shape())
}

// RandNLike makes a tensor of standard normal values with x's shape, dtype
// (a float one) and device.
func RandNLike(x *Tensor) *Tensor {
	if err := checkRandLike("randn_like", x); err != nil {
		return failed(err)
	}
	return randNormal("randn_like", x.Device(), x.DType(), x.Shape())
}

// checkRandLike refuses an x of no float dtype naming x, the argument the
// caller gave (Rand's refusal named "dtype", which RandLike has not).
func checkRandLike(op string, x *Tensor) error {
	if err := x.check(op); err != nil {
		return err
	}
	if dt := x.DType(); !dt.IsFloat() {
		return errorf(op, ErrDType, "x", "is "+dt.String()+" but random values are float",
			"cast it with .Cast(lathe.Float32) first, or use lathe.RandIntLike for integers")
	}
	return nil
}

func fullLike(op string, x *Tensor, v float64) *Tensor {
	if err := x.check(op); err != nil {
		return failed(err)
	}
	return full(op, x.Device(), x.DType(), v, x.Shape())
}

// Linspace makes the 1-D tensor of steps values evenly spaced from start
// to end, both included, as torch.linspace: with step (end-start)/(steps-1),
// the first half counts up from start and the rest down from end, in the
// dtype's own arithmetic for float32 and float64 (in float64 from start and
// end truncated, then truncated, for integers; in float32, rounded once, for
// float16 and bfloat16): torch's formula, whose vectorised kernel may round
// a place an ulp or two apart. steps is 0 (empty) or more; start and end
// are finite values of dt (an integer dtype's once truncated), as torch's
// conversion checks: one outside dt's range is ErrValue.
func Linspace(dev Device, dt DType, start, end float64, steps int) *Tensor {
	const op = "linspace"
	switch {
	case steps < 0:
		return failed(errorf(op, ErrValue, "steps", "is "+strconv.Itoa(steps), "use steps ≥ 0"))
	case math.IsInf(start, 0) || math.IsNaN(start) || math.IsInf(end, 0) || math.IsNaN(end):
		return failed(errorf(op, ErrValue, "start", "is "+ftoa(start)+" and end "+ftoa(end)+": both must be finite", ""))
	case dt == Bool:
		return failed(errorf(op, ErrDType, "dtype", "is bool, which has no values between false and true", "use a numeric dtype"))
	}
	if dt.IsInt() { // torch converts start and end to the dtype first
		start, end = math.Trunc(start), math.Trunc(end)
	}
	// Both must be values of dt, as torch's conversion checks: every
	// value between them then is, where one past dt's range wrapped (an
	// int8 linspace to 1000 gave 0, -12, -24) or overflowed (a float16
	// one to 1e6 gave 0, inf, inf).
	for _, a := range [...]struct {
		name string
		v    float64
	}{{"start", start}, {"end", end}} {
		if dt.Valid() {
			if err := ops.CheckScalar(dt, a.v, a.name); err != nil {
				return failed(located(err, op))
			}
		}
	}
	if err := checkHost(op, "steps", steps, 8+dt.Size()); err != nil { // 8: the float64 values made first
		return failed(err)
	}
	vals := make([]float64, steps)
	if dt == Float64 || dt.IsInt() {
		linspace(vals, start, end)
	} else { // float32 arithmetic, as torch's kernel for float, then rounded to dt
		v32 := make([]float32, steps)
		linspace(v32, float32(start), float32(end))
		for i, v := range v32 {
			vals[i] = float64(v)
		}
	}
	if dt.IsInt() {
		for i, v := range vals {
			vals[i] = math.Trunc(v)
		}
	}
	return hostTensor(op, dev, dt, vals, []int{steps})
}

// linspace fills out with torch's linspace formula in T's arithmetic.
func linspace[T float32 | float64](out []T, start, end T) {
	n := len(out)
	if n == 1 {
		out[0] = start
		return
	}
	step, scale := (end-start)/T(n-1), T(1)
	if math.IsInf(float64(step), 0) {
		// end - start overflowed T (torch's values are NaN and Inf then).
		// No value is further than half the range from its end of it, so
		// half steps, each product doubled, stay finite.
		step, scale = (end/2-start/2)/T(n-1), 2
	}
	half := n / 2
	for i := range out {
		// T(...): rounded, never fused into one multiply-add. A scale of 1
		// changes nothing.
		if i < half {
			out[i] = start + scale*T(step*T(i))
		} else {
			out[i] = end - scale*T(step*T(n-1-i))
		}
	}
}
