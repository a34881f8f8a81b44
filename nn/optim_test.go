package nn

import (
	"errors"
	"math"
	"testing"

	"github.com/lathe-ml/lathe"
)

// optimRef holds PyTorch 1.13's parameter values after each of three steps,
// from build/torchref/optim_ref.py (float64, start optimP0, gradients optimG).
var optimRef = map[string][3][6]float64{
	"sgd": {
		{0.49, -1.18, 1.97, 0.33999999999999997, -0.75, 1.1600000000000001},
		{0.52, -1.19, 1.95, 0.26999999999999996, -0.7, 1.1550000000000002},
		{0.495, -1.2149999999999999, 1.96, 0.29, -0.7, 1.0650000000000002},
	},
	"sgd/momentum/dampening/wd": {
		{0.4895, -1.1787999999999998, 1.968, 0.3397, -0.7493, 1.1589},
		{0.50660945, -1.1676590799999997, 1.9194288, 0.31212427, -0.7479956299999999, 1.20636699},
		{0.49905200649500003, -1.1790813588279998, 1.88298723408, 0.305025201157, -0.7461485009329999, 1.1670015507090001},
	},
	"sgd/nesterov/wd": {
		{0.48005, -1.1597199999999999, 1.9392, 0.37543, -0.79367, 1.21191},
		{0.5276329049999999, -1.1593445319999998, 1.87159552, 0.273873683, -0.737095027, 1.247816371},
		{0.4953870619804999, -1.1963476041891998, 1.845940736512, 0.2832905247023, -0.7304913737487, 1.1123519727951001},
	},
	"adam": {
		{0.4900000009999999, -1.1900000005, 1.9900000003333334, 0.30999999975, -0.7099999998, 1.1099999998333334},
		{0.49494189911200653, -1.1873366302718675, 1.9802964794330102, 0.30686145384278024, -0.7094736840210526, 1.1160591346720663},
		{0.4939749039191201, -1.1907281284004676, 1.9747775607211318, 0.3060457913820764, -0.7090668404003303, 1.1133504142152932},
	},
	"adam/wd": {
		{0.4900000666662222, -1.1900000312499024, 1.99000001999996, 0.309999972973046, -0.7099999767442401, 1.1099999795918785},
		{0.49351575045792717, -1.183243164610527, 1.9801811336816237, 0.3058347318794393, -0.7075066402593093, 1.1135259255068382},
		{0.4902218469249892, -1.1814275406520902, 1.9720712492582482, 0.30431832424472705, -0.7050083819232067, 1.108373474949538},
	},
	"adamw": {
		{0.4895000009999999, -1.1888000005, 1.9880000003333334, 0.30969999974999995, -0.7092999997999999, 1.1088999998333333},
		{0.4939523991110065, -1.1849478302713674, 1.9763084794326768, 0.3062517538430302, -0.7080643840212526, 1.1138502346722328},
		{0.4924914515190091, -1.187154380569696, 1.9688132522413657, 0.30512983962848333, -0.706949476016509, 1.1100276639807876},
	},
}

var (
	optimP0 = []float64{0.5, -1.2, 2.0, 0.3, -0.7, 1.1}
	optimG  = [3][]float64{
		{0.1, -0.2, 0.3, -0.4, 0.5, -0.6},
		{-0.3, 0.1, 0.2, 0.7, -0.5, 0.05},
		{0.25, 0.25, -0.1, -0.2, 0.0, 0.9},
	}
	optimCases = map[string]func([]Param) (Optimizer, error){
		"sgd": func(ps []Param) (Optimizer, error) { return NewSGD(ps, 0.1) },
		"sgd/momentum/dampening/wd": func(ps []Param) (Optimizer, error) {
			return NewSGD(ps, 0.1, Momentum(0.9), Dampening(0.1), WeightDecay(0.01))
		},
		"sgd/nesterov/wd": func(ps []Param) (Optimizer, error) {
			return NewSGD(ps, 0.1, Momentum(0.9), Nesterov(), WeightDecay(0.01))
		},
		"adam":    func(ps []Param) (Optimizer, error) { return NewAdam(ps, 0.01, [2]float64{0.9, 0.999}, 1e-8, 0) },
		"adam/wd": func(ps []Param) (Optimizer, error) { return NewAdam(ps, 0.01, [2]float64{0.8, 0.99}, 1e-6, 0.1) },
		"adamw":   func(ps []Param) (Optimizer, error) { return NewAdamW(ps, 0.01, [2]float64{0.9, 0.999}, 1e-8, 0.1) },
	}
)

