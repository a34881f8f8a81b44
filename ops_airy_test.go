package lathe

import (
	"math"
	"testing"
)

var airyTable = [][3]float64{ // x, Ai(x), Ai'(x): build/airy/ref.py
	{-1000000.0, -0.0021912611413430574, 17.706164485139947},
	{-1000.0, 0.05597189577301992, 2.6330710195241287},
	{-100.5, 0.027927645277987353, -1.7642042712134214},
	{-30.0, -0.08796818845684216, 1.228620602637485},
	{-10.0, 0.04024123848644319, 0.99626504413279},
	{-5.0, 0.35076100902411433, 0.32719281855444315},
	{-3.0, -0.37881429367765806, 0.3145837692165988},
	{-2.1, 0.16348451299929267, 0.6583406928143435},
	{-2.09, 0.17005055173203004, 0.654846906732163},
	{-2.0899999999999994, 0.17005055173203032, 0.6548469067321628},
	{-1.0, 0.5355608832923521, -0.01016056711664521},
	{-0.5, 0.4757280916105396, -0.20408167033954738},
	{-1e-10, 0.3550280539136992, -0.2588194037928068},
	{0.0, 0.3550280538878172, -0.2588194037928068},
	{1e-10, 0.3550280538619353, -0.2588194037928068},
	{0.5, 0.23169360648083348, -0.2249105326646839},
	{1.0, 0.13529241631288141, -0.1591474412967932},
	{2.0, 0.03492413042327438, -0.05309038443365363},
	{2.0899999999999994, 0.0304203183631984, -0.04708838543657827},
	{2.09, 0.03042031836319838, -0.04708838543657824},
	{2.1, 0.029952602115866523, -0.04645599403267459},
	{3.0, 0.006591139357460719, -0.011912976705951319},
	{5.0, 0.00010834442813607442, -0.0002474138908684625},
	{8.32, 1.863129074107169e-08, -5.428694738691471e-08},
	{10.0, 1.1047532552898686e-10, -3.5206336767389237e-10},
	{25.0, 8.116026824691387e-38, -4.066089337243281e-37},
	{26.0, 5.15301114519834e-40, -2.63246215787461e-39},
	{50.0, 4.5849417240748285e-104, -3.244331819828799e-103},
	{100.0, 2.6344821520881846e-291, -2.6351403616044097e-290},
	{103.8, 5.723435795366651e-308, -5.832544833029428e-307},
}

// TestAiryExact checks AiryAi and its gradient, Ai', against mpmath's
// values (build/airy/ref.py) on every device, in float64 where the device
// has it and float32 (at the points float32 holds): each branch on both
// sides of ±2.09, the oscillating tail to x = -1e6 and the decaying one to
// the last normal float64. An error is measured in ε·(1 + ζ) of the
// value's scale, ζ = 2/3·|x|^(3/2): the phase ζ + π/4 below -2.09 and the
// exponent e^-ζ above 2.09 keep ζ·ε of it; below 0 the scale is the
// envelope, |x|^∓1/4/√π for Ai and Ai', as the values oscillate through
// 0; from 0 to 2.09, where the series' two sums cancel, the value's times
// e^2ζ, the sums' size (Bi's) over Ai's.
func TestAiryExact(t *testing.T) {
	xs := make([]float64, len(airyTable))
	for i, r := range airyTable {
		xs[i] = r[0]
	}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			for _, dt := range []DType{Float64, Float32} {
				x := FromSlice(CPU, xs).Cast(dt).To(dev)
				if dt == Float64 && x.Err() != nil {
					continue // wgpu has no float64
				}
				x = x.RequireGrad()
				y := x.AiryAi()
				g, err := Grad(y.Sum(), []*Tensor{x})
				if err != nil {
					t.Fatal(err)
				}
				eps := 0x1p-52
				if dt == Float32 {
					eps = 0x1p-23
				}
				for k, out := range []*Tensor{y, g[0]} {
					got, err := out.To(CPU).Cast(Float64).Float64s()
					if err != nil {
						t.Fatal(err)
					}
					for i, r := range airyTable {
						want := r[1+k]
						if dt == Float32 && (float64(float32(r[0])) != r[0] || math.Abs(want) < 1e-37) {
							continue
						}
						scale, zeta := math.Abs(want), 2*math.Pow(math.Abs(r[0]), 1.5)/3
						switch {
						case r[0] < 0:
							scale = math.Pow(-r[0], []float64{-0.25, 0.25}[k]) / math.Sqrt(math.Pi)
						case r[0] < 2.09:
							scale *= math.Exp(2 * zeta) // the series' terms are Bi's size, e^2ζ times Ai's
						}
						if e := math.Abs(got[i]-want) / (eps * (1 + zeta) * scale); !(e <= 16) {
							t.Errorf("%v %s(%v) = %v, want %v (%.3g of ε·(1+ζ)·scale)", dt, []string{"Ai", "Ai'"}[k], r[0], got[i], want, e)
						}
					}
				}
			}
		})
	}
}

// TestAiryHostile: Ai and Ai' at ±Inf are 0 and at NaN NaN; where the
// phase keeps no digit (x below -2.6e10, -5.4e4 in float32 on cuda and
// wgpu) they are 0; integers promote to float32; and the second
// derivative is x·Ai(x), Airy's equation, on every device.
func TestAiryHostile(t *testing.T) {
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, []float64{math.Inf(1), math.Inf(-1), math.NaN(), -1e38, 1e38, -1e12}).Cast(Float32).To(dev).RequireGrad()
			y := x.AiryAi()
			d, err := Grad(y.Sum(), []*Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			for k, out := range []*Tensor{y, d[0]} {
				got, err := out.To(CPU).Cast(Float64).Float64s()
				if err != nil || got[0] != 0 || got[1] != 0 || !math.IsNaN(got[2]) || got[3] != 0 || got[4] != 0 || got[5] != 0 {
					t.Errorf("%s(Inf, -Inf, NaN, -1e38, 1e38, -1e12) = %v, %v", []string{"Ai", "Ai'"}[k], got, err)
				}
			}
			if y := Ones(dev, Int64, 3).AiryAi(); y.Err() != nil || y.DType() != Float32 {
				t.Errorf("Ai of int64: %v %v", y.DType(), y.Err())
			}
			w := FromSlice(CPU, []float32{-3, -0.5, 0, 1.5, 4}).To(dev).RequireGrad()
			g1, err := Grad(w.AiryAi().Sum(), []*Tensor{w}, CreateGraph())
			if err != nil {
				t.Fatal(err)
			}
			g2, err := Grad(g1[0].Sum(), []*Tensor{w})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := g2[0].Float32s()
			want, _ := w.Detach().Mul(w.Detach().AiryAi()).Float32s()
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("Ai''(%v) = %v, want x·Ai(x) = %v", []float32{-3, -0.5, 0, 1.5, 4}[i], got[i], want[i])
				}
			}
		})
	}
}
