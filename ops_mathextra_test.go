package lathe

import (
	"math"
	"runtime/debug"
	"testing"
)

// Tests of ops_blas_style.go, ops_stats.go and ops_bitwise.go beyond the
// conformance suite (internal/conformance, mathextra.json, which compares
// their values and gradients with torch's on every device): their rows of
// the bad-input table, the errors, and that they leave nothing behind.

// biInts is a [2, 3] int32 tensor of small values, none zero.
func biInts(dev Device) *Tensor {
	return FromSlice(CPU, []int32{3, -5, 7, 12, 1, -2}, 2, 3).To(dev)
}

// biMathExtra are the bad-input rows of the ops here.
func biMathExtra() map[string]biOp {
	t := map[string]biOp{}
	blas := func(f func(c, a, b *Tensor, beta, alpha float64) *Tensor, sa, sb, sc []int, huge func(dev Device) *Tensor) biOp {
		return biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, sc...), biF(dev, sa...), biF(dev, sb...)} },
			call: func(a []*Tensor) *Tensor { return f(a[0], a[1], a[2], 0.5, 2) }, kinds: "fss", huge: huge}
	}
	t["addmm"] = blas(Addmm, []int{2, 3}, []int{3, 4}, []int{2, 4}, func(dev Device) *Tensor {
		return Addmm(biF(dev, 1), biBig(dev, biHuge, 1), biBig(dev, 1, biHuge), 1, 1)
	})
	t["addmv"] = blas(Addmv, []int{2, 3}, []int{3}, []int{2}, nil)
	t["baddbmm"] = blas(Baddbmm, []int{2, 2, 3}, []int{2, 3, 2}, []int{2, 2, 2}, func(dev Device) *Tensor {
		return Baddbmm(biF(dev, 1), biBig(dev, 1, biHuge, 1), biBig(dev, 1, 1, biHuge), 1, 1)
	})
	t["addbmm"] = blas(Addbmm, []int{2, 2, 3}, []int{2, 3, 2}, []int{2, 2}, func(dev Device) *Tensor {
		return Addbmm(biF(dev, 1), biBig(dev, 1, biHuge, 1), biBig(dev, 1, 1, biHuge), 1, 1)
	})
	t["addr"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 2), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return Addr(a[0], a[1], a[2], 0.5, 2) }, kinds: "aaa",
		huge: func(dev Device) *Tensor { return Addr(biF(dev, 1), biBig(dev, biHuge), biBig(dev, biHuge), 1, 1) }}
	for name, f := range map[string]func(x, a, b *Tensor, v float64) *Tensor{"addcmul": Addcmul, "addcdiv": Addcdiv} {
		t[name] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3), biF(dev, 2, 1)} },
			call: func(a []*Tensor) *Tensor { return f(a[0], a[1], a[2], 0.5) }, kinds: "aaa",
			huge: func(dev Device) *Tensor { return f(biF(dev, 1), biBig(dev, biHuge, 1), biBig(dev, biHuge), 1) }}
	}
	t["var_mean"] = biReduce(func(x *Tensor, d int) *Tensor { v, m := x.VarMean(true, d); m.Release(); return v })
	t["std_mean"] = biReduce(func(x *Tensor, d int) *Tensor { s, m := x.StdMeanKeepDim(false, d); s.Release(); return m })
	covHuge := func(dev Device) *Tensor { return biBig(dev, biHuge, 2).Cov(1, nil, nil) }
	t["cov"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Cov(1, nil, nil) }, kinds: "a", huge: covHuge}
	t["cov_fweights"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{1, 0, 2}, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Cov(1, a[1], nil) }, kinds: "aI"}
	t["cov_aweights"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Cov(0, nil, a[1]) }, kinds: "aF"}
	t["cov_weights"] = biOp{args: func(dev Device) []*Tensor {
		return []*Tensor{biF(dev, 2, 3), biIdx(dev, []int32{1, 0, 2}, 3), biF(dev, 3)}
	}, call: func(a []*Tensor) *Tensor { return a[0].Cov(1, a[1], a[2]) }, kinds: "aIF"}
	t["corrcoef"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Corrcoef() }, kinds: "a",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, 2).Corrcoef() }}
	hugeInts := func(dev Device) *Tensor { return Ones(dev, Int32, 1, 1).Expand(biHuge, biHuge) }
	oneInt := func(dev Device) *Tensor { return FromSlice(CPU, []int32{3}, 1, 1).To(dev) }
	for name, f := range map[string]func(x, y *Tensor) *Tensor{
		"bitwise_and": (*Tensor).BitwiseAnd, "bitwise_or": (*Tensor).BitwiseOr, "bitwise_xor": (*Tensor).BitwiseXor,
		"bitwise_left_shift": (*Tensor).BitwiseLeftShift, "bitwise_right_shift": (*Tensor).BitwiseRightShift,
		"gcd": (*Tensor).Gcd, "lcm": (*Tensor).Lcm,
	} {
		t[name] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biInts(dev), biInts(dev).Narrow(0, 1, 1)} },
			call: func(a []*Tensor) *Tensor { return f(a[0], a[1]) }, kinds: "ii",
			huge: func(dev Device) *Tensor { return f(hugeInts(dev), oneInt(dev)) }}
	}
	t["bitwise_not"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biInts(dev)} },
		call: func(a []*Tensor) *Tensor { return a[0].BitwiseNot() }, kinds: "i",
		huge: func(dev Device) *Tensor { return hugeInts(dev).BitwiseNot() }}
	t["floor_divide"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biInts(dev), biInts(dev).Narrow(0, 1, 1)} },
		call: func(a []*Tensor) *Tensor { return a[0].FloorDivide(a[1]) }, kinds: "aa",
		huge: func(dev Device) *Tensor { return hugeInts(dev).FloorDivide(oneInt(dev)) }}
	t["floor_divide_float"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].FloorDivide(a[1]) }, kinds: "aa",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).FloorDivide(biF(dev, 1)) }}
	t["logical_xor"] = biBinary((*Tensor).LogicalXor, "aa")
	t["signbit"] = biAnyDType(biUnary((*Tensor).Signbit))
	t["xlog1py"] = biBinary((*Tensor).Xlog1py, "aa")
	t["ldexp"] = biBinary((*Tensor).Ldexp, "aa")
	t["frexp"] = biUnary(func(x *Tensor) *Tensor { m, e := x.Frexp(); e.Release(); return m })
	t["frexp_exponent"] = biUnary(func(x *Tensor) *Tensor { m, e := x.Frexp(); m.Release(); return e })
	t["mvlgamma"] = biUnary(func(x *Tensor) *Tensor { return x.Mvlgamma(2) })
	t["isin"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return Isin(a[0], a[1], true) }, kinds: "aa",
		huge: func(dev Device) *Tensor { return Isin(biBig(dev, biHuge, biHuge), biBig(dev, biHuge), false) }}
	t["renorm"] = biReduce(func(x *Tensor, d int) *Tensor { return x.Renorm(2, d, 1) })
	t["nanquantile"] = biReduce(func(x *Tensor, d int) *Tensor { return x.NanQuantile(0.25, "linear", d) })
	t["nanmedian"] = biReduce(func(x *Tensor, d int) *Tensor { v, i := x.NanMedianDim(d, false); i.Release(); return v })
	t["histogram"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { h, e := a[0].HistogramRange(4, 0, 2, a[1], true); e.Release(); return h }, kinds: "fS",
		huge: func(dev Device) *Tensor { h, e := biF(dev, 3).Histogram(1<<40, nil, false); e.Release(); return h }}
	return t
}

