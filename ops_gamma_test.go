package lathe

import (
	"math"
	"testing"
)

// gammaRow is x, lgamma(x) and polygamma(n, x) for n = 0 to 4, exact and
// rounded to float64.
type gammaRow struct {
	x, lgamma float64
	psi       [5]float64
}

var gammaTable = []gammaRow{ // build/gammaref/gen.py
	{1e-05, 11.512919692895826, [5]float64{-100000.57719921567, 10000000001.644909, -2000000000000002.0, 5.999999999999999e+20, -2.399999999999999e+26}},
	{0.1, 2.252712651734206, [5]float64{-10.423754940411076, 101.43329915079275, -2001.8614573783436, 60004.51287679026, -2400015.6072031953}},
	{0.5, 0.5723649429247001, [5]float64{-1.9635100260214235, 4.934802200544679, -16.82879664423432, 97.40909103400244, -771.4742498266672}},
	{1.0, 0.0, [5]float64{-0.5772156649015329, 1.6449340668482264, -2.4041138063191885, 6.493939402266829, -24.88626612344088}},
	{1.4616321449683622, -0.12148629053584961, [5]float64{-9.241265521729427e-17, 0.9676722454476212, -0.8855263379671844, 1.5509985657339065, -3.934624930617758}},
	{2.0, 0.0, [5]float64{0.42278433509846713, 0.6449340668482264, -0.4041138063191886, 0.49393940226682914, -0.8862661234408782}},
	{2.5, 0.2846828704729192, [5]float64{0.7031566406452432, 0.49035775610023485, -0.2362040516417274, 0.22390584881725206, -0.3137559995067314}},
	{5.99, 4.770439637715405, [5]float64{1.704302797413849, 0.18165144551675372, -0.03290833045190621, 0.011891889866875555, -0.006429212187695446}},
	{6.0, 4.787491742782046, [5]float64{1.7061176684318005, 0.18132295573711532, -0.0327897322451145, 0.011827828192755074, -0.0063831913421128}},
	{9.5, 11.689333420797269, [5]float64{2.1977378764029494, 0.11099728846909904, -0.012307845807709338, 0.0027267288350372493, -0.0009052254233853626}},
	{10.0, 12.801827480081469, [5]float64{2.251752589066721, 0.10516633568168575, -0.011049834970802067, 0.0023199013042898686, -0.0007299311682352867}},
	{10.5, 13.940625219403763, [5]float64{2.3030010342976865, 0.09991695605912673, -0.00997514424771517, 0.0019900862371443544, -0.0005950601190094067}},
	{30.0, 71.25703896716801, [5]float64{3.384438132685525, 0.033895060357739946, -0.0011487652037286, 7.78600366473613e-05, -7.914941340181023e-06}},
	{123.4, 469.3360974421906, [5]float64{4.8113737751162775, 0.008136651610865263, -6.620473419231093e-05, 1.077357827078302e-06, -2.6297820665319678e-08}},
	{10000.0, 82099.71749644238, [5]float64{9.210290371142849, 0.00010000500016666666, -1.000100005e-08, 2.00030002e-12, -6.0012001e-16}},
	{100000000.0, 1742068066.1038346, [5]float64{18.420680738952367, 1.000000005e-08, -1.00000001e-16, 2.0000000300000002e-24, -6.000000120000001e-32}},
	{-0.5, 1.2655121234846454, [5]float64{0.03648997397857652, 8.934802200544679, -0.82879664423432, 193.40909103400244, -3.4742498266672253}},
	{-0.999, 6.908179385717436, [5]float64{-999.5745709308084, 1000002.6445361981, -2000000000.391615, 6000000000012.472, -2.3999999999999896e+16}},
	{-0.99999, 11.512929692950378, [5]float64{-99999.57718967069, 10000000002.73595, -2000000000027306.5, 6.000000000109225e+20, -2.4000000000546124e+26}},
	{-1.5, 0.860047015376481, [5]float64{0.7031566406452432, 9.379246644989124, -0.2362040516417274, 194.59427621918763, -0.3137559995067314}},
	{-2.25, 0.5555015450206475, [5]float64{4.158583564657972, 19.37941051186914, 123.89694977406016, 1558.4550231887144, 24481.479910902563}},
	{-3.6, -1.3989454782674617, [5]float64{0.39267528447471195, 10.668848856217378, -22.334929639394158, 283.57410304858166, -2037.418791402168}},
	{-7.25, -7.54188344347575, [5]float64{5.189977214956288, 19.61035453929327, 124.00852603656574, 1558.5411952034044, 24481.57314224219}},
	{-100.3, -363.7662061826763, [5]float64{6.895643124860435, 15.06949314924401, 68.8374452979615, 769.0209123808432, 9738.760301796321}},
}

