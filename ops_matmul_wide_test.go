package lathe

import (
	"errors"
	"math"
	"testing"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestMatMulWide holds the wide product of two 16-bit tensors to the
// float32 product of their widened values, on every device: plain,
// batched with a broadcast right-hand side (a Linear weight), a
// transposed view, a vector, and k past the AMX tiles' 32. The products
// are exact in float32, so only the order of the sums may differ (the
// tiles against sgemm): within a few float32 ulps of the sum of |terms|.
func TestMatMulWide(t *testing.T) {
	cases := []struct {
		name string
		a, b []int
		bT   bool // b is given as the transpose of a [m, k] tensor
	}{
		{"plain", []int{5, 7}, []int{7, 3}, false},
		{"batched-shared", []int{2, 33, 70}, []int{70, 40}, false},
		{"transposed", []int{64, 100}, []int{100, 48}, true},
		{"vector", []int{3, 9}, []int{9}, false},
		{"empty-k", []int{4, 0}, []int{0, 5}, false},
	}
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{BFloat16, Float16} {
			for _, c := range cases {
				t.Run(dev.String()+"/"+dt.String()+"/"+c.name, func(t *testing.T) {
					Seed(11)
					a := RandN(dev, Float32, c.a...).Cast(dt)
					var b *Tensor
					if c.bT {
						b = RandN(dev, Float32, c.b[1], c.b[0]).Cast(dt).MT()
					} else {
						b = RandN(dev, Float32, c.b...).Cast(dt)
					}
					got := apply(ops.MatMulWide, none, a, b)
					if got.DType() != Float32 {
						t.Fatalf("dtype %s, want float32", got.DType())
					}
					af, bf := a.Cast(Float32), b.Cast(Float32)
					want := af.MatMul(bf)
					bound := af.Abs().MatMul(bf.Abs()) // the sum of |terms|
					g, err1 := f64s(got.To(CPU))
					w, err2 := f64s(want.To(CPU))
					s, err3 := f64s(bound.To(CPU))
					if err := errors.Join(err1, err2, err3); err != nil {
						t.Fatal(err)
					}
					if len(g) != len(w) {
						t.Fatalf("%d values, want %d", len(g), len(w))
					}
					for i := range g {
						if d := math.Abs(g[i] - w[i]); !(d <= 1e-6*s[i]) {
							t.Fatalf("[%d] = %g, want %g (sum of |terms| %g)", i, g[i], w[i], s[i])
						}
					}
				})
			}
		}
	}
}

// TestLinearWideGradients checks a 16-bit Linear (the autocast path, on
// the wide product) against the same layer computed on the widened
// values and rounded once: values, and the gradients of x, w and b, which
// must agree to bfloat16's rounding; and that CreateGraph records a
// differentiable backward.
func TestLinearWideGradients(t *testing.T) {
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			Seed(12)
			dt := BFloat16
			x := RandN(dev, Float32, 6, 40).Cast(dt).RequireGrad()
			w := RandN(dev, Float32, 24, 40).Cast(dt).RequireGrad()
			b := RandN(dev, Float32, 24).Cast(dt).RequireGrad()
			out := x.Linear(w, b)
			ref := x.Cast(Float32).Linear(w.Cast(Float32), b.Cast(Float32)).Cast(dt)
			if out.DType() != dt {
				t.Fatalf("dtype %s, want %s", out.DType(), dt)
			}
			attnClose(t, "value", out, ref, 1.0/128)
			u := RandN(dev, Float32, 6, 24).Cast(dt)
			xs := []*Tensor{x, w, b}
			gw, err := Grad(out.Mul(u).Sum(), xs, CreateGraph())
			if err != nil {
				t.Fatal(err)
			}
			gr, err := Grad(ref.Mul(u).Sum(), xs)
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"x", "w", "b"} {
				if gw[i].DType() != dt {
					t.Errorf("grad %s is %s, want %s", name, gw[i].DType(), dt)
				}
				attnClose(t, "grad "+name, gw[i], gr[i], 1.0/128)
			}
			if _, err := Grad(gw[0].Cast(Float32).Sum(), []*Tensor{w}); err != nil {
				t.Errorf("second derivative: %v", err)
			}
		})
	}
}