// TestMathExtraErrors checks the errors that name the op and the argument
// at fault, and that the checks that read values (an integer divisor of
// zero, a negative weight) refuse before anything runs.
func TestMathExtraErrors(t *testing.T) {
	f := func(s ...int) *Tensor { return biF(CPU, s...) }
	i := func(v ...int32) *Tensor { return FromSlice(CPU, v, len(v)) }
	for _, c := range []struct {
		name    string
		out     *Tensor
		kind    error
		op, arg string
	}{
		{"addmm inner", Addmm(f(2, 2), f(2, 3), f(2, 2), 1, 1), ErrShape, "addmm", "mat2"},
		{"addmm input", Addmm(f(3, 2), f(2, 3), f(3, 2), 1, 1), ErrShape, "addmm", "input"},
		{"addmm dtype", Addmm(f(2, 2), f(2, 3), f(3, 2).Cast(Float64), 1, 1), ErrDType, "addmm", "mat2"},
		{"addmv rank", Addmv(f(2), f(2, 3), f(3, 1), 1, 1), ErrShape, "addmv", "vec"},
		{"baddbmm batch", Baddbmm(f(2, 2), f(3, 2, 3), f(1, 3, 2), 1, 1), ErrShape, "baddbmm", "batch2"},
		{"addr beta", Addr(f(2, 3).Cast(Int32), i(1, 2), i(1, 2, 3), 0.5, 1), ErrValue, "addr", "beta"},
		{"addcdiv ints", Addcdiv(f(3), i(1, 2, 3), i(1, 2, 3), 1), ErrDType, "addcdiv", "tensor2"},
		{"addcmul shape", Addcmul(f(2, 3), f(2), f(3), 1), ErrShape, "addcmul", "tensor1"},
		{"cov rank", f(2, 2, 2).Cov(1, nil, nil), ErrShape, "cov", "x"},
		{"cov fweights dtype", f(2, 3).Cov(1, f(3), nil), ErrDType, "cov", "fweights"},
		{"cov negative", f(2, 3).Cov(1, i(1, -1, 2), nil), ErrValue, "cov", "fweights"},
		{"cov aweights length", f(2, 3).Cov(1, nil, f(2)), ErrShape, "cov", "aweights"},
		{"bitwise float", f(3).BitwiseAnd(i(1, 2, 3)), ErrDType, "bitwise_and", "x"},
		{"shift bool", i(1).GtScalar(0).BitwiseLeftShift(i(1).GtScalar(0)), ErrDType, "bitwise_left_shift", "x"},
		{"floor_divide zero", i(5, 1).FloorDivide(i(2, 0)), ErrValue, "floor_divide", "y"},
		{"gcd float", i(4).Gcd(f(1)), ErrDType, "gcd", "y"},
	} {
		moreOpsErr(t, c.name, c.out.Err(), c.kind, c.op, c.arg)
	}
	h, _ := f(3).Cast(Int32).Histogram(2, nil, false)
	moreOpsErr(t, "histogram int", h.Err(), ErrDType, "histogram", "x")
	h, _ = FromSlice(CPU, []float32{1, float32(math.NaN())}).Histogram(2, nil, false)
	moreOpsErr(t, "histogram nan", h.Err(), ErrValue, "histogram", "range")
	h, _ = f(3).HistogramRange(2, 3, 1, nil, false)
	moreOpsErr(t, "histogram range", h.Err(), ErrValue, "histogram", "range")
	h, _ = f(3).Histogram(2, f(2), false)
	moreOpsErr(t, "histogram weight", h.Err(), ErrShape, "histogram", "weight")
	_, m := f(3).Cast(Int32).VarMean(true)
	moreOpsErr(t, "var_mean int", m.Err(), ErrDType, "var_mean", "x")
}

