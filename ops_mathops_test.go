package lathe

import (
	"math"
	"runtime/debug"
	"slices"
	"testing"
)

// Tests of the composites of ops_mathops.go and ops_mathreduce.go beyond
// the conformance suite (internal/conformance, mathops.json, which
// compares their values and gradients with torch's on every device):
// their rows of the bad-input table, the errors that name op and
// argument, exactness where torch is exact, rounding once in 16 bits,
// and that a training step through each leaves nothing behind.

// biMathOps are the bad-input rows of the math composites.
func biMathOps() map[string]biOp {
	t := map[string]biOp{}
	for name, f := range map[string]func(*Tensor) *Tensor{
		"log2": (*Tensor).Log2, "log10": (*Tensor).Log10, "exp2": (*Tensor).Exp2, "trunc": (*Tensor).Trunc,
		"frac": (*Tensor).Frac, "logit": (*Tensor).Logit, "sinc": (*Tensor).Sinc, "deg2rad": (*Tensor).Deg2Rad,
		"rad2deg": (*Tensor).Rad2Deg, "tanhshrink": (*Tensor).Tanhshrink,
		"erfc": (*Tensor).Erfc, "erfinv": (*Tensor).Erfinv, "lgamma": (*Tensor).Lgamma, "digamma": (*Tensor).Digamma,
		"softshrink": func(x *Tensor) *Tensor { return x.Softshrink(0.5) },
		"hardshrink": func(x *Tensor) *Tensor { return x.Hardshrink(0.5) },
		"softmin":    func(x *Tensor) *Tensor { return x.Softmin(1) },
		"glu":        func(x *Tensor) *Tensor { return x.GLU(0) },
	} {
		t[name] = biUnary(f)
	}
	for name, f := range map[string]func(x, y *Tensor) *Tensor{
		"xlogy": (*Tensor).Xlogy, "hypot": (*Tensor).Hypot, "logaddexp": (*Tensor).LogAddExp,
		"logaddexp2": (*Tensor).LogAddExp2, "copysign": (*Tensor).Copysign, "fmax": (*Tensor).Fmax, "fmin": (*Tensor).Fmin,
	} {
		t[name] = biBinary(f, "aa")
	}
	t["heaviside"] = biBinary((*Tensor).Heaviside, "as")
	t["isclose"] = biBinary(func(x, y *Tensor) *Tensor { return x.IsClose(y, 1e-5, 1e-8, true) }, "as")
	t["nansum"] = biAnyDType(biReduce(func(x *Tensor, d int) *Tensor { return x.NanSum(d) }))
	t["nanmean"] = biReduce(func(x *Tensor, d int) *Tensor { return x.NanMeanKeepDim(d) })
	t["count_nonzero"] = biAnyDType(biReduce(func(x *Tensor, d int) *Tensor { return x.CountNonzero(d) }))
	t["cross"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 1, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Cross(a[1], -1) }, kinds: "fs",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge, 3).Cross(biF(dev, 1, 1, 3), 2) }}
	t["kron"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 2)} },
		call: func(a []*Tensor) *Tensor { return a[0].Kron(a[1]) }, kinds: "aa",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge).Kron(biBig(dev, biHuge)) }}
	t["tensordot"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3, 4)} },
		call: func(a []*Tensor) *Tensor { return a[0].TensorDot(a[1], []int{1}, []int{0}) }, kinds: "fs",
		huge: func(dev Device) *Tensor {
			return biBig(dev, biHuge, 2).TensorDot(biBig(dev, 2, biHuge), []int{1}, []int{0})
		}}
	t["cdist"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 4, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Cdist(a[1], 2) }, kinds: "fs",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, 2).Cdist(biBig(dev, biHuge, 2), 2) }}
	return t
}

