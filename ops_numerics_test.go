package lathe

import (
	"fmt"
	"math"
	"testing"
)

// Numerical robustness at values where a naive formula loses its digits,
// against PyTorch 1.13's float32 results on the same inputs (torch's cpu
// kernels accumulate float32 in float64), on every device that opens.

// numClose says whether got is want within rel of want's magnitude (or of
// scale, where want is near 0).
func numClose(got, want, rel, scale float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), scale)
}

// TestVarLargeMean: the variance of rows whose mean is far larger than
// their spread, which wgpu's pairwise (Chan) update lost to the rounding
// of its running means: [1000.5, ..., 1000.75] had 0.5000203 for 0.5, the
// 1e8 row 14.93 for 17.07. Each row shape takes another kernel form:
// [2, 6] a workgroup per row, [16, 6] an invocation per row, [140000] a
// row split into parts and a second pass over their States.
//
//	r = [[1000.5, 1000.25, 1000, 1001, 999, 1000.75], [1e8+1, 1e8+2, 1e8+3, 1e8+5, 1e8+8, 1e8-3]]
//	x = torch.tensor(r, dtype=torch.float32)
//	x.var(-1)                      # [0.5, 17.066667556762695]
//	x.std(-1, unbiased=False)      # [0.64549720287323, 3.7712361812591553]
//	(torch.tensor(r[0]*16).reshape(16, 6) + torch.arange(16.).reshape(16, 1)*1000).var(-1)  # 0.5 each
//	torch.tensor([1000 + (i%7)*0.125 for i in range(140000)]).var()  # 0.06250044703483582
func TestVarLargeMean(t *testing.T) {
	rows := []float32{1000.5, 1000.25, 1000, 1001, 999, 1000.75, 1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 5, 1e8 + 8, 1e8 - 3}
	many := make([]float32, 16*6)
	for k := range 16 {
		for j := range 6 {
			many[k*6+j] = rows[j] + float32(1000*k)
		}
	}
	long := make([]float32, 140000)
	for i := range long {
		long[i] = 1000 + float32(i%7)*0.125
	}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			check := func(name string, y *Tensor, want ...float64) {
				t.Helper()
				got, err := y.Float32s()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for i, w := range want {
					if !numClose(float64(got[i]), w, 2e-6, 0) {
						t.Errorf("%s[%d] = %.9g, torch gives %.9g", name, i, got[i], w)
					}
				}
			}
			x := FromSlice(dev, rows, 2, 6)
			check("var[2,6]", x.Var(true, -1), 0.5, 17.066667556762695)
			check("std_biased[2,6]", x.Std(false, -1), 0.64549720287323, 3.7712361812591553)
			want := make([]float64, 16)
			for i := range want {
				want[i] = 0.5
			}
			check("var[16,6]", FromSlice(dev, many, 16, 6).Var(true, -1), want...)
			check("var[140000]", FromSlice(dev, long, len(long)).Var(true), 0.06250044703483582)
		})
	}
}

// TestNormOverflowGradient: a 2-norm whose squares overflow is +Inf, and
// its gradient is x·(g/norm) = 0, as in PyTorch; the composite's x²
// gave g·2x = 0·∞ = NaN where 2x overflows.
//
//	x = torch.tensor([[3e38, 3e38, 0, 0], [3e38, 1, 2, 0]], requires_grad=True)
//	n = torch.linalg.vector_norm(x, 2, -1)          # [inf, inf]
//	(n * torch.tensor([1., 1.25])).sum().backward()  # x.grad: zeros
func TestNormOverflowGradient(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float32, BFloat16} {
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				x := FromSlice(dev, []float32{3e38, 3e38, 0, 0, 3e38, 1, 2, 0}, 2, 4).Cast(dt).Detach().RequireGrad()
				n := x.Norm(2, -1)
				got, err := n.Float32s()
				if err != nil {
					t.Fatal(err)
				}
				if !math.IsInf(float64(got[0]), 1) || !math.IsInf(float64(got[1]), 1) {
					t.Errorf("norm = %v, torch gives [+Inf +Inf]", got)
				}
				w := FromSlice(dev, []float32{1, 1.25}, 2).Cast(dt)
				if err := n.Mul(w).Sum().Backward(); err != nil {
					t.Fatal(err)
				}
				g, err := x.Grad().Float32s()
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range g {
					if v != 0 {
						t.Errorf("grad[%d] = %g, torch gives 0", i, v)
					}
				}
			})
		}
	}
}

// TestLayerNormLargeMean: layer norm of rows whose mean is far larger than
// their spread (1e8 + multiples of 8, each exact in float32), forward and
// every gradient, against the same inputs in float64. wgpu's kernel took x
// - mean with the mean rounded to float32, a multiple of 8 here: y was
// [0, 0.48, -0.48, ...] for [-0.46, 0.07, -0.99, ...]. PyTorch 1.13's own
// float32 kernel rounds the same way (torch.layer_norm of the first row
// gives 0.108 for -0.461), so the reference is float64. [3, 8] takes an
// invocation per row, [2, 300] a workgroup.
func TestLayerNormLargeMean(t *testing.T) {
	devs := biDevices(t)
	for _, shape := range [][2]int{{3, 8}, {2, 300}} {
		rows, d := shape[0], shape[1]
		xs := make([]float64, rows*d)
		for i := range xs {
			xs[i] = 1e8 + 8*float64((i*37)%11-4)
		}
		want := layerNormParts(t, CPU, Float64, xs, rows, d)
		for _, dev := range devs {
			t.Run(fmt.Sprintf("%s/%dx%d", dev, rows, d), func(t *testing.T) {
				got := layerNormParts(t, dev, Float32, xs, rows, d)
				for part, w := range want {
					for i := range w {
						if !numClose(got[part][i], w[i], 1e-4, 1) {
							t.Errorf("[%d, %d] %s[%d] = %.6g, want %.6g", rows, d, []string{"y", "dx", "dw", "db"}[part], i, got[part][i], w[i])
							break
						}
					}
				}
			})
		}
	}
}

// layerNormParts is layer norm of xs as [rows, d] in dt on dev, with a
// weight and bias, and its gradients for a fixed weighting of y: y, dx, dw
// and db as float64s.
func layerNormParts(t *testing.T, dev Device, dt DType, xs []float64, rows, d int) [4][]float64 {
	t.Helper()
	ws, bs, gs := make([]float64, d), make([]float64, d), make([]float64, rows*d)
	for j := range ws {
		ws[j], bs[j] = 1+float64(j%5)/4, float64(j%3)/2
	}
	for i := range gs {
		gs[i] = float64(i%7) - 3
	}
	// Made in float64 on the cpu, then cast and moved: wgpu has no float64.
	on := func(v []float64, shape ...int) *Tensor { return FromSlice(CPU, v, shape...).Cast(dt).To(dev) }
	x, w, b := on(xs, rows, d).RequireGrad(), on(ws, d).RequireGrad(), on(bs, d).RequireGrad()
	y := x.LayerNorm([]int{d}, w, b, 1e-5)
	grads, err := Grad(y.Mul(on(gs, rows, d)).Sum(), []*Tensor{x, w, b})
	if err != nil {
		t.Fatal(err)
	}
	var out [4][]float64
	for i, r := range append([]*Tensor{y}, grads...) {
		if out[i], err = r.To(CPU).Cast(Float64).Float64s(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