// TestMathExtraTorchRules holds the rules of torch 1.13 that the
// conformance cases show only in passing: beta = 0 reads no NaN, the shift
// count taken mod 32, and gcd and floor_divide of the least int64.
func TestMathExtraTorchRules(t *testing.T) {
	nan := FromSlice(CPU, []float32{float32(math.NaN())}, 1, 1)
	got, _ := Addmm(nan, Ones(CPU, Float32, 1, 2), Ones(CPU, Float32, 2, 1), 0, 1).Float32s()
	if len(got) != 1 || got[0] != 2 {
		t.Errorf("addmm with beta 0 and a NaN input: %v, want [2]", got)
	}
	x := FromSlice(CPU, []int32{5, 5, 5, -5}, 4)
	s := FromSlice(CPU, []int32{33, -1, 32, 70}, 4)
	l, _ := x.BitwiseLeftShift(s).Int32s()
	r, _ := x.BitwiseRightShift(s).Int32s()
	if want := []int32{10, math.MinInt32, 5, -320}; !equalInts(l, want) {
		t.Errorf("5 << {33, -1, 32}, -5 << 70: %v, want %v (torch 1.13's cpu)", l, want)
	}
	if want := []int32{2, 0, 5, -1}; !equalInts(r, want) {
		t.Errorf("5 >> {33, -1, 32}, -5 >> 70: %v, want %v", r, want)
	}
	a := FromSlice(CPU, []int64{math.MinInt64, math.MaxInt64, -987654321987654321}, 3)
	b := FromSlice(CPU, []int64{3, 7, 1000000007}, 3)
	q, _ := a.FloorDivide(b).Int64s()
	if want := []int64{-3074457345618258603, 1317624576693539401, -987654316}; !equalInts(q, want) {
		t.Errorf("floor_divide of large int64s: %v, want %v", q, want)
	}
}

