package lathe

import (
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// biSampling are the bad-input rows of the samplers whose parameters are
// tensors (random_sampling.go).
func biSampling() map[string]biOp {
	t := map[string]biOp{}
	for name, f := range map[string]func(*Tensor) *Tensor{
		"bernoulli": Bernoulli,
		"poisson":   Poisson,
	} {
		t[name] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3).MulScalar(0.5)} },
			call: func(a []*Tensor) *Tensor { return f(a[0]) }, kinds: "f",
			huge: func(dev Device) *Tensor { return f(biBig(dev, biHuge, biHuge)) }}
	}
	t["bernoulli_like"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return BernoulliLike(a[0], 0.5) }, kinds: "a",
		huge: func(dev Device) *Tensor { return BernoulliLike(biBig(dev, biHuge, biHuge), 0.5) }}
	t["normal"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return Normal(a[0], a[1]) }, kinds: "ff",
		huge: func(dev Device) *Tensor { return Normal(biBig(dev, biHuge, biHuge), biF(dev, 1)) }}
	return t
}

// TestSamplingLeaveNothing: with the collector off, warm calls of each
// sampler, their results released, take nothing from the device's pool,
// nor do refused calls.
func TestSamplingLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		p := Full(dev, Float32, 0.25, 4, 6)
		std := Ones(dev, Float32, 6)
		bad := FromSlice(CPU, []float32{1, -1}).To(dev)
		for name, f := range map[string]func() *Tensor{
			"bernoulli":      func() *Tensor { return Bernoulli(p) },
			"bernoulli_like": func() *Tensor { return BernoulliLike(p, 0.5) },
			"poisson":        func() *Tensor { return Poisson(p) },
			"normal":         func() *Tensor { return Normal(p, std) },
			"exponential":    func() *Tensor { return Exponential(dev, Float32, 2, 4, 6) },
			"geometric":      func() *Tensor { return Geometric(dev, Float32, 0.5, 4, 6) },
			"log_normal":     func() *Tensor { return LogNormal(dev, Float32, 0, 1, 4, 6) },
			"cauchy":         func() *Tensor { return Cauchy(dev, Float32, 0, 1, 4, 6) },
			"logspace":       func() *Tensor { return Logspace(dev, Float32, 0, 2, 24, 10) },
			"refused":        func() *Tensor { return Normal(p, bad) },
			"refused_values": func() *Tensor { return Bernoulli(bad) },
		} {
			warmCallsTakeNothing(t, dev, name, f, strings.HasPrefix(name, "refused"))
		}
	}
}