func TestMathOpsErrors(t *testing.T) {
	x := FromSlice(CPU, []float32{0.25, 0.5, 3}, 3)
	i := FromSlice(CPU, []int32{1, 2, 3}, 3)
	var nilT *Tensor
	for _, c := range []struct {
		what    string
		err     error
		kind    error
		op, arg string
	}{
		{"log2 of int32", i.Log2().Err(), ErrDType, "log2", "x"},
		{"lgamma of int64", i.Cast(Int64).Lgamma().Err(), ErrDType, "lgamma", "x"},
		{"erfc of bool", Ones(CPU, Bool, 1).Erfc().Err(), ErrDType, "erfc", "x"},
		{"frac of bool", Ones(CPU, Bool, 2).Frac().Err(), ErrDType, "frac", "x"},
		{"trunc of bool", Ones(CPU, Bool, 2).Trunc().Err(), ErrDType, "trunc", "x"},
		{"logit of nil", nilT.Logit().Err(), ErrValue, "logit", "x"},
		{"logit eps NaN", x.LogitEps(math.NaN()).Err(), ErrValue, "logit", "eps"},
		{"logit eps 0.7", x.LogitEps(0.7).Err(), ErrValue, "logit", "eps"},
		{"softshrink lambda -1", x.Softshrink(-1).Err(), ErrValue, "softshrink", "lambd"},
		{"softshrink lambda NaN", x.Softshrink(math.NaN()).Err(), ErrValue, "softshrink", "lambd"},
		{"hardshrink lambda NaN", x.Hardshrink(math.NaN()).Err(), ErrValue, "hardshrink", "lambd"},
		{"xlogy [3]x[2]", x.Xlogy(Ones(CPU, Float32, 2)).Err(), ErrShape, "xlogy", "y"},
		{"xlogy of a nil y", x.Xlogy(nilT).Err(), ErrValue, "xlogy", "y"},
		{"heaviside f32 x f64", x.Heaviside(Ones(CPU, Float64, 3)).Err(), ErrDType, "heaviside", "values"},
		{"copysign bool x bool", Ones(CPU, Bool, 2).Copysign(Ones(CPU, Bool, 2)).Err(), nil, "", ""},
		{"nanmean of int32", i.NanMean().Err(), ErrDType, "nanmean", "x"},
		{"nansum dim 1", x.NanSum(1).Err(), ErrIndex, "nansum", "dims"},
		{"count_nonzero dim 2", x.CountNonzero(2).Err(), ErrIndex, "count_nonzero", "dims"},
		{"amax dim 1", x.Amax(1).Err(), ErrIndex, "amax", "dims"},
		{"amin of nil", nilT.Amin().Err(), ErrValue, "amin", "x"},
		{"isclose rtol -1", x.IsClose(x, -1, 0, false).Err(), ErrValue, "isclose", "rtol"},
		{"isclose atol NaN", x.IsClose(x, 0, math.NaN(), false).Err(), ErrValue, "isclose", "atol"},
		{"isclose f32 x i32", x.IsClose(i, 0, 0, false).Err(), ErrDType, "isclose", "y"},
		{"softmin of int32", i.Softmin(0).Err(), ErrDType, "softmin", "x"},
		{"glu of 0-d", Scalar(CPU, float32(1)).GLU(0).Err(), ErrShape, "glu", "x"},
		{"glu odd size", x.GLU(0).Err(), ErrShape, "glu", "x"},
		{"glu dim 1", x.GLU(1).Err(), ErrIndex, "glu", "dim"},
		{"cross of size 4", Ones(CPU, Float32, 4).Cross(Ones(CPU, Float32, 4), 0).Err(), ErrShape, "cross", "x"},
		{"cross of ranks 2 and 1", Ones(CPU, Float32, 2, 3).Cross(x, -1).Err(), ErrShape, "cross", "y"},
		{"cross of bool", Ones(CPU, Bool, 3).Cross(Ones(CPU, Bool, 3), 0).Err(), ErrDType, "cross", "x"},
		{"cross dim 1", x.Cross(x, 1).Err(), ErrIndex, "cross", "dim"},
		{"kron of a nil y", x.Kron(nilT).Err(), ErrValue, "kron", "y"},
		{"tensordot sizes", x.TensorDot(Ones(CPU, Float32, 2), []int{0}, []int{0}).Err(), ErrShape, "tensordot", "y"},
		{"tensordot dims unpaired", x.TensorDot(x, []int{0}, nil).Err(), ErrValue, "tensordot", "yDims"},
		{"tensordot dim twice", x.TensorDot(Ones(CPU, Float32, 3, 3), []int{0, 0}, []int{0, 1}).Err(), ErrValue, "tensordot", "xDims"},
		{"tensordot dim 1", x.TensorDot(x, []int{1}, []int{0}).Err(), ErrIndex, "tensordot", "xDims"},
		{"cdist p -1", Ones(CPU, Float32, 2, 3).Cdist(Ones(CPU, Float32, 2, 3), -1).Err(), ErrValue, "cdist", "p"},
		{"cdist of a vector", x.Cdist(Ones(CPU, Float32, 2, 3), 2).Err(), ErrShape, "cdist", "x"},
		{"cdist of int32", Ones(CPU, Int32, 2, 3).Cdist(Ones(CPU, Int32, 2, 3), 2).Err(), ErrDType, "cdist", "x"},
		{"cdist features", Ones(CPU, Float32, 2, 3).Cdist(Ones(CPU, Float32, 2, 4), 2).Err(), ErrShape, "cdist", "y"},
		{"cdist batches", Ones(CPU, Float32, 2, 2, 3).Cdist(Ones(CPU, Float32, 3, 2, 3), 1).Err(), ErrShape, "cdist", "y"},
		{"tensordot f32 x i32", x.TensorDot(i, []int{0}, []int{0}).Err(), ErrDType, "tensordot", "y"},
	} {
		if c.kind == nil {
			if c.err != nil {
				t.Errorf("%s: %v, want no error", c.what, c.err)
			}
			continue
		}
		moreOpsErr(t, c.what, c.err, c.kind, c.op, c.arg)
	}
	if _, err := x.Equal(nilT); err == nil {
		t.Error("equal with a nil y: no error")
	} else {
		moreOpsErr(t, "equal with a nil y", err, ErrValue, "equal", "y")
	}
	if _, err := x.AllClose(i, 0, 0, false); err == nil {
		t.Error("allclose of f32 and i32: no error")
	} else {
		moreOpsErr(t, "allclose of f32 and i32", err, ErrDType, "allclose", "y")
	}
}

