package lathe

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestNormsEps: every norm takes eps as torch does and checks it by one
// rule (ops.CheckEps). With eps = +Inf the normalised values are 0, so
// the result is the bias, x's and the weight's gradients are 0 and the
// bias's the count of rows, as torch gives (BatchNorm and GroupNorm
// refused it where LayerNorm took it); NaN and a negative eps are an
// ErrValue naming eps for each.
func TestNormsEps(t *testing.T) {
	norms := []struct {
		name string
		f    func(x, w, b *Tensor, eps float64) *Tensor
	}{
		{"layer_norm", func(x, w, b *Tensor, eps float64) *Tensor { return x.LayerNorm([]int{3}, w, b, eps) }},
		{"batch_norm/training", func(x, w, b *Tensor, eps float64) *Tensor {
			return x.BatchNorm(nil, nil, w, b, true, 0.1, eps)
		}},
		{"batch_norm/eval", func(x, w, b *Tensor, eps float64) *Tensor {
			dev := x.Device()
			return x.BatchNorm(Zeros(dev, Float32, 3), Ones(dev, Float32, 3), w, b, false, 0.1, eps)
		}},
		{"group_norm", func(x, w, b *Tensor, eps float64) *Tensor {
			return x.Reshape(2, 3, 1).GroupNorm(1, w, b, eps).Reshape(2, 3)
		}},
	}
	for _, dev := range biDevices(t) {
		for _, n := range norms {
			t.Run(dev.String()+"/"+n.name, func(t *testing.T) {
				x := FromSlice(dev, []float32{1, 2, 4, 3, -1, 0}, 2, 3).RequireGrad()
				w := FromSlice(dev, []float32{2, 3, 4}).RequireGrad()
				b := FromSlice(dev, []float32{0.5, 0.25, -1}).RequireGrad()
				y := n.f(x, w, b, math.Inf(1))
				got, err := y.Float32s()
				if err != nil {
					t.Fatalf("eps +Inf: %v", err)
				}
				if want := []float32{0.5, 0.25, -1, 0.5, 0.25, -1}; !slices.Equal(got, want) {
					t.Errorf("eps +Inf: %v, want the bias in every row %v", got, want)
				}
				if err := y.Sum().Backward(); err != nil {
					t.Fatal(err)
				}
				for _, g := range []struct {
					name string
					of   *Tensor
					want []float32
				}{{"x", x, make([]float32, 6)}, {"weight", w, make([]float32, 3)}, {"bias", b, []float32{2, 2, 2}}} {
					if v, err := g.of.Grad().Float32s(); err != nil || !slices.Equal(v, g.want) {
						t.Errorf("eps +Inf: %s's gradient %v (%v), want %v", g.name, v, err, g.want)
					}
				}
				for _, eps := range []float64{math.NaN(), -1e-5, math.Inf(-1)} {
					var e *Error
					if err := n.f(x, w, b, eps).Err(); !errors.As(err, &e) || !errors.Is(err, ErrValue) || e.Arg != "eps" {
						t.Errorf("eps %v: %v, want an ErrValue naming eps", eps, err)
					}
				}
			})
		}
	}
}
