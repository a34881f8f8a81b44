package lathe

import (
	"errors"
	"math"
	"runtime/debug"
	"testing"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Tests of torch.special's functions of ops_special3.go and ops_zeta.go
// beyond the conformance suite (internal/conformance, special.json and
// grad_special.json, which compare values and gradients with torch's on
// every device): their rows of the bad-input table, dtypes, errors,
// memory, and where lathe is more accurate than torch (ndtr's left tail,
// erfcx's gradient for large x) or differentiable where torch is not
// (spherical_bessel_j0).

// biSpecial are the bad-input rows of the functions, which take any dtype
// (integers and bool are promoted to float32), but multigammaln (floats,
// as Mvlgamma).
func biSpecial() map[string]biOp {
	t := map[string]biOp{}
	for name, f := range map[string]func(*Tensor) *Tensor{
		"special_erfcx": (*Tensor).Erfcx, "special_entr": (*Tensor).Entr, "special_ndtr": (*Tensor).Ndtr,
		"special_log_ndtr": (*Tensor).LogNdtr, "special_ndtri": (*Tensor).Ndtri,
		"special_spherical_bessel_j0": (*Tensor).SphericalBesselJ0,
		"special_airy_ai":             (*Tensor).AiryAi,
		"polygamma":                   func(x *Tensor) *Tensor { return x.Polygamma(3) },
	} {
		t[name] = biAnyDType(biUnary(f))
	}
	// polygamma of integers, cast to float32 first.
	t["polygamma_promoted"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{Ones(dev, Int32, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Polygamma(2) }, kinds: "a",
		huge: func(dev Device) *Tensor { return Ones(dev, Int32, 1, 1).Expand(biHuge, biHuge).Polygamma(2) }}
	// Ai', AiryAi's gradient op, of floats.
	t["airy_ai_prime"] = biUnary(func(x *Tensor) *Tensor { return apply(ops.AiryAiPrime, ops.Params{}, x) })
	t["special_airy_ai_promoted"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{Ones(dev, Int32, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].AiryAi() }, kinds: "a",
		huge: func(dev Device) *Tensor { return Ones(dev, Int32, 1, 1).Expand(biHuge, biHuge).AiryAi() }}
	t["special_multigammaln"] = biUnary(func(x *Tensor) *Tensor { return x.Multigammaln(2) })
	for name, f := range orthoPolyMethods {
		t[name] = biAnyDType(biUnary(func(x *Tensor) *Tensor { return f(x, 3) }))
		// of integers, cast to float32 first.
		t[name+"_promoted"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{Ones(dev, Int32, 2, 3)} },
			call: func(a []*Tensor) *Tensor { return f(a[0], 3) }, kinds: "a",
			huge: func(dev Device) *Tensor { return f(Ones(dev, Int32, 1, 1).Expand(biHuge, biHuge), 3) }}
	}
	t["special_zeta"] = biBinary(Zeta, "aa")
	t["igamma"] = biBinary(Gammainc, "ff")
	t["igammac"] = biBinary(Gammaincc, "ff")
	t["nextafter"] = biBinary((*Tensor).Nextafter, "aa")
	return t
}

// specialUnaries are the one-argument functions, by torch's name.
func specialUnaries() map[string]func(*Tensor) *Tensor {
	return map[string]func(*Tensor) *Tensor{
		"special_erfcx": (*Tensor).Erfcx, "special_entr": (*Tensor).Entr, "special_ndtr": (*Tensor).Ndtr,
		"special_log_ndtr": (*Tensor).LogNdtr, "special_ndtri": (*Tensor).Ndtri,
		"special_spherical_bessel_j0": (*Tensor).SphericalBesselJ0,
		"polygamma":                   func(x *Tensor) *Tensor { return x.Polygamma(2) },
	}
}

// TestSpecialDTypes: integers and bool give float32, the 16-bit floats
// keep their dtype (computed in float32 and rounded once).
func TestSpecialDTypes(t *testing.T) {
	for name, f := range specialUnaries() {
		for _, x := range []*Tensor{FromSlice(CPU, []int64{1, 2}), FromSlice(CPU, []bool{true, false}), FromSlice(CPU, []uint8{1, 2})} {
			y := f(x)
			if y.Err() != nil || y.DType() != Float32 {
				t.Errorf("%s of %v: %v %v, want float32", name, x.DType(), y.DType(), y.Err())
				continue
			}
			want, _ := f(FromSlice(CPU, []float32{1})).Cast(Float64).Float64s()
			if v, _ := y.Cast(Float64).Float64s(); !(v[0] == want[0] || math.IsNaN(v[0]) && math.IsNaN(want[0])) {
				t.Errorf("%s of %v 1: %v, want %v", name, x.DType(), v[0], want[0])
			}
		}
		for _, dt := range []DType{Float16, BFloat16} {
			x := FromSlice(CPU, []float32{0.25, 0.5}).Cast(dt)
			y := f(x)
			want := f(FromSlice(CPU, []float32{0.25, 0.5})).Cast(dt)
			a, _ := y.Cast(Float64).Float64s()
			b, _ := want.Cast(Float64).Float64s()
			if y.Err() != nil || y.DType() != dt || a[0] != b[0] || a[1] != b[1] {
				t.Errorf("%s of %v: %v %v %v, want %v (float32's rounded once)", name, dt, y.DType(), a, y.Err(), b)
			}
		}
	}
	if z := Zeta(FromSlice(CPU, []int64{2}), FromSlice(CPU, []int32{1})); z.DType() != Float32 || math.Abs(item(t, z)-math.Pi*math.Pi/6) > 1e-6 {
		t.Errorf("zeta of integers: %v %v", z.DType(), z)
	}
}

func item(t *testing.T, x *Tensor) float64 {
	t.Helper()
	v, err := x.Cast(Float64).Float64s()
	if err != nil || len(v) != 1 {
		t.Fatalf("item: %v %v", v, err)
	}
	return v[0]
}

// TestSpecialErrors: a negative polygamma order, a nextafter of integers
// and zeta's shapes that do not broadcast are refused, naming the
// argument.
func TestSpecialErrors(t *testing.T) {
	x := FromSlice(CPU, []float32{1, 2, 3})
	for _, c := range []struct {
		name string
		got  *Tensor
		kind error
		arg  string
	}{
		{"polygamma n=-1", x.Polygamma(-1), ErrValue, "n"},
		{"nextafter int", FromSlice(CPU, []int32{1}).Nextafter(FromSlice(CPU, []int32{2})), ErrDType, "x"},
		{"zeta shapes", Zeta(x, FromSlice(CPU, []float32{1, 2})), ErrShape, "q"},
		{"multigammaln p=0", x.Multigammaln(0), ErrValue, "p"},
	} {
		err := c.got.Err()
		var e *Error
		if !errors.Is(err, c.kind) || !errors.As(err, &e) || e.Arg != c.arg {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.kind, c.arg)
		}
	}
	if err := x.Multigammaln(2).Err(); err != nil {
		t.Error("multigammaln p=2 of [1 2 3]: no error expected")
	}
}