// TestMathOpsExact: log2 and log10 of an exact power are exact (float64's
// log(1000)/ln 10 is 2.9999999999999996, whose floor is 2, where torch's
// log10 gives 3), exp2 of an integer is exact, on every device.
func TestMathOpsExact(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float32, Float64, Float16, BFloat16} {
			if dev != CPU && dt == Float64 {
				continue
			}
			p10 := []float32{1, 10, 100, 1000, 1e4, 1e5, 1e6}
			p2 := []float32{0.125, 0.5, 1, 2, 8, 1024, 1 << 20}
			e := []float32{-3, -1, 0, 1, 3, 10, 20}
			if dt == Float16 {
				p10, p2 = p10[:5], p2[:6]
			}
			for _, c := range []struct {
				name string
				f    func(*Tensor) *Tensor
				in   []float32
				want func(float64) float64
			}{
				{"log10", (*Tensor).Log10, p10, math.Log10}, {"log2", (*Tensor).Log2, p2, math.Log2},
				{"exp2", (*Tensor).Exp2, e, math.Exp2},
			} {
				x := FromSlice(CPU, c.in, len(c.in)).Cast(dt).To(dev)
				got, err := c.f(x).Cast(Float32).Float32s()
				if err != nil {
					t.Fatalf("%v %v %s: %v", dev, dt, c.name, err)
				}
				for k, v := range c.in {
					want := float32(c.want(float64(v)))
					if dt == Float16 && c.name == "exp2" && want > 65504 {
						want = float32(math.Inf(1))
					}
					if got[k] != want {
						t.Errorf("%v %v %s(%v) = %v, want exactly %v", dev, dt, c.name, v, got[k], want)
					}
				}
			}
		}
	}
}

