package nn

import (
	"math"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestChannelDropout: Dropout1d, 2d and 3d zero whole (n, c) channels
// (dim 0's of an unbatched input, as torch 1.13 takes them), each with
// probability p (5 standard errors, a fixed seed), scale the rest by
// 1/(1-p), and have that mask as x's gradient; in evaluation mode, with
// p = 0 they pass x, with p = 1 give zeros; on the cpu, cuda:0 and wgpu:0.
func TestChannelDropout(t *testing.T) {
	onDevices(t, func(t *testing.T, dev lathe.Device) {
		const p = 0.3
		for _, c := range []struct {
			name     string
			m        Module
			shape    []int
			channels int // leading dims that index a channel
		}{
			{"dropout1d", NewDropout1d(p), []int{40, 50, 6}, 2},
			{"dropout1d/unbatched", NewDropout1d(p), []int{2000, 6}, 1},
			{"dropout2d", NewDropout2d(p), []int{40, 50, 3, 2}, 2},
			{"dropout2d/3-d is (N, C, L)", NewDropout2d(p), []int{40, 50, 6}, 2},
			{"dropout3d", NewDropout3d(p), []int{20, 100, 2, 1, 3}, 2},
			{"dropout3d/unbatched", NewDropout3d(p), []int{2000, 1, 2, 3}, 1},
		} {
			t.Run(c.name, func(t *testing.T) {
				lathe.Seed(21)
				x := lathe.Ones(lathe.CPU, lathe.Float32, c.shape...).To(dev).RequireGrad()
				y := c.m.Forward(x)
				if err := y.Sum().Backward(); err != nil {
					t.Fatal(err)
				}
				v, g := values(t, y.To(lathe.CPU)), values(t, x.Grad().To(lathe.CPU))
				n := numel(c.shape[:c.channels])
				per := len(v) / n
				dropped := 0
				for ch := range n {
					first := v[ch*per]
					if first != 0 && math.Abs(first-1/(1-p)) > 1e-6 {
						t.Fatalf("channel %d: value %v, want 0 or %v", ch, first, 1/(1-p))
					}
					for i := ch * per; i < (ch+1)*per; i++ {
						if v[i] != first || g[i] != first {
							t.Fatalf("channel %d is not whole: value %v, gradient %v, its first %v", ch, v[i], g[i], first)
						}
					}
					if first == 0 {
						dropped++
					}
				}
				if f := float64(dropped) / float64(n); math.Abs(f-p) > 5*math.Sqrt(p*(1-p)/float64(n)) {
					t.Errorf("%d of %d channels dropped (%.3f), want p = %v", dropped, n, f, p)
				}
				c.m.Train(false)
				defer c.m.Train(true)
				if got := values(t, c.m.Forward(x).Sum().To(lathe.CPU))[0]; got != float64(len(v)) {
					t.Errorf("evaluation mode: sum %v, want x's %d", got, len(v))
				}
			})
		}
		x := lathe.Ones(lathe.CPU, lathe.Float32, 2, 3, 4).To(dev)
		for _, c := range []struct {
			m    Module
			want float64
		}{{NewDropout2d(0), 24}, {NewDropout2d(1), 0}, {NewDropout1d(1), 0}, {NewFeatureAlphaDropout(0), 24}} {
			if got := values(t, c.m.Forward(x).Sum().To(lathe.CPU))[0]; got != c.want {
				t.Errorf("%T %+v: sum %v, want %v", c.m, c.m, got, c.want)
			}
		}
	})
}

// TestAlphaDropout: AlphaDropout keeps a standard normal input's mean 0
// and std 1 (5 standard errors), each element either a·x + α'·a·p or,
// dropped, -α'·a·(1-p), torch's formula; FeatureAlphaDropout drops whole
// channels; on the cpu, cuda:0 and wgpu:0.
func TestAlphaDropout(t *testing.T) {
	onDevices(t, func(t *testing.T, dev lathe.Device) {
		const p, alpha = 0.2, 1.7580993408473766
		a := 1 / math.Sqrt((alpha*alpha*p+1)*(1-p))
		lathe.Seed(5)
		x := lathe.RandN(lathe.CPU, lathe.Float64, 200, 500)
		xv := values(t, x)
		y := NewAlphaDropout(p).Forward(x.Cast(lathe.Float32).To(dev))
		v := values(t, y.To(lathe.CPU))
		dropped := 0
		for i := range v {
			switch {
			case math.Abs(v[i]+alpha*a*(1-p)) < 1e-5:
				dropped++
			case math.Abs(v[i]-(a*xv[i]+alpha*a*p)) > 1e-5:
				t.Fatalf("element %d: %v of x %v, neither kept (%v) nor dropped (%v)", i, v[i], xv[i], a*xv[i]+alpha*a*p, -alpha*a*(1-p))
			}
		}
		n := float64(len(v))
		if f := float64(dropped) / n; math.Abs(f-p) > 5*math.Sqrt(p*(1-p)/n) {
			t.Errorf("dropped %.4f, want %v", f, p)
		}
		if m, s := meanStd(v); math.Abs(m) > 5/math.Sqrt(n) || math.Abs(s-1) > 5*math.Sqrt(2/n) {
			t.Errorf("mean %v std %v, want 0 and 1", m, s)
		}
		// Feature alpha dropout: one choice per (n, c) channel.
		y = NewFeatureAlphaDropout(p).Forward(lathe.Zeros(dev, lathe.Float32, 400, 10, 3))
		v = values(t, y.To(lathe.CPU))
		for ch := range 4000 {
			if v[3*ch] != v[3*ch+1] || v[3*ch] != v[3*ch+2] {
				t.Fatalf("channel %d is not whole: %v", ch, v[3*ch:3*ch+3])
			}
		}
	})
}

// TestDropoutModulesErrors: a p outside [0, 1], an integer x and ranks
// that torch refuses are errors naming the argument; the layers have no
// parameters.
func TestDropoutModulesErrors(t *testing.T) {
	x := lathe.Ones(lathe.CPU, lathe.Float32, 2, 3, 4)
	for _, c := range []struct {
		name string
		y    *lathe.Tensor
		kind error
		arg  string
	}{
		{"dropout2d p", NewDropout2d(1.5).Forward(x), lathe.ErrValue, "p"},
		{"dropout1d p", NewDropout1d(-0.1).Forward(x), lathe.ErrValue, "p"},
		{"alpha p NaN", NewAlphaDropout(math.NaN()).Forward(x), lathe.ErrValue, "p"},
		{"dropout1d 4-d", NewDropout1d(0.5).Forward(lathe.Ones(lathe.CPU, lathe.Float32, 1, 2, 3, 4)), lathe.ErrShape, "x"},
		{"dropout2d 1-d", NewDropout2d(0.5).Forward(lathe.Ones(lathe.CPU, lathe.Float32, 4)), lathe.ErrShape, "x"},
		{"feature alpha 1-d", NewFeatureAlphaDropout(0.5).Forward(lathe.Ones(lathe.CPU, lathe.Float32, 4)), lathe.ErrShape, "x"},
		{"dropout3d 0-d", NewDropout3d(0.5).Forward(lathe.Scalar(lathe.CPU, float32(1))), lathe.ErrShape, "x"},
		{"dropout2d int", NewDropout2d(0.5).Forward(lathe.Zeros(lathe.CPU, lathe.Int64, 2, 3)), lathe.ErrDType, "x"},
		{"dropout2d nil", NewDropout2d(0.5).Forward(nil), lathe.ErrValue, "x"},
	} {
		wantArgErr(t, c.y.Err(), c.kind, c.arg)
	}
	for _, m := range []Module{NewDropout1d(0.5), NewDropout2d(0.5), NewDropout3d(0.5), NewAlphaDropout(0.5), NewFeatureAlphaDropout(0.5)} {
		if len(m.Parameters()) != 0 || m.To(lathe.CPU) != nil {
			t.Errorf("%T has parameters", m)
		}
	}
}

// onDevices runs f on the cpu, cuda:0 and wgpu:0, skipping a GPU by name
// where it does not open.
func onDevices(t *testing.T, f func(t *testing.T, dev lathe.Device)) {
	for _, dev := range []lathe.Device{lathe.CPU, lathe.CUDA(0), lathe.WGPU(0)} {
		t.Run(dev.String(), func(t *testing.T) { f(t, deviceOrSkip(t, dev)) })
	}
}

// deviceOrSkip returns dev, or skips t where it does not open.
func deviceOrSkip(t *testing.T, dev lathe.Device) lathe.Device {
	t.Helper()
	skipUnavailable(t, dev)
	return dev
}