// TestSpecialTails: where torch 1.13 loses the digits lathe keeps. ndtr
// is erfc(-x/√2)/2 (torch's (1 + erf)/2 is 0 from -9.3 in float64),
// log_ndtr far left, erfcx for large x and its gradient 2x·erfcx - 2/√π
// (which torch's formula loses to cancellation: -5.64188e-11 at 1e5 where
// it is -5.641896e-11), and erfcx's overflow for negative x.
func TestSpecialTails(t *testing.T) {
	xs := []float64{-5, -10, -20, -37}
	nd, _ := FromSlice(CPU, xs).Ndtr().Float64s()
	for i, x := range xs {
		// x/√2 is rounded first (as torch's), which costs x²·ε relatively.
		if want := math.Erfc(-x/math.Sqrt2) / 2; math.Abs(nd[i]-want) > 1e-15*x*x*want {
			t.Errorf("ndtr(%v) = %v, want %v", x, nd[i], want)
		}
	}
	// log_ndtr(x) → -x²/2 - ln(-x) - ln √(2π) - 1/x² + …
	for _, x := range []float64{-1e3, -1e5} {
		got := item(t, FromSlice(CPU, []float64{x}).LogNdtr())
		want := -x*x/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) - 1/(x*x)
		if math.Abs(got-want) > 1e-14*math.Abs(want) {
			t.Errorf("log_ndtr(%v) = %v, want %v", x, got, want)
		}
	}
	for _, x := range []float64{1e5, 1e10, 1e200} {
		xt := FromSlice(CPU, []float64{x}).RequireGrad()
		y := xt.Erfcx()
		g, err := Grad(y.Sum(), []*Tensor{xt})
		if err != nil {
			t.Fatal(err)
		}
		// erfcx(x) = (1 - 1/(2x²))/(x√π), its derivative -(1 - 3/(2x²))/(x²√π).
		want, wantD := (1-0.5/(x*x))/(x*math.SqrtPi), -(1-1.5/(x*x))/(x*x*math.SqrtPi)
		if v, d := item(t, y), item(t, g[0]); math.Abs(v-want) > 1e-14*want || math.Abs(d-wantD) > 1e-13*math.Abs(wantD) {
			t.Errorf("erfcx(%v) = %v, derivative %v; want %v, %v", x, v, d, want, wantD)
		}
	}
	v, _ := FromSlice(CPU, []float64{-27, math.Inf(-1), math.Inf(1)}).Erfcx().Float64s()
	if !math.IsInf(v[0], 1) || !math.IsInf(v[1], 1) || v[2] != 0 {
		t.Errorf("erfcx(-27, -Inf, +Inf) = %v, want +Inf, +Inf, 0", v)
	}
	v, _ = FromSlice(CPU, []float32{-9.5, -9}).Erfcx().Cast(Float64).Float64s()
	if !math.IsInf(v[0], 1) || math.Abs(v[1]-2*math.Exp(81)) > 1e-6*2*math.Exp(81) {
		t.Errorf("float32 erfcx(-9.5, -9) = %v, want +Inf, %v", v, 2*math.Exp(81))
	}
}