// TestMathOpsHalfRoundOnce: the 16-bit composites compute in float32 and
// round once, as torch's kernels do: bit for bit the op on x widened,
// rounded to x's dtype.
func TestMathOpsHalfRoundOnce(t *testing.T) {
	vals := make([]float32, 0, 401)
	for i := -200; i <= 200; i++ {
		vals = append(vals, float32(i)*0.0173+0.001)
	}
	for _, dt := range []DType{BFloat16, Float16} {
		x := FromSlice(CPU, vals, len(vals)).Cast(dt)
		y := x.MulScalar(-1.3).AddScalar(0.2)
		p := x.Abs().AddScalar(0.01)
		u := p.MulScalar(0.2)
		for _, c := range []struct {
			name  string
			f     func(x, y, p *Tensor) *Tensor
			scale float64 // of x, in its dtype, before f
		}{
			{"logit", func(x, _, _ *Tensor) *Tensor { return x.LogitEps(0.01) }, 0},
			{"log2", func(_, _, p *Tensor) *Tensor { return p.Log2() }, 0},
			{"log10", func(_, _, p *Tensor) *Tensor { return p.Log10() }, 0},
			{"exp2", func(x, _, _ *Tensor) *Tensor { return x.Exp2() }, 0},
			{"sinc", func(x, _, _ *Tensor) *Tensor { return x.Sinc() }, 0},
			{"deg2rad", func(x, _, _ *Tensor) *Tensor { return x.Deg2Rad() }, 0},
			{"tanhshrink", func(x, _, _ *Tensor) *Tensor { return x.Tanhshrink() }, 0},
			{"erfc", func(x, _, _ *Tensor) *Tensor { return x.Erfc() }, 3},
			{"erfinv", func(x, _, _ *Tensor) *Tensor { return x.Erfinv() }, 0.28},
			{"lgamma", func(x, _, _ *Tensor) *Tensor { return x.Lgamma() }, 4},
			{"digamma", func(x, _, _ *Tensor) *Tensor { return x.Digamma() }, 4},
			{"softshrink", func(x, _, _ *Tensor) *Tensor { return x.Softshrink(0.3) }, 0},
			{"xlogy", func(x, _, p *Tensor) *Tensor { return x.Xlogy(p) }, 0},
			{"hypot", func(x, y, _ *Tensor) *Tensor { return x.Hypot(y) }, 0},
			{"logaddexp", func(x, y, _ *Tensor) *Tensor { return x.LogAddExp(y) }, 0},
			{"logaddexp2", func(x, y, _ *Tensor) *Tensor { return x.LogAddExp2(y) }, 0},
			{"cdist mm", func(x, y, _ *Tensor) *Tensor {
				return x.Narrow(0, 0, 400).Reshape(40, 10).Cdist(y.Narrow(0, 0, 300).Reshape(30, 10), 2)
			}, 0},
			{"cdist p=3", func(x, y, _ *Tensor) *Tensor {
				return x.Narrow(0, 0, 400).Reshape(40, 10).Cdist(y.Narrow(0, 0, 300).Reshape(30, 10), 3)
			}, 0},
			{"glu", func(x, _, _ *Tensor) *Tensor { return x.Narrow(0, 0, 400).Reshape(20, 20).GLU(1) }, 0},
			{"pdist p=3", func(x, _, _ *Tensor) *Tensor { return x.Narrow(0, 0, 400).Reshape(40, 10).Pdist(3) }, 0},
		} {
			in := x
			switch {
			case c.name == "logit":
				in = u
			case c.scale != 0:
				in = x.MulScalar(c.scale)
			}
			got, err := c.f(in, y, p).Float32s()
			if err != nil {
				t.Fatalf("%v %s: %v", dt, c.name, err)
			}
			want, err := c.f(in.Cast(Float32), y.Cast(Float32), p.Cast(Float32)).Cast(dt).Float32s()
			if err != nil {
				t.Fatalf("%v %s: %v", dt, c.name, err)
			}
			for i := range got {
				if got[i] != want[i] && !(got[i] != got[i] && want[i] != want[i]) {
					t.Errorf("%v %s at %d: %v, want the float32 result rounded once %v", dt, c.name, i, got[i], want[i])
					break
				}
			}
		}
	}
}