func toDType(t *testing.T, v []float64, dt lathe.DType, shape ...int) *lathe.Tensor {
	t.Helper()
	x := lathe.FromSlice(lathe.CPU, v, shape...).Cast(dt)
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	return x
}

func values(t testing.TB, x *lathe.Tensor) []float64 {
	t.Helper()
	x = x.Cast(lathe.Float64)
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func assertClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s: [%d] = %.17g, want %.17g (diff %.3g)\n got %v\nwant %v", what, i, got[i], want[i], d, got, want)
		}
	}
}

// TestOptimizersMatchTorch runs three steps with gradients fed through
// Backward of a leaf with a given seed (so grad = G exactly) and compares
// each step with PyTorch's values; float64 tightly, float32 within its
// rounding (torch fuses a + α·b into one FMA, lathe rounds twice).
func TestOptimizersMatchTorch(t *testing.T) {
	for name, mk := range optimCases {
		for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
			t.Run(name+"/"+dt.String(), func(t *testing.T) {
				tol := 1e-13
				if dt == lathe.Float32 {
					tol = 3e-6
				}
				p := toDType(t, optimP0, dt, 2, 3).RequireGrad()
				handle := p // the optimizer must rebind this very pointer
				opt, err := mk([]Param{{Name: "p", T: p}})
				if err != nil {
					t.Fatal(err)
				}
				for s, g := range optimG {
					opt.ZeroGrad()
					if err := p.Backward(lathe.WithGradient(toDType(t, g, dt, 2, 3))); err != nil {
						t.Fatal(err)
					}
					if err := opt.Step(); err != nil {
						t.Fatal(err)
					}
					if !handle.RequiresGrad() || !handle.IsLeaf() {
						t.Fatalf("step %d: the parameter is no longer a leaf that requires a gradient", s+1)
					}
					if handle.DType() != dt {
						t.Fatalf("step %d: dtype became %v", s+1, handle.DType())
					}
					ref := optimRef[name][s]
					assertClose(t, "step "+string(rune('1'+s)), values(t, handle), ref[:], tol)
				}
			})
		}
	}
}

