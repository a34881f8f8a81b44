package lathe

import (
	"errors"
	"math"
	"testing"
)

var airyTable = [][2]float64{ // x, Ai(x): build/airy/ref.py
	{-1000000.0, -0.0021912611413430574},
	{-1000.0, 0.05597189577301992},
	{-100.5, 0.027927645277987353},
	{-30.0, -0.08796818845684216},
	{-10.0, 0.04024123848644319},
	{-5.0, 0.35076100902411433},
	{-3.0, -0.37881429367765806},
	{-2.1, 0.16348451299929267},
	{-2.09, 0.17005055173203004},
	{-2.0899999999999994, 0.17005055173203032},
	{-1.0, 0.5355608832923521},
	{-0.5, 0.4757280916105396},
	{-1e-10, 0.3550280539136992},
	{0.0, 0.3550280538878172},
	{1e-10, 0.3550280538619353},
	{0.5, 0.23169360648083348},
	{1.0, 0.13529241631288141},
	{2.0, 0.03492413042327438},
	{2.0899999999999994, 0.0304203183631984},
	{2.09, 0.03042031836319838},
	{2.1, 0.029952602115866523},
	{3.0, 0.006591139357460719},
	{5.0, 0.00010834442813607442},
	{8.32, 1.863129074107169e-08},
	{10.0, 1.1047532552898686e-10},
	{25.0, 8.116026824691387e-38},
	{26.0, 5.15301114519834e-40},
	{50.0, 4.5849417240748285e-104},
	{100.0, 2.6344821520881846e-291},
	{103.8, 5.723435795366651e-308},
}

// TestAiryExact checks AiryAi against mpmath's values (build/airy/ref.py)
// on every device, in float64 where the device has it and float32 (at
// the points float32 holds): each branch on both sides of ±2.09, the
// oscillating tail to x = -1e6 and the decaying one to the last normal
// float64. An error is measured in ε·(1 + ζ) of the value's scale, ζ =
// 2/3·|x|^(3/2): the phase ζ + π/4 below -2.09 and the exponent e^-ζ above
// 2.09 keep ζ·ε of it; below 0 the scale is the envelope |x|^-1/4/√π,
// as the value oscillates through 0.
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
				got, err := x.AiryAi().To(CPU).Cast(Float64).Float64s()
				if err != nil {
					t.Fatal(err)
				}
				eps := 0x1p-52
				if dt == Float32 {
					eps = 0x1p-23
				}
				for i, r := range airyTable {
					if dt == Float32 && (float64(float32(r[0])) != r[0] || math.Abs(r[1]) < 1e-37) {
						continue
					}
					scale, zeta := math.Abs(r[1]), 2*math.Pow(math.Abs(r[0]), 1.5)/3
					if r[0] < 0 {
						scale = math.Pow(-r[0], -0.25) / math.Sqrt(math.Pi)
					}
					if e := math.Abs(got[i]-r[1]) / (eps * (1 + zeta) * scale); !(e <= 16) {
						t.Errorf("%v Ai(%v) = %v, want %v (%.3g of ε·(1+ζ)·scale)", dt, r[0], got[i], r[1], e)
					}
				}
			}
		})
	}
}

// TestAiryHostile: Ai at ±Inf is 0 and at NaN NaN; where its phase keeps
// no digit (x below -2.6e10, -5.4e4 in float32 on cuda and wgpu) it is 0; integers promote to float32; a backward pass
// through it is ErrGrad (no Ai' yet), on every device.
func TestAiryHostile(t *testing.T) {
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, []float64{math.Inf(1), math.Inf(-1), math.NaN(), -1e38, 1e38, -1e12}).Cast(Float32).To(dev)
			got, err := x.AiryAi().To(CPU).Cast(Float64).Float64s()
			if err != nil || got[0] != 0 || got[1] != 0 || !math.IsNaN(got[2]) || got[3] != 0 || got[4] != 0 || got[5] != 0 {
				t.Errorf("Ai(Inf, -Inf, NaN, -1e38, 1e38, -1e12) = %v, %v", got, err)
			}
			if y := Ones(dev, Int64, 3).AiryAi(); y.Err() != nil || y.DType() != Float32 {
				t.Errorf("Ai of int64: %v %v", y.DType(), y.Err())
			}
			w := FromSlice(CPU, []float32{0.5}).To(dev).RequireGrad()
			if _, err := Grad(w.AiryAi().Sum(), []*Tensor{w}); !errors.Is(err, ErrGrad) {
				t.Errorf("gradient of Ai: %v, want ErrGrad", err)
			}
		})
	}
}