// TestMathOpsReductions: amax and amin of bool are any and all, as
// torch's; Equal and AllClose.
func TestMathOpsReductions(t *testing.T) {
	b := FromSlice(CPU, []bool{true, false, false, false}, 2, 2)
	if got, err := b.Amax(1).Bools(); err != nil || !slices.Equal(got, []bool{true, false}) {
		t.Errorf("amax of bool along 1: %v %v, want [true false]", got, err)
	}
	if got, err := b.AminKeepDim().Bools(); err != nil || !slices.Equal(got, []bool{false}) {
		t.Errorf("amin of bool: %v %v, want [false]", got, err)
	}
	x := FromSlice(CPU, []float32{1, 2, float32(math.NaN())}, 3)
	for _, c := range []struct {
		what string
		got  func() (bool, error)
		want bool
	}{
		{"equal to itself with a NaN", func() (bool, error) { return x.Equal(x) }, false},
		{"equal of int32 and float32", func() (bool, error) {
			return FromSlice(CPU, []int32{1, 2}, 2).Equal(FromSlice(CPU, []float32{1, 2}, 2))
		}, true},
		{"equal of other shapes", func() (bool, error) { return x.Equal(x.Reshape(1, 3)) }, false},
		{"equal of empty tensors", func() (bool, error) { return Zeros(CPU, Float32, 0).Equal(Zeros(CPU, Int64, 0)) }, true},
		{"allclose with equal_nan", func() (bool, error) { return x.AllClose(x.AddScalar(1e-7), 1e-5, 1e-8, true) }, true},
		{"allclose without equal_nan", func() (bool, error) { return x.AllClose(x, 1e-5, 1e-8, false) }, false},
		{"allclose broadcast", func() (bool, error) { return Ones(CPU, Float32, 2, 3).AllClose(Ones(CPU, Float32, 3), 0, 0, false) }, true},
	} {
		if got, err := c.got(); err != nil || got != c.want {
			t.Errorf("%s: %v %v, want %v", c.what, got, err, c.want)
		}
	}
	if _, err := x.AllClose(Ones(CPU, Float32, 2), 0, 0, false); err == nil {
		t.Error("allclose of [3] and [2]: no error")
	}
}

