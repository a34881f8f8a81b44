package lathe

import (
	"math"
	"testing"
)

var igammaTable = [][4]float64{ // a, x, P(a, x), Q(a, x): build/igamma/ref.py
	{0.5, 0.25, 0.5204998778130465, 0.4795001221869535},
	{1.0, 1.0, 0.6321205588285577, 0.36787944117144233},
	{2.0, 3.0, 0.8008517265285442, 0.19914827347145578},
	{3.0, 2.0, 0.32332358381693654, 0.6766764161830635},
	{0.1, 0.05, 0.7755386354510305, 0.22446136454896942},
	{5.0, 0.3, 1.578504054165996e-05, 0.9999842149594583},
	{0.01, 0.001, 0.938570652526129, 0.061429347473871014},
	{0.001, 0.7, 0.9996259466340252, 0.0003740533659748942},
	{10.0, 0.6, 9.669718274825588e-10, 0.9999999990330282},
	{0.3, 0.8, 0.8862152066572104, 0.11378479334278961},
	{30.0, 2.0, 5.855318609378577e-25, 1.0},
	{1.5, 40.0, 1.0, 3.069277486172417e-17},
	{4.0, 4.4, 0.640552227211231, 0.35944777278876905},
	{12.0, 7.0, 0.05334962315155862, 0.9466503768484413},
	{7.0, 12.0, 0.9541776931113489, 0.045822306888651125},
	{25.0, 24.0, 0.44599877692500434, 0.5540012230749957},
	{25.0, 30.0, 0.8427579727616084, 0.1572420272383916},
	{100.0, 80.0, 0.017108313035133115, 0.9828916869648668},
	{150.0, 160.0, 0.7956261882343224, 0.20437381176567754},
	{199.0, 199.5, 0.5235405540398363, 0.4764594459601636},
	{500.0, 510.0, 0.6769366400888723, 0.3230633599111277},
	{10000.0, 9900.0, 0.15865119219356466, 0.8413488078064354},
	{1000000.0, 1001500.0, 0.9331388957641022, 0.06686110423589776},
	{100000000.0, 100020000.0, 0.9772444692251449, 0.022755530774855204},
	{250.0, 180.0, 4.718944298054762e-07, 0.9999995281055702},
	{250.0, 330.0, 0.9999981106125596, 1.8893874404113586e-06},
	{180.0, 230.0, 0.9997228136516824, 0.0002771863483175942},
	{50.0, 120.0, 0.9999999999998399, 1.600822679334483e-13},
	{1e-300, 1.0, 1.0, 2.193839343955203e-301},
	{2.5, 1e-200, 0.0, 1.0},
	{1000.0, 100.0, 0.0, 1.0},
	{0.5, 700.0, 1.0, 2.1010145162642176e-306},
	{170.5, 1.0, 3.90195798553272e-309, 1.0},
	{1e-10, 0.1, 0.9999999998177076, 1.8229239583260838e-10},
	{1e-05, 0.9, 0.9999973981360228, 2.6018639772092986e-06},
	{150.0, 100.0, 1.88421046603867e-06, 0.999998115789534},
	{190.0, 250.0, 0.999966640538653, 3.335946134701179e-05},
	{5000.0, 4000.0, 1.5598621812189688e-52, 1.0},
	{5000.0, 6000.0, 1.0, 1.1470065524601248e-40},
}

// TestIgammaExact checks Gammainc and Gammaincc against mpmath's values
// (build/igamma/ref.py) on every device, at points that take each branch
// of the kernels: P's and Q's series, the continued fraction, 1 - P and
// 1 - Q, Temme's expansion on both sides of a = 200, the Lanczos form of
// x^a e^-x/Γ(a) on both sides of 200, and a tiny a (ln Γ(1 + a) by its
// series) and a near x at a = 1e8 (ln(1 + s) - s by its series), where
// torch's lose digits.
//
// In float64, where the device has it: to 1e-13 of the value (Q(0.5,
// 700) is e to a power of about -700, which keeps 700·2^-53 of it). In
// float32, at the points float32 holds exactly, to 3e-5 of the value: a
// tail such as P(30, 2) = 5.9e-25 is e to a power of about -56 computed
// in float32, which keeps 56·2^-24 of it. Every value lies in [0, 1],
// the sums' last roundings included (P(1e-300, 1) = 1).
func TestIgammaExact(t *testing.T) {
	var as, xs []float64
	for _, r := range igammaTable {
		as, xs = append(as, r[0]), append(xs, r[1])
	}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			for _, dt := range []DType{Float64, Float32} {
				a := FromSlice(CPU, as).Cast(dt).To(dev)
				x := FromSlice(CPU, xs).Cast(dt).To(dev)
				if dt == Float64 && a.Err() != nil {
					continue // wgpu has no float64
				}
				for k, fn := range []func(a, x *Tensor) *Tensor{Gammainc, Gammaincc} {
					got, err := fn(a, x).To(CPU).Cast(Float64).Float64s()
					if err != nil {
						t.Fatalf("%v: %v", dt, err)
					}
					for i, r := range igammaTable {
						name := [2]string{"P", "Q"}[k]
						if got[i] < 0 || got[i] > 1 {
							t.Errorf("%v %s(%v, %v) = %v, outside [0, 1]", dt, name, r[0], r[1], got[i])
						}
						w, rtol := r[2+k], 1e-13
						if dt == Float32 {
							if float64(float32(r[0])) != r[0] || float64(float32(r[1])) != r[1] || math.Abs(w) < 1e-37 {
								continue
							}
							rtol = 3e-5
						}
						if math.Abs(got[i]-w) > rtol*math.Abs(w) {
							t.Errorf("%v %s(%v, %v) = %v, want %v (%.1e off)", dt, name, r[0], r[1], got[i], w, math.Abs(got[i]-w)/w)
						}
					}
				}
			}
		})
	}
}

// TestIgammaHugeA: where a is near the dtype's largest and x is above 1,
// a·ln x and ln Γ(a) both overflow, and their difference was Inf - Inf
// (torch's P(1.8e308, 200) is NaN); P is 0 there and Q 1, on every device.
func TestIgammaHugeA(t *testing.T) {
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			for _, dt := range []DType{Float64, Float32} {
				huge := math.MaxFloat64
				if dt == Float32 {
					huge = math.MaxFloat32
				}
				a := Full(dev, dt, huge, 4)
				x := FromSlice(CPU, []float64{1.5, 20, 200, 1e30}).Cast(dt).To(dev)
				if a.Err() != nil {
					continue // wgpu has no float64
				}
				for k, fn := range []func(a, x *Tensor) *Tensor{Gammainc, Gammaincc} {
					got, err := fn(a, x).To(CPU).Cast(Float64).Float64s()
					if err != nil {
						t.Fatal(err)
					}
					for i, v := range got {
						if v != float64(k) {
							t.Errorf("%v %s(max, x[%d]) = %v, want %d", dt, [2]string{"P", "Q"}[k], i, v, k)
						}
					}
				}
			}
		})
	}
}
