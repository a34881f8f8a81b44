package lathe

import (
	"errors"
	"math"
	"runtime/debug"
	"testing"
)

// Tests of the Bessel functions (ops_bessel.go) and the window functions
// (create_window.go) beyond the conformance suite (internal/conformance,
// windows.json and grad_windows.json, which compare their values and
// gradients with torch's on every device): their rows of the bad-input
// table, their errors, their memory, and the derivatives at 0.

// biBessel are the bad-input rows of the Bessel functions, which take any
// dtype (integers and bool are promoted to float32).
func biBessel() map[string]biOp {
	t := map[string]biOp{}
	for name, f := range map[string]func(*Tensor) *Tensor{
		"i0": (*Tensor).I0, "special_i0e": (*Tensor).I0e, "special_i1": (*Tensor).I1, "special_i1e": (*Tensor).I1e,
		"special_modified_bessel_k0": (*Tensor).ModifiedBesselK0, "special_modified_bessel_k1": (*Tensor).ModifiedBesselK1,
		"special_scaled_modified_bessel_k0": (*Tensor).ScaledModifiedBesselK0,
		"special_scaled_modified_bessel_k1": (*Tensor).ScaledModifiedBesselK1,
		"special_bessel_j0":                 (*Tensor).BesselJ0, "special_bessel_j1": (*Tensor).BesselJ1,
		"special_bessel_y0": (*Tensor).BesselY0, "special_bessel_y1": (*Tensor).BesselY1,
	} {
		t[name] = biAnyDType(biUnary(f))
	}
	return t
}

// besselDerivs is the first and second derivatives of f at xs (float64 on
// the cpu), by Grad with CreateGraph.
func besselDerivs(t *testing.T, f func(*Tensor) *Tensor, xs []float64) (d1, d2 []float64) {
	t.Helper()
	x := FromSlice(CPU, xs).RequireGrad()
	g, err := Grad(f(x).Sum(), []*Tensor{x}, CreateGraph())
	if err != nil {
		t.Fatal(err)
	}
	h, err := Grad(g[0].Sum(), []*Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ = g[0].Float64s()
	d2, _ = h[0].Float64s()
	return d1, d2
}

// TestBesselDerivativesAtZero checks the first and second derivatives at
// x = 0 against torch 1.13's formulas (i0' = i1, i0e' = i1e -
// sign(x)·i0e, i1' = i0 - i1/x → 1/2, i1e' = i0e - i1e·(sign(x) + 1/x) →
// 1/2, with sign(0) = 0), and near 0 against the series: the Chebyshev
// form in |x| gave i0” and i0e” 0 at x = 0 (torch: 1/2).
func TestBesselDerivativesAtZero(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      func(*Tensor) *Tensor
		d1, d2 float64 // at 0
	}{
		{"i0", (*Tensor).I0, 0, 0.5}, {"i0e", (*Tensor).I0e, 0, 0.5},
		{"i1", (*Tensor).I1, 0.5, 0}, {"i1e", (*Tensor).I1e, 0.5, 0},
	} {
		d1, d2 := besselDerivs(t, c.f, []float64{0, 1e-3, -1e-3})
		if math.Abs(d1[0]-c.d1) > 1e-12 || math.Abs(d2[0]-c.d2) > 1e-12 {
			t.Errorf("%s at 0: derivatives %v, %v; want %v, %v (torch's)", c.name, d1[0], d2[0], c.d1, c.d2)
		}
		// Near 0 by the series I0 = 1 + x²/4 + x⁴/64, I1 = x/2 + x³/16 (to
		// 1e-10 at 1e-3).
		for i, x := range []float64{1e-3, -1e-3} {
			a, s := math.Abs(x), math.Copysign(1, x)
			e := math.Exp(-a)
			i0, i0p, i0pp := 1+x*x/4+x*x*x*x/64, x/2+x*x*x/16, 0.5+3*x*x/16
			i1, i1p, i1pp := x/2+x*x*x/16, 0.5+3*x*x/16, 3*x/8
			want := map[string][2]float64{
				"i0": {i0p, i0pp}, "i1": {i1p, i1pp},
				"i0e": {e * (i0p - s*i0), e * (i0pp - 2*s*i0p + i0)},
				"i1e": {e * (i1p - s*i1), e * (i1pp - 2*s*i1p + i1)},
			}[c.name]
			if math.Abs(d1[i+1]-want[0]) > 1e-9 || math.Abs(d2[i+1]-want[1]) > 1e-9 {
				t.Errorf("%s at %g: derivatives %v, %v; want %v, %v", c.name, x, d1[i+1], d2[i+1], want[0], want[1])
			}
		}
	}
}