// TestOptimizerKeepsGradAfterStep checks that, as in torch, the gradient is
// still there after Step (so a second Step without backward repeats it) and
// that ZeroGrad clears it.
func TestOptimizerKeepsGradAfterStep(t *testing.T) {
	p := toDType(t, []float64{1, 2}, lathe.Float64, 2).RequireGrad()
	opt, err := NewSGD([]Param{{"p", p}}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(lathe.WithGradient(toDType(t, []float64{1, -1}, lathe.Float64, 2))); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	assertClose(t, "p", values(t, p), []float64{0, 3}, 0)
	opt.ZeroGrad()
	if p.Grad() != nil {
		t.Fatal("ZeroGrad left a gradient")
	}
	if err := opt.Step(); err != nil { // no gradient: nothing to do
		t.Fatal(err)
	}
	assertClose(t, "p", values(t, p), []float64{0, 3}, 0)
}

// TestOptimizerUpdatesModel checks that a step on a module's Parameters is
// what the module computes with next (the handles are shared).
func TestOptimizerUpdatesModel(t *testing.T) {
	l := NewLinear(2, 1, WithDType(lathe.Float64))
	opt, err := NewSGD(l.Parameters(), 1)
	if err != nil {
		t.Fatal(err)
	}
	w0 := values(t, l.Weight)
	if err := l.Weight.Backward(lathe.WithGradient(toDType(t, []float64{1, 2}, lathe.Float64, 1, 2))); err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	assertClose(t, "weight", values(t, l.Parameters()[0].T), []float64{w0[0] - 1, w0[1] - 2}, 1e-15)
	b := values(t, l.Bias)
	y := values(t, l.Forward(toDType(t, []float64{1, 0}, lathe.Float64, 1, 2)))
	assertClose(t, "forward", y, []float64{w0[0] - 1 + b[0]}, 1e-15)
}

// TestOptimizerStepIsAtomic: a step whose second parameter's gradient is
// unusable (released) fails and leaves the first parameter unchanged too.
func TestOptimizerStepIsAtomic(t *testing.T) {
	a := toDType(t, []float64{1, 2}, lathe.Float64, 2).RequireGrad()
	b := toDType(t, []float64{3, 4}, lathe.Float64, 2).RequireGrad()
	opt, err := NewAdam([]Param{{"a", a}, {"b", b}}, 0.1, [2]float64{0.9, 0.999}, 1e-8, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Backward(lathe.WithGradient(toDType(t, []float64{1, 1}, lathe.Float64, 2))); err != nil {
		t.Fatal(err)
	}
	if err := b.Backward(lathe.WithGradient(toDType(t, []float64{1, 1}, lathe.Float64, 2))); err != nil {
		t.Fatal(err)
	}
	b.Grad().Release()
	if err := opt.Step(); !errors.Is(err, lathe.ErrReleased) {
		t.Fatalf("Step with a released gradient: got %v, want ErrReleased", err)
	}
	assertClose(t, "a", values(t, a), []float64{1, 2}, 0)
	assertClose(t, "b", values(t, b), []float64{3, 4}, 0)
}

func TestOptimizerErrors(t *testing.T) {
	p := []Param{{"p", toDType(t, []float64{1}, lathe.Float32, 1).RequireGrad()}}
	bad := NewLinear(-1, 2)
	cases := map[string]func() error{
		"sgd/empty":             func() error { _, err := NewSGD(nil, 0.1); return err },
		"sgd/lr<0":              func() error { _, err := NewSGD(p, -1); return err },
		"sgd/nesterov/nomom":    func() error { _, err := NewSGD(p, 0.1, Nesterov()); return err },
		"sgd/nesterov/dampened": func() error { _, err := NewSGD(p, 0.1, Momentum(0.9), Dampening(0.5), Nesterov()); return err },
		"sgd/momentum<0":        func() error { _, err := NewSGD(p, 0.1, Momentum(-1)); return err },
		"adam/beta1=1":          func() error { _, err := NewAdam(p, 0.1, [2]float64{1, 0.999}, 1e-8, 0); return err },
		"adam/eps=nan":          func() error { _, err := NewAdam(p, 0.1, [2]float64{0.9, 0.999}, math.NaN(), 0); return err },
		"adamw/wd<0":            func() error { _, err := NewAdamW(p, 0.1, [2]float64{0.9, 0.999}, 1e-8, -1); return err },
		"adam/int": func() error {
			_, err := NewAdam([]Param{{"i", lathe.Zeros(lathe.CPU, lathe.Int32, 2)}}, 0.1, [2]float64{0.9, 0.999}, 1e-8, 0)
			return err
		},
		"adam/nil": func() error { _, err := NewAdam([]Param{{"n", nil}}, 0.1, [2]float64{0.9, 0.999}, 1e-8, 0); return err },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			if err := f(); !errors.Is(err, lathe.ErrValue) {
				t.Fatalf("got %v, want ErrValue", err)
			}
		})
	}
	t.Run("sgd/failed-layer", func(t *testing.T) {
		if _, err := NewSGD(bad.Parameters(), 0.1); !errors.Is(err, lathe.ErrShape) {
			t.Fatalf("got %v, want the layer's ErrShape", err)
		}
	})
}