// TestSphericalBesselJ0Derivatives: its first and second derivatives are
// (x cos x - sin x)/x² and ((2 - x²) sin x - 2x cos x)/x³, -x/3 and -1/3
// near 0 (torch records none).
func TestSphericalBesselJ0Derivatives(t *testing.T) {
	xs := []float64{0, 1e-3, 0.3, 0.5, -0.7, 2, 10, -30}
	d1, d2 := besselDerivs(t, (*Tensor).SphericalBesselJ0, xs)
	for i, x := range xs {
		w1, w2 := -x/3+x*x*x/30, -1.0/3+x*x/10
		if math.Abs(x) > 0.1 {
			s, c := math.Sincos(x)
			w1, w2 = (x*c-s)/(x*x), ((2-x*x)*s-2*x*c)/(x*x*x)
		}
		if math.Abs(d1[i]-w1) > 1e-12 || math.Abs(d2[i]-w2) > 1e-10 {
			t.Errorf("j0 at %v: derivatives %v, %v; want %v, %v", x, d1[i], d2[i], w1, w2)
		}
	}
}

// TestZetaGradient: q's gradient is -x·zeta(x + 1, q), x's none (torch's
// refuses one), and polygamma(n)'s is polygamma(n + 1).
func TestZetaGradient(t *testing.T) {
	x := FromSlice(CPU, []float64{2, 3, 4.5}).RequireGrad()
	q := FromSlice(CPU, []float64{0.5, 2, 7}).RequireGrad()
	g, err := Grad(Zeta(x, q).Sum(), []*Tensor{q})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := g[0].Float64s()
	want, _ := Zeta(x.Detach().AddScalar(1), q.Detach()).Mul(x.Detach()).Neg().Float64s()
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-13*math.Abs(want[i]) {
			t.Errorf("zeta's q gradient: %v, want %v", got, want)
			break
		}
	}
	if _, err := Grad(Zeta(x, q).Sum(), []*Tensor{x}); err == nil {
		t.Error("zeta's x gradient: want an error (x is not differentiated)")
	}
	p := FromSlice(CPU, []float64{0.3, 1, 2.5, 11, -1.5}).RequireGrad()
	for n := 0; n < 4; n++ {
		g, err := Grad(p.Polygamma(n).Sum(), []*Tensor{p})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := g[0].Float64s()
		want, _ := p.Detach().Polygamma(n + 1).Float64s()
		for i := range got {
			// n = 0 is digamma's series differentiated, n = 1 zeta's.
			if math.Abs(got[i]-want[i]) > 1e-9*math.Abs(want[i]) {
				t.Errorf("polygamma(%d)'s gradient: %v, want %v", n, got, want)
				break
			}
		}
	}
}