// TestBesselKDerivatives: the K functions' gradients, which torch's lack,
// are the expansions differentiated; they agree with the functions'
// identities K0' = -K1, K1' = -K0 - K1/x, (e^x K0)' = e^x(K0 - K1) and
// (e^x K1)' = e^x(K1 - K0 - K1/x), and K0's second derivative K0 + K1/x,
// to 1e-12 of the values on both sides of the branch at 2 (float64, cpu).
func TestBesselKDerivatives(t *testing.T) {
	xs := []float64{0.01, 0.3, 1.5, 1.99, 2.01, 3, 10, 40, 300}
	k0, _ := FromSlice(CPU, xs).ModifiedBesselK0().Float64s()
	k1, _ := FromSlice(CPU, xs).ModifiedBesselK1().Float64s()
	check := func(name string, got, want []float64) {
		t.Helper()
		for i, x := range xs {
			if math.Abs(got[i]-want[i]) > 1e-12*math.Abs(want[i]) {
				t.Errorf("%s at %v = %v, want %v (%.1e off)", name, x, got[i], want[i], math.Abs(got[i]-want[i])/math.Abs(want[i]))
			}
		}
	}
	want := func(f func(i int, x float64) float64) []float64 {
		w := make([]float64, len(xs))
		for i, x := range xs {
			w[i] = f(i, x)
		}
		return w
	}
	d1, d2 := besselDerivs(t, (*Tensor).ModifiedBesselK0, xs)
	check("K0'", d1, want(func(i int, _ float64) float64 { return -k1[i] }))
	check("K0''", d2, want(func(i int, x float64) float64 { return k0[i] + k1[i]/x }))
	d1, _ = besselDerivs(t, (*Tensor).ModifiedBesselK1, xs)
	check("K1'", d1, want(func(i int, x float64) float64 { return -k0[i] - k1[i]/x }))
	d1, _ = besselDerivs(t, (*Tensor).ScaledModifiedBesselK0, xs)
	check("(e^x K0)'", d1, want(func(i int, x float64) float64 { return math.Exp(x) * (k0[i] - k1[i]) }))
	d1, _ = besselDerivs(t, (*Tensor).ScaledModifiedBesselK1, xs)
	check("(e^x K1)'", d1, want(func(i int, x float64) float64 { return math.Exp(x) * (k1[i] - k0[i] - k1[i]/x) }))
}

// TestBesselDTypes: integers and bool give float32, the 16-bit floats
// keep their dtype, as torch's.
func TestBesselDTypes(t *testing.T) {
	for _, x := range []*Tensor{FromSlice(CPU, []int32{1, 2}), FromSlice(CPU, []int64{1, 2}), FromSlice(CPU, []bool{true, false}),
		FromSlice(CPU, []uint8{1, 2})} {
		y := x.I0()
		if y.Err() != nil || y.DType() != Float32 {
			t.Errorf("I0 of %v: %v %v, want float32", x.DType(), y.DType(), y.Err())
			continue
		}
		v, _ := y.Cast(Float64).Float64s()
		if math.Abs(v[0]-1.2660658777520082) > 1e-6 {
			t.Errorf("I0 of %v 1: %v", x.DType(), v[0])
		}
	}
	for _, dt := range []DType{Float16, BFloat16} {
		if y := Ones(CPU, dt, 2).I1e(); y.Err() != nil || y.DType() != dt {
			t.Errorf("I1e of %v: %v %v", dt, y.DType(), y.Err())
		}
	}
}

// TestBesselLeaveNothing: a training step through each Bessel function
// takes no new memory from the device's pool once warm, with the
// collector off.
func TestBesselLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 4, 6).MulScalar(6).To(dev).RequireGrad()
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"i0": (*Tensor).I0, "i0e": (*Tensor).I0e, "i1": (*Tensor).I1, "i1e": (*Tensor).I1e,
			"k0": (*Tensor).ModifiedBesselK0, "k1": (*Tensor).ModifiedBesselK1,
			"k0e": (*Tensor).ScaledModifiedBesselK0, "k1e": (*Tensor).ScaledModifiedBesselK1,
			"j0": (*Tensor).BesselJ0, "j1": (*Tensor).BesselJ1, "y0": (*Tensor).BesselY0, "y1": (*Tensor).BesselY1,
		} {
			warmStepsTakeNothing(t, dev, name, x, f, true)
			// Without a gradient, where the recurrence releases as it goes.
			xd := x.Detach()
			step := func() { f(xd).Release() }
			step()
			step()
			s0, _ := MemoryStats(dev)
			step()
			step()
			s1, _ := MemoryStats(dev)
			if s1.Allocated > s0.Allocated || s1.Allocs-s1.CacheHits != s0.Allocs-s0.CacheHits {
				t.Errorf("%s %s without a gradient: two warm calls took %d bytes and %d new blocks", dev, name,
					s1.Allocated-s0.Allocated, (s1.Allocs-s1.CacheHits)-(s0.Allocs-s0.CacheHits))
			}
		}
	}
}