var zetaTable = [][3]float64{ // x, q, zeta(x, q): build/gammaref/gen.py
	{2.0, 1.0, 1.6449340668482264},
	{3.0, 0.5, 8.41439832211716},
	{4.5, 7.0, 0.00040188268642576285},
	{2.5, 0.001, 31622777.94035882},
	{1.5, 10000.0, 0.0200005000125},
	{10.0, 2.0, 0.0009945751278180853},
	{1.001, 1.0, 1000.5772884760116},
	{30.0, 0.9, 23.589824880264747},
	{6.0, -1.5, 128.1804044002192},
	{3.0, -100.3, -34.41872264898075},
	{2.0, -0.25, 18.541879647671607},
}

// gammaFamily is the family's functions by name: lgamma, then polygamma
// of order 0 (digamma) to 4.
var gammaFamily = []struct {
	name string
	f    func(x *Tensor) *Tensor
	want func(r gammaRow) float64
}{
	{"lgamma", (*Tensor).Lgamma, func(r gammaRow) float64 { return r.lgamma }},
	{"digamma", (*Tensor).Digamma, func(r gammaRow) float64 { return r.psi[0] }},
	{"polygamma(1)", func(x *Tensor) *Tensor { return x.Polygamma(1) }, func(r gammaRow) float64 { return r.psi[1] }},
	{"polygamma(2)", func(x *Tensor) *Tensor { return x.Polygamma(2) }, func(r gammaRow) float64 { return r.psi[2] }},
	{"polygamma(3)", func(x *Tensor) *Tensor { return x.Polygamma(3) }, func(r gammaRow) float64 { return r.psi[3] }},
	{"polygamma(4)", func(x *Tensor) *Tensor { return x.Polygamma(4) }, func(r gammaRow) float64 { return r.psi[4] }},
}

// TestGammaFamilyExact checks the gamma family's kernels against mpmath's
// values (build/gammaref/gen.py) on every device.
//
// In float64, where the device has it: to 5e-13 of the value (and 1e-15
// where it cancels to nothing, at digamma's zero), across the recurrence,
// the series, the reflection and the regrouped zeta of a negative x
// (whose terms cancel: polygamma(4, -1.5) is 0.31 from terms of 32);
// except trigamma at -0.99999, whose reflection is torch's sin(πx), which
// keeps only the digits that πx has there (1e-11).
//
// In float32: to a few float32 ulp of float64's at the same x. Below
// -1/2, polygamma's float32 loses what torch's float32 loses: trigamma's
// reflection rounds πx (-100.3: 3e-5), the regrouped sums cancel
// (save at half-integers, TestPolygammaHalfIntegers), so those are checked
// to 1e-4, and next to
// a pole (-0.999, -0.99999) little is left, so not at all; lgamma and
// digamma keep their digits there (their reflection moves x by a period
// exactly first). Nor where float32 underflows (polygamma(4, 1e8)).
func TestGammaFamilyExact(t *testing.T) {
	xs := make([]float64, len(gammaTable))
	for i, r := range gammaTable {
		xs[i] = r.x
	}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x64 := FromSlice(CPU, xs).To(dev)
			x32 := FromSlice(CPU, xs).Cast(Float32).To(dev)
			for _, fn := range gammaFamily {
				if x64.Err() == nil { // wgpu has no float64
					got, err := fn.f(x64).Float64s()
					if err != nil {
						t.Fatalf("%s: %v", fn.name, err)
					}
					for i, r := range gammaTable {
						if fn.name == "polygamma(1)" && r.x == -0.99999 {
							continue // torch's reflection, sin(πx): 1e-11 off
						}
						if w := fn.want(r); math.Abs(got[i]-w) > 5e-13*math.Abs(w)+1e-15 {
							t.Errorf("%s(%v) = %v, want %v (%.1e off)", fn.name, r.x, got[i], w, math.Abs(got[i]-w)/math.Abs(w))
						}
					}
				}
				got, err := fn.f(x32).Float32s()
				if err != nil {
					t.Fatalf("%s float32: %v", fn.name, err)
				}
				ref, err := fn.f(x32.To(CPU).Cast(Float64)).Float64s()
				if err != nil {
					t.Fatal(err)
				}
				polygamma := fn.name != "lgamma" && fn.name != "digamma"
				for i, r := range gammaTable {
					w, rtol := ref[i], 4e-6
					if polygamma && r.x < -0.5 {
						rtol = 1e-4
					}
					if polygamma && (r.x == -0.999 || r.x == -0.99999) || math.Abs(w) < 1e-30 {
						continue
					}
					if math.Abs(float64(got[i])-w) > rtol*math.Abs(w)+1e-6 {
						t.Errorf("float32 %s(%v) = %v, want %v (%.1e off)", fn.name, r.x, got[i], w, math.Abs(float64(got[i])-w)/math.Abs(w))
					}
				}
			}
		})
	}
}