func equalInts[T int32 | int64](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMathExtraLeaveNothing: a training step through each differentiable
// op here, and a call of each integer one, takes no new memory from the
// device's pool once warm, with the collector off.
func TestMathExtraLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 4, 6).To(dev).RequireGrad()
		y := RandN(CPU, Float32, 6, 4).To(dev)
		w := RandN(CPU, Float32, 4, 6).To(dev).Abs().AddScalar(0.5)
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"addmm": func(x *Tensor) *Tensor { return Addmm(x.Narrow(1, 0, 4), x, y, 0.5, 2) },
			"baddbmm": func(x *Tensor) *Tensor {
				return Baddbmm(x.Unsqueeze(0), x.Narrow(1, 0, 4).Unsqueeze(0), x.Unsqueeze(0), 1, 1)
			},
			"addbmm":   func(x *Tensor) *Tensor { return Addbmm(x.Narrow(1, 0, 4), x.Unsqueeze(0), y.Unsqueeze(0), 0, 1) },
			"addr":     func(x *Tensor) *Tensor { return Addr(x, x.Sum(1), x.Sum(0), 1, 0.5) },
			"addcmul":  func(x *Tensor) *Tensor { return Addcmul(x, x, w, 0.5) },
			"addcdiv":  func(x *Tensor) *Tensor { return Addcdiv(x, x, w, -2) },
			"var_mean": func(x *Tensor) *Tensor { v, m := x.VarMean(true, 1); return v.Add(m) },
			"cov":      func(x *Tensor) *Tensor { return x.Cov(1, nil, w.Narrow(0, 0, 1).Flatten(0, -1)) },
			"corrcoef": func(x *Tensor) *Tensor { return x.Corrcoef() },
			"xlog1py":  func(x *Tensor) *Tensor { return x.Xlog1py(w) },
			"ldexp":    func(x *Tensor) *Tensor { return x.Ldexp(x.Floor()) },
			"frexp":    func(x *Tensor) *Tensor { m, e := x.Frexp(); e.Release(); return m },
			"mvlgamma": func(x *Tensor) *Tensor { return x.Abs().AddScalar(2).Mvlgamma(3) },
			"renorm":   func(x *Tensor) *Tensor { return x.Renorm(2, 0, 1) },
			"nanq":     func(x *Tensor) *Tensor { return x.NanQuantile(0.3, "linear", 1) },
			"nanmed":   func(x *Tensor) *Tensor { v, i := x.NanMedianDim(1, false); i.Release(); return v },
			"nanmed0":  func(x *Tensor) *Tensor { return x.NanMedian() },
			"histogram": func(x *Tensor) *Tensor {
				h, e := x.Histogram(5, nil, true)
				e.Release()
				return x.Add(h.Sum())
			},
		} {
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
		n := FromSlice(CPU, []int32{3, -5, 7, 12, 1, -2}, 2, 3).To(dev)
		for name, f := range map[string]func(a *Tensor) *Tensor{
			"and":   func(a *Tensor) *Tensor { return a.BitwiseAnd(a.AddScalar(3)) },
			"xor":   func(a *Tensor) *Tensor { return a.BitwiseXor(a.AddScalar(3)) },
			"shift": func(a *Tensor) *Tensor { return a.BitwiseRightShift(a.Abs()) },
			"gcd":   func(a *Tensor) *Tensor { return a.Lcm(a.AddScalar(4)) },
			"floor": func(a *Tensor) *Tensor { return a.FloorDivide(a.AddScalar(20)) },
			"not":   func(a *Tensor) *Tensor { return a.BitwiseNot() },
		} {
			warmCallsTakeNothing(t, dev, name, func() *Tensor { return Compose(func(a []*Tensor) *Tensor { return f(a[0]) }, n) }, false)
		}
	}
}