// TestMathOpsLeaveNothing: a training step through each composite takes
// no new memory from the device's pool once warm, with the collector off.
func TestMathOpsLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 4, 6).To(dev).RequireGrad()
		y := RandN(CPU, Float32, 4, 6).To(dev)
		ya := y.Abs()
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"log2":       func(x *Tensor) *Tensor { return x.Abs().Log2() },
			"log10":      func(x *Tensor) *Tensor { return x.Abs().Log10() },
			"exp2":       func(x *Tensor) *Tensor { return x.Exp2() },
			"trunc":      func(x *Tensor) *Tensor { return x.Trunc().Add(x) },
			"frac":       func(x *Tensor) *Tensor { return x.Frac() },
			"logit":      func(x *Tensor) *Tensor { return x.Sigmoid().LogitEps(0.1) },
			"sinc":       func(x *Tensor) *Tensor { return x.Sinc() },
			"rad2deg":    func(x *Tensor) *Tensor { return x.Rad2Deg() },
			"softshrink": func(x *Tensor) *Tensor { return x.Softshrink(0.5) },
			"hardshrink": func(x *Tensor) *Tensor { return x.Hardshrink(0.5) },
			"tanhshrink": func(x *Tensor) *Tensor { return x.Tanhshrink() },
			"xlogy":      func(x *Tensor) *Tensor { return x.Xlogy(ya) },
			"hypot":      func(x *Tensor) *Tensor { return x.Hypot(y) },
			"logaddexp":  func(x *Tensor) *Tensor { return x.LogAddExp(y) },
			"logaddexp2": func(x *Tensor) *Tensor { return x.LogAddExp2(y) },
			"copysign":   func(x *Tensor) *Tensor { return x.Copysign(y) },
			"heaviside":  func(x *Tensor) *Tensor { return y.Heaviside(x) },
			"fmax":       func(x *Tensor) *Tensor { return x.Fmax(y) },
			"fmin":       func(x *Tensor) *Tensor { return x.Fmin(y) },
			"nansum":     func(x *Tensor) *Tensor { return x.NanSum(1) },
			"nanmean":    func(x *Tensor) *Tensor { return x.NanMeanKeepDim(0) },
			"count":      func(x *Tensor) *Tensor { return x.CountNonzero(1).Cast(Float32).Sum().Add(x) },
			"amax":       func(x *Tensor) *Tensor { return x.Amax() },
			"amin":       func(x *Tensor) *Tensor { return x.AminKeepDim(1) },
			"isclose":    func(x *Tensor) *Tensor { return x.IsClose(y, 0.1, 0.1, false).Cast(Float32).Add(x) },
			"softmin":    func(x *Tensor) *Tensor { return x.Softmin(1) },
			"glu":        func(x *Tensor) *Tensor { return x.GLU(-1) },
			"erfc":       func(x *Tensor) *Tensor { return x.Erfc() },
			"erfinv":     func(x *Tensor) *Tensor { return x.Tanh().Erfinv() },
			"lgamma":     func(x *Tensor) *Tensor { return x.Lgamma() },
			"digamma":    func(x *Tensor) *Tensor { return x.Digamma() },
			"cross":      func(x *Tensor) *Tensor { return x.Reshape(4, 2, 3).Cross(y.Reshape(4, 2, 3), -1) },
			"kron":       func(x *Tensor) *Tensor { return x.Kron(y.Narrow(0, 0, 2)) },
			"tensordot":  func(x *Tensor) *Tensor { return x.TensorDot(y, []int{1}, []int{1}) },
			"cdist":      func(x *Tensor) *Tensor { return x.Cdist(y, 2).Add(x.Cdist(y, 1)).Add(x.Cdist(y, math.Inf(1))) },
			"cdist mm":   func(x *Tensor) *Tensor { return x.Reshape(24, 1).Expand(24, 2).Cdist(y.Reshape(12, 2), 2) },
		} {
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
	}
}

// TestMathOpsAutocast: the ops of torch 1.13's CUDA autocast fp32 list run
// in float32 under autocast (log2, log10, erfinv and cdist); the others as
// they are. (Cross and tensordot, on its promote list, refuse mixed dtypes
// before autocast could cast them.)
func TestMathOpsAutocast(t *testing.T) {
	h := FromSlice(CPU, []float32{0.25, 0.5, 0.75}, 1, 3).Cast(Float16)
	var got map[string]DType
	err := Autocast(Float16, func() {
		got = map[string]DType{
			"log2": h.Log2().DType(), "log10": h.Log10().DType(), "erfinv": h.Erfinv().DType(),
			"cdist": h.Cdist(h, 2).DType(), "cross": h.Cross(h, -1).DType(),
			"tensordot": h.TensorDot(h, []int{1}, []int{1}).DType(), "exp2": h.Exp2().DType(),
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]DType{"log2": Float32, "log10": Float32, "erfinv": Float32, "cdist": Float32, "cross": Float16,
		"tensordot": Float16, "exp2": Float16}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s under autocast to float16: %v, want %v", k, got[k], w)
		}
	}
}