// TestPolygammaHalfIntegers: at a negative half-integer, polygamma of an
// even order n ≥ 2 is a sum whose terms of either sign cancel in pairs
// (polygamma(8, -3.5) = -8!·zeta(9, 4.5), about -0.05), and the regrouped
// zeta sums of float32 lost all of it on wgpu (zeta(9, 1/2) - (zeta(9,
// 1/2) - zeta(9, 4.5)), 512 less 512 + 1e-6). Every device's float32 is
// held to float64's on the cpu within 1e-6, n = 2 to 10.
func TestPolygammaHalfIntegers(t *testing.T) {
	xs := []float64{-0.5, -1.5, -2.5, -3.5, -7.5}
	for _, dev := range biDevices(t) {
		x := FromSlice(CPU, xs).Cast(Float32).To(dev)
		for n := 2; n <= 10; n++ {
			got, err := x.Polygamma(n).To(CPU).Cast(Float64).Float64s()
			if err != nil {
				t.Fatal(err)
			}
			want, _ := FromSlice(CPU, xs).Polygamma(n).Float64s()
			for i := range xs {
				if math.Abs(got[i]-want[i]) > 1e-6*math.Abs(want[i]) {
					t.Errorf("%v polygamma(%d, %v) = %v, want %v", dev, n, xs[i], got[i], want[i])
				}
			}
		}
	}
}

// TestZetaExact checks the zeta kernel against mpmath's sums
// (build/gammaref/gen.py) on every device: float64 to 5e-13 of the value,
// where the device has it, across the sum's pieces (x near 1, q near 0,
// q far above, a negative q regrouped); float32 to 4e-6 of float64's at
// the same points, and to 1e-4 where a negative q's regrouped sums cancel
// in float32 (cuda's and wgpu's, as torch's cuda).
func TestZetaExact(t *testing.T) {
	var xs, qs []float64
	for _, r := range zetaTable {
		xs, qs = append(xs, r[0]), append(qs, r[1])
	}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x64, q64 := FromSlice(CPU, xs).To(dev), FromSlice(CPU, qs).To(dev)
			if x64.Err() == nil { // wgpu has no float64
				got, err := Zeta(x64, q64).Float64s()
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range zetaTable {
					if math.Abs(got[i]-r[2]) > 5e-13*math.Abs(r[2]) {
						t.Errorf("zeta(%v, %v) = %v, want %v (%.1e off)", r[0], r[1], got[i], r[2], math.Abs(got[i]-r[2])/math.Abs(r[2]))
					}
				}
			}
			x32, q32 := FromSlice(CPU, xs).Cast(Float32), FromSlice(CPU, qs).Cast(Float32)
			got, err := Zeta(x32.To(dev), q32.To(dev)).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Zeta(x32.Cast(Float64), q32.Cast(Float64)).Float64s()
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range zetaTable {
				rtol := 4e-6
				if r[1] < 0 {
					rtol = 1e-4
				}
				if math.Abs(float64(got[i])-ref[i]) > rtol*math.Abs(ref[i]) {
					t.Errorf("float32 zeta(%v, %v) = %v, want %v", r[0], r[1], got[i], ref[i])
				}
			}
		})
	}
}

// TestGammaPoles: at the poles and the ends, every device gives torch's
// values in float32: lgamma +Inf at 0, at the negative integers (however
// large: lgamma(1 - x) is +Inf there too, and Inf - Inf was NaN on wgpu:0)
// and at ±Inf; digamma ∓Inf at ±0, NaN at the negative integers and -Inf,
// +Inf at +Inf; NaN stays NaN.
func TestGammaPoles(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	xs := []float32{-3e38, -1e30, -2, 0, float32(math.Copysign(0, -1)), float32(inf), float32(-inf), float32(nan)}
	want := map[string][]float64{
		"lgamma":  {inf, inf, inf, inf, inf, inf, inf, nan},
		"digamma": {nan, nan, nan, -inf, inf, inf, nan, nan},
	}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, xs).To(dev)
			for name, f := range map[string]func(*Tensor) *Tensor{"lgamma": (*Tensor).Lgamma, "digamma": (*Tensor).Digamma} {
				got, err := f(x).Float32s()
				if err != nil {
					t.Fatal(err)
				}
				for i, w := range want[name] {
					if g := float64(got[i]); !(g == w || g != g && w != w) {
						t.Errorf("%s(%v) = %v, want %v", name, xs[i], g, w)
					}
				}
			}
		})
	}
}