// TestWindowErrors: each bad length, dtype or option is an error value
// naming the window and the argument.
func TestWindowErrors(t *testing.T) {
	for _, c := range []struct {
		what    string
		got     *Tensor
		kind    error
		op, arg string
	}{
		{"negative length", HannWindow(CPU, -1), ErrValue, "hann_window", "window_length"},
		{"int64", HammingWindow(CPU, 4, WindowDType(Int64)), ErrDType, "hamming_window", "dtype"},
		{"bool", BartlettWindow(CPU, 4, WindowDType(Bool)), ErrDType, "bartlett_window", "dtype"},
		{"no dtype", BlackmanWindow(CPU, 4, WindowDType(DType(200))), ErrDType, "blackman_window", "dtype"},
		{"alpha of hann", HannWindow(CPU, 4, WindowAlpha(0.5)), ErrValue, "hann_window", "alpha"},
		{"beta of blackman", BlackmanWindow(CPU, 4, WindowBeta(0.5)), ErrValue, "blackman_window", "beta"},
		{"alpha of kaiser", KaiserWindow(CPU, 4, WindowAlpha(0.5)), ErrValue, "kaiser_window", "alpha"},
		{"NaN beta", KaiserWindow(CPU, 4, WindowBeta(math.NaN())), ErrValue, "kaiser_window", "beta"},
		{"Inf alpha", HammingWindow(CPU, 4, WindowAlpha(math.Inf(1))), ErrValue, "hamming_window", "alpha"},
	} {
		moreOpsErr(t, c.what, c.got.Err(), c.kind, c.op, c.arg)
	}
	for _, s := range DeviceStatus() {
		if !s.Available || hasFloat64(s.Device) {
			continue
		}
		if err := HannWindow(s.Device, 4, WindowDType(Float64)).Err(); !errors.Is(err, ErrUnsupported) {
			t.Errorf("float64 window on %s: %v, want ErrUnsupported", s.Device, err)
		}
	}
}

// TestWindowShapes: lengths 0 and 1, the default dtype, periodic as the
// symmetric window one longer without its last value, and a large Kaiser
// β (where torch's overflows to NaN) finite.
func TestWindowShapes(t *testing.T) {
	if w := HannWindow(CPU, 0); w.Err() != nil || w.Numel() != 0 || w.DType() != Float32 {
		t.Errorf("length 0: %v %v", w, w.Err())
	}
	for _, f := range []func(Device, int, ...SignalWindowOption) *Tensor{HannWindow, HammingWindow, BlackmanWindow, BartlettWindow, KaiserWindow} {
		one, _ := f(CPU, 1, WindowPeriodic(false)).Cast(Float64).Float64s()
		p, _ := f(CPU, 7, WindowDType(Float64)).Float64s()
		s, _ := f(CPU, 8, WindowDType(Float64), WindowPeriodic(false)).Float64s()
		if len(one) != 1 || one[0] != 1 || len(p) != 7 || len(s) != 8 {
			t.Fatalf("lengths: %v %v %v", one, p, s)
		}
		for i := range p {
			if p[i] != s[i] {
				t.Errorf("periodic %v is not the symmetric %v without its last", p, s)
				break
			}
		}
	}
	k, _ := KaiserWindow(CPU, 5, WindowBeta(1000), WindowDType(Float64)).Float64s()
	for _, v := range k {
		if math.IsNaN(v) || v < 0 || v > 1 {
			t.Errorf("kaiser β=1000: %v", k)
			break
		}
	}
}

// TestWindowsLeaveNothing: with the collector off, warm calls of each
// window function, their results released, take nothing from the
// device's pool, nor do refused calls.
func TestWindowsLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		for name, f := range map[string]func() *Tensor{
			"hann":     func() *Tensor { return HannWindow(dev, 64) },
			"hamming":  func() *Tensor { return HammingWindow(dev, 64, WindowAlpha(0.5)) },
			"blackman": func() *Tensor { return BlackmanWindow(dev, 64, WindowPeriodic(false)) },
			"bartlett": func() *Tensor { return BartlettWindow(dev, 63) },
			"kaiser":   func() *Tensor { return KaiserWindow(dev, 64, WindowBeta(5)) },
			"refused":  func() *Tensor { return HannWindow(dev, -2) },
		} {
			warmCallsTakeNothing(t, dev, name, f, name == "refused")
		}
	}
}

// TestBesselFewTemporaries: without a gradient to record, a Bessel
// function of a long tensor holds a few temporaries of its size at a
// time, not three per Chebyshev coefficient (about 180 for I0) until it
// returns: the cpu pool, cold for this size, hands out few new blocks.
func TestBesselFewTemporaries(t *testing.T) {
	x := RandN(CPU, Float32, 300007).MulScalar(10)
	s0, _ := MemoryStats(CPU)
	y := x.I0()
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	s1, _ := MemoryStats(CPU)
	if n := (s1.Allocs - s1.CacheHits) - (s0.Allocs - s0.CacheHits); n > 40 {
		t.Errorf("I0 of 300007 elements took %d new blocks, want at most 40", n)
	}
}