// TestCdistNaN: a NaN difference makes the distance NaN for p = 0, 0.5,
// 1, 2 (both forms) and 3, as torch 1.13's cdist gives; an infinite one
// counts 1 for p = 0 and is +Inf otherwise, p = +Inf too. (The
// zero-distance masks read NaN > 0 as false and gave 0 for p = 0.5, 2 and
// 3, p = 0 counted a NaN as 1, and p = +Inf gave ∞ - ∞ = NaN.)
func TestCdistNaN(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	x := FromSlice(CPU, []float64{1, nan, 0, 1, 2, inf}, 3, 2)
	for _, p := range []float64{0, 0.5, 1, 2, 3} {
		for _, rows := range []int{1, 30} { // 30 rows: p = 2's matrix-product form
			y := x.Narrow(0, 1, 2).Repeat(rows, 1)
			got, err := x.Narrow(0, 0, 1).Cdist(y, p).Float64s()
			if err != nil {
				t.Fatalf("p=%v: %v", p, err)
			}
			for i, v := range got {
				if !math.IsNaN(v) {
					t.Errorf("p=%v, %d rows: distance %d from a row with NaN is %v, want NaN", p, rows, i, v)
					break
				}
			}
		}
	}
	for _, p := range []float64{0, 0.5, 1, 2, 3, inf} {
		got, err := x.Narrow(0, 1, 1).Cdist(x.Narrow(0, 2, 1), p).Float64s()
		want := inf
		if p == 0 {
			want = 2
		}
		if err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("p=%v: distance to a row with +Inf is %v %v, want %v", p, got, err, want)
		}
	}
}

// TestDigammaGradientAtSmallIntegers checks digamma's first and second
// derivatives at 1, 2, …, 10, where the recurrence lands on 10 exactly and
// the value is ψ(10), a constant: trigamma(n) = π²/6 - Σ_{k<n} 1/k² and
// tetragamma(n) = -2ζ(3) + 2Σ_{k<n} 1/k³ (torch's gradient there is
// trigamma, to its formula's 1e-9). The constant's gradient was 0, so the
// derivatives lacked ψ'(10) = 0.105 and ψ”(10).
func TestDigammaGradientAtSmallIntegers(t *testing.T) {
	const zeta3 = 1.2020569031595942854
	var xs []float64
	for n := 1; n <= 10; n++ {
		xs = append(xs, float64(n))
	}
	x := FromSlice(CPU, xs).RequireGrad()
	g, err := Grad(x.Digamma().Sum(), []*Tensor{x}, CreateGraph())
	if err != nil {
		t.Fatal(err)
	}
	h, err := Grad(g[0].Sum(), []*Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := g[0].Float64s()
	d2, _ := h[0].Float64s()
	s2, s3 := 0.0, 0.0
	for i, n := range xs {
		want1, want2 := math.Pi*math.Pi/6-s2, -2*zeta3+2*s3
		if math.Abs(d1[i]-want1) > 1e-12*want1 || math.Abs(d2[i]-want2) > 1e-11*math.Abs(want2) {
			t.Errorf("digamma at %v: derivatives %v, %v; want %v, %v", n, d1[i], d2[i], want1, want2)
		}
		s2 += 1 / (n * n)
		s3 += 1 / (n * n * n)
	}
}

// TestErfcTail checks erfc's tail against Go's math.Erfc (fdlibm, below
// an ulp): exp(-x² - 0.5625 + R/S) in one step lost the ulps of the
// rounded x², 2e-14 relatively at 20; with x² split exactly in two
// (squareSplit) it keeps a few ulp, as torch's.
func TestErfcTail(t *testing.T) {
	xs := []float64{1.3, 2.5, 5, 8, 10, 15, 20, 26}
	got, _ := FromSlice(CPU, xs).Erfc().Float64s()
	for i, x := range xs {
		if want := math.Erfc(x); math.Abs(got[i]-want) > 1e-15*want {
			t.Errorf("erfc(%v) = %v, want %v (relative error %.2g)", x, got[i], want, (got[i]-want)/want)
		}
	}
}