// FuzzSampling calls the samplers with parameters holding NaN, infinities,
// negatives and the extremes, in any dtype and shape. The oracle: a call
// succeeds exactly when its parameters are valid (refusing only a
// huge shape or a geometric draw past an integer dtype besides); a refusal
// is a *lathe.Error and leaves the stream as it was; a result has the
// dtype and shape asked for and values in the distribution's support.
func FuzzSampling(f *testing.F) {
	f.Add([]byte{0, 0, 2, 3, 1, 2, 3, 4, 5, 6})
	f.Add([]byte{1, 1, 2, 7, 11, 3, 15, 200, 0})
	f.Add([]byte{2, 0, 1, 2, 9, 9, 3, 7})
	f.Add([]byte{3, 4, 1, 5, 0, 9})
	f.Add([]byte{4, 2, 200, 3, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		rngMu.Lock()
		before := *pcg()
		rngMu.Unlock()
		dt := []DType{Float32, Float64, Float16, BFloat16, Int32, Int64, Int8, Uint8, Bool}[r.intn(9)]
		shape := r.shape(3, 24)
		which := r.intn(8)
		a, b := r.value(), r.value()
		var out, x, y *Tensor
		var label string
		valid := dt.IsFloat()
		// in says where each result value may lie, given parameter values p, q.
		var in func(v, p, q float64) bool
		switch which {
		case 0, 1, 2: // bernoulli, poisson: tensor parameters
			x = r.tensor(Float64, shape).Cast(dt)
			pv, _ := fzHost(x)
			switch which {
			case 0:
				label, out = fmt.Sprintf("bernoulli(%s %v)", dt, shape), Bernoulli(x)
				for _, p := range pv {
					valid = valid && p >= 0 && p <= 1
				}
				in = func(v, p, _ float64) bool { return (v == 0 && p < 1) || (v == 1 && p > 0) }
			case 1:
				label, out = fmt.Sprintf("poisson(%s %v)", dt, shape), Poisson(x)
				for _, p := range pv {
					valid = valid && p >= 0 && !math.IsInf(p, 1)
				}
				in = func(v, p, _ float64) bool { return v >= 0 && v == math.Trunc(v) && (p > 0 || v == 0) }
			default:
				y = r.tensor(Float64, shape[min(len(shape), 1):]).Cast(dt)
				label, out = fmt.Sprintf("normal(%s %v)", dt, shape), Normal(x, y)
				qv, _ := fzHost(y)
				for _, p := range pv {
					valid = valid && !math.IsNaN(p)
				}
				for _, q := range qv {
					valid = valid && q >= 0
				}
				in = func(v, p, q float64) bool { return q != 0 || v == p || math.IsInf(p, 0) }
			}
		case 3:
			label, out = fmt.Sprintf("bernoulli_like(%s %v, %v)", dt, shape, a), BernoulliLike(Zeros(CPU, dt, shape...), a)
			valid = a >= 0 && a <= 1
			in = func(v, _, _ float64) bool { return v == 0 || v == 1 }
		case 4:
			label, out = fmt.Sprintf("exponential(%s %v, %v)", dt, shape, a), Exponential(CPU, dt, a, shape...)
			valid = valid && a >= 0
			in = func(v, _, _ float64) bool { return v >= 0 }
		case 5:
			label, out = fmt.Sprintf("geometric(%s %v, %v)", dt, shape, a), Geometric(CPU, dt, a, shape...)
			valid = dt != Bool && a > 0 && a < 1
			in = func(v, _, _ float64) bool { return v >= 1 && v == math.Trunc(v) }
		case 6:
			label, out = fmt.Sprintf("log_normal(%s %v, %v, %v)", dt, shape, a, b), LogNormal(CPU, dt, a, b, shape...)
			valid = valid && !math.IsInf(a, 0) && !math.IsNaN(a) && b > 0 && !math.IsInf(b, 1)
			in = func(v, _, _ float64) bool { return v >= 0 }
		default:
			label, out = fmt.Sprintf("cauchy(%s %v, %v, %v)", dt, shape, a, b), Cauchy(CPU, dt, a, b, shape...)
			valid = valid && !math.IsInf(a, 0) && !math.IsNaN(a) && b >= 0 && !math.IsInf(b, 1)
			in = func(v, _, _ float64) bool { return !math.IsNaN(v) }
		}
		if err := out.Err(); err != nil {
			fzKind(t, label, err)
			rngMu.Lock()
			after := *pcg()
			rngMu.Unlock()
			if after != before {
				t.Fatalf("%s failed (%v) but moved the stream", label, err)
			}
			if valid && which != 5 { // geometric refuses a draw past its dtype
				t.Fatalf("%s: refused valid parameters: %v", label, err)
			}
			return
		}
		if !valid {
			t.Fatalf("%s: drew from invalid parameters", label)
		}
		if out.t.DType != dt || !slices.Equal(out.t.Shape, shape) {
			t.Fatalf("%s: gave %s %v", label, out.t.DType, out.t.Shape)
		}
		v, _ := fzHost(out)
		var pv, qv []float64
		if x != nil {
			pv, _ = fzHost(x)
		}
		if y != nil {
			qv, _ = fzHost(y)
		}
		for i, s := range v {
			var p, q float64
			if pv != nil {
				p = pv[i]
			}
			if qv != nil {
				q = qv[i%max(len(qv), 1)]
			}
			if !in(s, p, q) {
				t.Fatalf("%s: element %d is %v (parameters %v, %v)", label, i, s, p, q)
			}
		}
	})
}
