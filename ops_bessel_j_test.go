package lathe

import (
	"math"
	"testing"
)

var besselJYTable = [][5]float64{ // x, J0, J1, Y0, Y1: build/bessel/ref.py
	{1e-20, 1.0, 5e-21, -29.391228250285796, -6.3661977236758135e+19},
	{1e-05, 0.999999999975, 4.9999999999375e-06, -7.40316028370197, -63661.97727536548},
	{0.1, 0.99750156206604, 0.049937526036242, -1.5342386513503667, -6.4589510947020266},
	{0.5, 0.9384698072408129, 0.2422684576748739, -0.44451873350670656, -1.471472392670243},
	{1.0, 0.7651976865579666, 0.4400505857449335, 0.08825696421567696, -0.7812128213002887},
	{1.5, 0.5118276717359181, 0.5579365079100996, 0.38244892379775886, -0.4123086269739113},
	{3.0, -0.26005195490193345, 0.3390589585259365, 0.3768500100127904, 0.3246744247918},
	{4.2, -0.37655705436756765, -0.13864694212604622, -0.09375120131443468, 0.36801280785417506},
	{4.99, -0.1808669025116955, -0.32644149050101634, -0.30702210182564704, 0.15124027548614782},
	{5.0, -0.1775967713143383, -0.32757913759146523, -0.30851762524903376, 0.14786314339122683},
	{5.01, -0.17431543205674924, -0.32868309571784987, -0.30997933991664645, 0.14447857825491056},
	{6.5, 0.2600946055816064, -0.15384130140997185, -0.17324243491898234, -0.27409127395927546},
	{10.0, -0.24593576445134835, 0.04347274616886144, 0.055671167283599395, 0.24901542420695388},
	{17.3, -0.1337006470757642, -0.141423335492014, -0.13750521344352495, 0.1297853467390839},
	{30.0, -0.08636798358104021, -0.11875106261662294, -0.11729573168666403, 0.08442557066174723},
	{100.25, 0.038427302481501335, -0.06962028467960972, -0.06981106912601158, -0.03877595658074313},
	{1000.5, 0.01948655998713014, 0.016027715373203338, 0.016017974964604328, -0.019478557437521776},
}

// TestBesselJYExact checks BesselJ0, BesselJ1, BesselY0 and BesselY1
// against mpmath (build/bessel/ref.py) on every device, near 0, on both
// sides of the branch at 5 and far out: in float64, where the device has
// it, to 1e-14 of the value (3e-13 past 100, where x - π/4 rounds); in
// float32, up to 30, to 3e-6 of the largest of the four at x plus 1e-5 of
// the value (the reduction x - π/4 keeps x's float32 digits, as torch's).
// J1 is odd and J0 even: checked at -x too. torch 1.13's are up to 6e-6
// off between 3 and 10 (its denominators lose Cephes's leading 1), so the
// conformance suite compares with torch only below 2 and from 25 on.
func TestBesselJYExact(t *testing.T) {
	fns := []func(*Tensor) *Tensor{(*Tensor).BesselJ0, (*Tensor).BesselJ1, (*Tensor).BesselY0, (*Tensor).BesselY1}
	var xs []float64
	for _, r := range besselJYTable {
		xs = append(xs, r[0])
	}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			for _, dt := range []DType{Float64, Float32} {
				x := FromSlice(CPU, xs).Cast(dt).To(dev)
				if x.Err() != nil {
					continue // wgpu has no float64
				}
				for k, f := range fns {
					got, err := f(x).To(CPU).Cast(Float64).Float64s()
					if err != nil {
						t.Fatal(err)
					}
					neg, err := f(x.Neg()).To(CPU).Cast(Float64).Float64s()
					if err != nil {
						t.Fatal(err)
					}
					for i, r := range besselJYTable {
						w, x := r[1+k], r[0]
						tol := 1e-14 * math.Abs(w)
						if x > 100 {
							tol = 3e-13 * math.Abs(w)
						}
						if dt == Float32 {
							if x > 30 {
								continue
							}
							big := math.Max(math.Max(math.Abs(r[1]), math.Abs(r[2])), math.Max(math.Abs(r[3]), math.Abs(r[4])))
							tol = 3e-6*big + 1e-5*math.Abs(w)
						}
						if math.Abs(got[i]-w) > tol {
							t.Errorf("%v %d(%v) = %v, want %v (%.1e off)", dt, k, x, got[i], w, math.Abs(got[i]-w)/math.Abs(w))
						}
						switch { // J0 even, J1 odd, Y NaN below 0
						case k == 0 && neg[i] != got[i], k == 1 && neg[i] != -got[i], k >= 2 && !math.IsNaN(neg[i]):
							t.Errorf("%v %d(-%v) = %v, %d(%v) = %v", dt, k, x, neg[i], k, x, got[i])
						}
					}
				}
			}
		})
	}
}

// TestBesselJYDerivatives: the gradients, which torch's lack, are the
// approximations differentiated; they agree with J0' = -J1, Y0' = -Y1,
// J1' = J0 - J1/x, Y1' = Y0 - Y1/x and J0's second derivative J1/x - J0
// to 1e-12 of the largest of the four at x, on both sides of the branch
// at 5 (float64, cpu); J1'(0) is 1/2.
func TestBesselJYDerivatives(t *testing.T) {
	xs := []float64{0.2, 1.5, 3, 4.99, 5.01, 7, 20, 60}
	j0, _ := FromSlice(CPU, xs).BesselJ0().Float64s()
	j1, _ := FromSlice(CPU, xs).BesselJ1().Float64s()
	y0, _ := FromSlice(CPU, xs).BesselY0().Float64s()
	y1, _ := FromSlice(CPU, xs).BesselY1().Float64s()
	check := func(name string, got []float64, want func(i int, x float64) float64) {
		t.Helper()
		for i, x := range xs {
			big := math.Max(math.Max(math.Abs(j0[i]), math.Abs(j1[i])), math.Max(math.Abs(y0[i]), math.Abs(y1[i])))
			if w := want(i, x); math.Abs(got[i]-w) > 1e-12*big {
				t.Errorf("%s at %v = %v, want %v", name, x, got[i], w)
			}
		}
	}
	d1, d2 := besselDerivs(t, (*Tensor).BesselJ0, xs)
	check("J0'", d1, func(i int, _ float64) float64 { return -j1[i] })
	check("J0''", d2, func(i int, x float64) float64 { return j1[i]/x - j0[i] })
	d1, _ = besselDerivs(t, (*Tensor).BesselJ1, xs)
	check("J1'", d1, func(i int, x float64) float64 { return j0[i] - j1[i]/x })
	d1, _ = besselDerivs(t, (*Tensor).BesselY0, xs)
	check("Y0'", d1, func(i int, _ float64) float64 { return -y1[i] })
	d1, _ = besselDerivs(t, (*Tensor).BesselY1, xs)
	check("Y1'", d1, func(i int, x float64) float64 { return y0[i] - y1[i]/x })
	if d, _ := besselDerivs(t, (*Tensor).BesselJ1, []float64{0}); math.Abs(d[0]-0.5) > 1e-15 {
		t.Errorf("J1'(0) = %v, want 1/2", d[0])
	}
}
