package lathe

import (
	"math"
	"testing"
)

// TestPowScalarAsTorch: a float pow whose exponent has one element is
// torch's pow with a scalar exponent on every device, whatever x's size
// and layout: 2, 3, -2, -1, 0.5 and -0.5 are x·x, x·x·x, 1/(x·x), 1/x, √x
// and 1/√x (torch 1.13: (-0)^-0.5 is -Inf, (-Inf)^0.5 NaN, (-0)^0.5 -0,
// where C's pow gives +Inf, +Inf and +0), for a Go scalar, a 0-d tensor,
// one element of x, a transposed x, float32 and the 16-bit floats. An
// exponent tensor of more elements is C's pow, as torch's pow of two
// tensors.
func TestPowScalarAsTorch(t *testing.T) {
	negZero, inf := float32(math.Copysign(0, -1)), float32(math.Inf(1))
	xs := []float32{negZero, -inf, 4, 2.5, -2, 0, inf, float32(math.NaN()), 1e-30, -3}
	rule := map[float64]func(x float32) float32{
		2:    func(x float32) float32 { return x * x },
		3:    func(x float32) float32 { return x * x * x },
		-2:   func(x float32) float32 { return 1 / (x * x) },
		-1:   func(x float32) float32 { return 1 / x },
		0.5:  func(x float32) float32 { return float32(math.Sqrt(float64(x))) },
		-0.5: func(x float32) float32 { return 1 / float32(math.Sqrt(float64(x))) },
	}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, xs, 2, 5).To(dev)
			for s, f := range rule {
				forms := map[string]*Tensor{
					"scalar":     x.PowScalar(s),
					"0-d":        x.Pow(Scalar(dev, float32(s))),
					"transposed": x.T().PowScalar(s).T(),
				}
				for name, got := range forms {
					v, err := got.Float32s()
					if err != nil {
						t.Fatalf("%s pow %v: %v", name, s, err)
					}
					for i, xv := range xs {
						if w := f(xv); !same(v[i], w) {
							t.Errorf("%s: pow(%v, %v) = %v, want %v", name, xv, s, v[i], w)
						}
					}
				}
				for i, xv := range xs { // one element
					v, err := FromSlice(CPU, xs[i:i+1]).To(dev).PowScalar(s).Float32s()
					if err != nil {
						t.Fatal(err)
					}
					if w := f(xv); !same(v[0], w) {
						t.Errorf("one element: pow(%v, %v) = %v, want %v", xv, s, v[0], w)
					}
				}
				// 16-bit floats compute in float32 and round once.
				for _, dt := range []DType{Float16, BFloat16} {
					h := x.Cast(dt)
					got, err := h.PowScalar(s).Cast(Float32).Float32s()
					if err != nil {
						t.Fatal(err)
					}
					want, _ := h.Cast(Float32).PowScalar(s).Cast(dt).Cast(Float32).Float32s()
					for i := range got {
						if !same(got[i], want[i]) {
							t.Errorf("%v: pow(%v, %v) = %v, want %v", dt, xs[i], s, got[i], want[i])
						}
					}
				}
			}
			// An exponent tensor of more elements is C's pow: (-0)^-0.5
			// is +Inf, (-Inf)^0.5 +Inf.
			e := FromSlice(CPU, []float32{-0.5, 0.5}).To(dev)
			v, err := FromSlice(CPU, []float32{negZero, -inf}).To(dev).Pow(e).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if !same(v[0], inf) || !same(v[1], inf) {
				t.Errorf("pow of two tensors: (-0)^-0.5, (-Inf)^0.5 = %v, want +Inf, +Inf (C's pow)", v)
			}
		})
	}
}