// TestNextafterFloat16: float16 steps by its own ulp (torch's cpu refuses
// it): 1 → 1 + 2^-10, 1 → 1 - 2^-11, 0 → 2^-24, 65504 → +Inf, +Inf → 65504.
func TestNextafterFloat16(t *testing.T) {
	inf := math.Inf(1)
	x := FromSlice(CPU, []float32{1, 1, 0, 65504, float32(inf)}).Cast(Float16)
	y := FromSlice(CPU, []float32{2, 0, 1, float32(inf), 0}).Cast(Float16)
	got, _ := x.Nextafter(y).Cast(Float64).Float64s()
	want := []float64{1 + math.Ldexp(1, -10), 1 - math.Ldexp(1, -11), math.Ldexp(1, -24), inf, 65504}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("float16 nextafter: %v, want %v", got, want)
			break
		}
	}
}

// TestSpecialLeaveNothing: a training step through each function takes no
// new memory from the device's pool once warm, with the collector off, nor
// does a call of nextafter (which has no gradient).
func TestSpecialLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 3, 4).To(dev).RequireGrad()
		fs := specialUnaries()
		fs["polygamma1"] = func(x *Tensor) *Tensor { return x.Polygamma(1) }
		fs["polygamma0"] = func(x *Tensor) *Tensor { return x.Polygamma(0) }
		fs["special_zeta"] = func(x *Tensor) *Tensor { return Zeta(x.Abs().AddScalar(1.5), x.Abs().AddScalar(0.5)) }
		fs["igamma"] = func(x *Tensor) *Tensor { return Gammainc(x.Abs().AddScalar(0.5), x.Abs()) }
		fs["igammac"] = func(x *Tensor) *Tensor { return Gammaincc(x.Abs().AddScalar(0.5), x.Abs()) }
		fs["special_multigammaln"] = func(x *Tensor) *Tensor { return x.Abs().AddScalar(2).Multigammaln(2) }
		for name, f := range orthoPolyMethods {
			fs[name] = func(x *Tensor) *Tensor { return f(x, 5) }
		}
		fs["special_airy_ai"] = (*Tensor).AiryAi
		for name, f := range fs {
			if name == "special_ndtri" {
				f = func(x *Tensor) *Tensor { return x.Sigmoid().Ndtri() }
			}
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
		y := RandN(CPU, Float32, 4).To(dev)
		warmCallsTakeNothing(t, dev, "nextafter", func() *Tensor { return x.Detach().Nextafter(y) }, false)
	}
}

// TestTrigammaWithoutGradient: Polygamma(1) of a tensor that needs no
// gradient takes its value alone, and gives the bits it gives on the
// graph (where zeta's gradient rides along), on every device, at the
// poles, ±Inf, near 0 and between the negative integers too.
func TestTrigammaWithoutGradient(t *testing.T) {
	vals := []float32{0.3, 1, 2.5, 11, -1.5, 0, -2, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-20, -3.7, 1e6, float32(math.NaN())}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, vals).To(dev)
			plain, err := x.Polygamma(1).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			graphed, err := x.Clone().RequireGrad().Polygamma(1).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i := range vals {
				if math.Float32bits(plain[i]) != math.Float32bits(graphed[i]) {
					t.Errorf("trigamma(%v): %v without a gradient, %v with one", vals[i], plain[i], graphed[i])
				}
			}
		})
	}
}
