package lathe

import (
	"errors"
	"math"
	"testing"
)

// lnCase is a shape for the fused-against-composite layer norm tests.
type lnCase struct {
	name   string
	x      []int
	norm   []int
	affine int  // 0 none, 1 weight only, 2 weight and bias
	transp bool // x is a contiguous tensor with its first two dims swapped
}

func lnCases() []lnCase {
	return []lnCase{
		{"gpt[8,64,64]", []int{8, 64, 64}, []int{64}, 2, false},
		{"d1", []int{5, 1}, []int{1}, 2, false},
		{"rows0", []int{0, 7}, []int{7}, 2, false},
		{"norm2d", []int{3, 4, 5}, []int{4, 5}, 2, false},
		{"transposed", []int{5, 6}, []int{6}, 2, true},
		// Leading dims that do not merge into one row stride.
		{"transposed3d", []int{3, 4, 5}, []int{5}, 2, true},
		{"transposed3d/norm2d", []int{3, 4, 5}, []int{4, 5}, 2, true},
		{"nil", []int{4, 9}, []int{9}, 0, false},
		{"weight_only", []int{4, 9}, []int{9}, 1, false},
		// Past one chunk of the backward's dw/db partials (8192/7 rows),
		// with a last chunk short.
		{"chunks[3000,7]", []int{3000, 7}, []int{7}, 2, false},
		{"1d", []int{33}, []int{33}, 2, false},
		// Rows past 64 values: a workgroup per row on wgpu (shorter rows
		// take an invocation each).
		{"wide[6,300]", []int{6, 300}, []int{300}, 2, false},
	}
}

// lnComposite is LayerNorm on the composite path (mean, sub, rsqrt, mul,
// add), the reference of the fused op.
func lnComposite(x, w, b *Tensor, shape []int, eps float64) *Tensor {
	y := layerNorm(x, layerNormAttrs{shape: shape, eps: eps})
	if w != nil {
		y = y.Mul(w)
	}
	if b != nil {
		y = y.Add(b)
	}
	return y
}

// TestLayerNormFused holds the fused kernels (forward and backward; the
// cpu's, wgpu's) to the composite on the same device: values, the gradients of x, weight and bias by the kernel
// and by the recorded backward, and the Hessian-vector products of the
// recorded backward; and, in float64, that Hessian-vector product to central
// finite differences of the kernel's gradient.
func TestLayerNormFused(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float64, Float32} {
			if dev != CPU && dt == Float64 {
				continue // float64 is the cpu's (and cuda's)
			}
			if !fusedLayerNorm(dev, dt) {
				t.Errorf("%s has no fused layer norm for %s", dev, dt)
				continue
			}
			testLayerNormFused(t, dev, dt)
		}
	}
}

func testLayerNormFused(t *testing.T, dev Device, dt DType) {
	{
		tol := 1e-12
		if dt == Float32 {
			tol = 2e-5
		}
		for _, c := range lnCases() {
			t.Run(dev.String()+"/"+dt.String()+"/"+c.name, func(t *testing.T) {
				Seed(5)
				x := RandN(dev, dt, c.x...)
				if c.transp {
					swapped := append([]int{c.x[1], c.x[0]}, c.x[2:]...)
					x = RandN(dev, dt, swapped...).Transpose(0, 1)
				}
				// A shifted, scaled x: the mean and variance are not 0 and 1
				// to start with.
				x = x.MulScalar(3).AddScalar(2).Detach().RequireGrad()
				xs := []*Tensor{x}
				var w, b *Tensor
				if c.affine >= 1 {
					w = RandN(dev, dt, c.norm...).RequireGrad()
					xs = append(xs, w)
				}
				if c.affine == 2 {
					b = RandN(dev, dt, c.norm...).RequireGrad()
					xs = append(xs, b)
				}
				const eps = 1e-5
				fused := x.LayerNorm(c.norm, w, b, eps)
				comp := lnComposite(x, w, b, c.norm, eps)
				attnClose(t, "forward", fused, comp, tol)
				u := RandNLike(fused)
				gf, err := Grad(fused.Mul(u).Sum(), xs, CreateGraph())
				if err != nil {
					t.Fatal(err)
				}
				gc, err := Grad(comp.Mul(u).Sum(), xs, CreateGraph())
				if err != nil {
					t.Fatal(err)
				}
				plain, err := Grad(x.LayerNorm(c.norm, w, b, eps).Mul(u).Sum(), xs)
				if err != nil {
					t.Fatal(err)
				}
				vs := make([]*Tensor, len(xs))
				for i, p := range xs {
					vs[i] = RandNLike(p)
				}
				dot := func(gs []*Tensor) *Tensor {
					s := gs[0].Mul(vs[0]).Sum()
					for i := 1; i < len(gs); i++ {
						s = s.Add(gs[i].Mul(vs[i]).Sum())
					}
					return s
				}
				// The bias's gradient is Σg, which no input changes: its
				// Hessian-vector product is nil (zero) on both paths.
				hf, err := Grad(dot(gf), xs, AllowUnused())
				if err != nil {
					t.Fatal(err)
				}
				hc, err := Grad(dot(gc), xs, AllowUnused())
				if err != nil {
					t.Fatal(err)
				}
				for i := range xs {
					name := [...]string{"x", "weight", "bias"}[i]
					attnClose(t, "grad "+name+" (kernel)", plain[i], gc[i], 10*tol)
					attnClose(t, "grad "+name+" (recorded)", gf[i], gc[i], 10*tol)
					lnCloseOrNil(t, "hvp "+name, hf[i], hc[i], xs[i], 10*tol)
				}
				if dt != Float64 {
					return
				}
				// (∇f(p+εv) - ∇f(p-εv)) / 2ε with the kernel's gradient.
				const h = 1e-6
				shifted := func(sign float64) []*Tensor {
					ys := make([]*Tensor, len(xs))
					for i, p := range xs {
						ys[i] = p.Detach().Add(vs[i].MulScalar(sign * h)).RequireGrad()
					}
					var yw, yb *Tensor
					if len(ys) > 1 {
						yw = ys[1]
					}
					if len(ys) > 2 {
						yb = ys[2]
					}
					g, err := Grad(ys[0].LayerNorm(c.norm, yw, yb, eps).Mul(u).Sum(), ys)
					if err != nil {
						t.Fatal(err)
					}
					return g
				}
				plus, minus := shifted(1), shifted(-1)
				for i := range xs {
					fd := plus[i].Sub(minus[i]).MulScalar(1 / (2 * h))
					lnCloseOrNil(t, "hvp "+[...]string{"x", "weight", "bias"}[i]+" vs finite differences", fd, hf[i], xs[i], 1e-6)
				}
			})
		}
	}
}

// lnCloseOrNil is attnClose where want may be nil, an unused input's
// gradient: zeros shaped as like.
func lnCloseOrNil(t *testing.T, what string, got, want, like *Tensor, tol float64) {
	t.Helper()
	if got == nil && want == nil {
		return
	}
	if got == nil {
		t.Fatalf("%s: nil, want a gradient", what)
	}
	if want == nil {
		want = ZerosLike(like)
	}
	attnClose(t, what, got, want, tol)
}

// TestLayerNormFusedHalf checks the narrow dtypes, which reach the fused
// kernel widened to float32 and come back rounded once: the result is the
// float32 layer norm of the same values, rounded, and so are its gradients.
func TestLayerNormFusedHalf(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{BFloat16, Float16} {
			if !fusedLayerNorm(dev, dt) {
				t.Errorf("%s has no fused layer norm for %s", dev, dt)
				continue
			}
			testLayerNormFusedHalf(t, dev, dt)
		}
	}
}

func testLayerNormFusedHalf(t *testing.T, dev Device, dt DType) {
	{
		t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
			Seed(6)
			x := RandN(dev, Float32, 16, 32).Cast(dt).RequireGrad()
			w := RandN(dev, Float32, 32).Cast(dt).RequireGrad()
			b := RandN(dev, Float32, 32).Cast(dt).RequireGrad()
			g := RandN(dev, Float32, 16, 32).Cast(dt)
			xs := []*Tensor{x, w, b}
			y := x.LayerNorm([]int{32}, w, b, 1e-5)
			if y.DType() != dt {
				t.Fatalf("result is %s, want %s", y.DType(), dt)
			}
			d, err := Grad(y, xs, WithGradient(g))
			if err != nil {
				t.Fatal(err)
			}
			wide := make([]*Tensor, 3)
			for i, p := range xs {
				wide[i] = p.Detach().Cast(Float32).RequireGrad()
			}
			y32 := wide[0].LayerNorm([]int{32}, wide[1], wide[2], 1e-5)
			d32, err := Grad(y32, wide, WithGradient(g.Cast(Float32)))
			if err != nil {
				t.Fatal(err)
			}
			// The same float32 computation, rounded to dt once: exactly.
			attnClose(t, "forward", y, y32.Cast(dt), 0)
			for i := range xs {
				attnClose(t, "grad "+[...]string{"x", "weight", "bias"}[i], d[i], d32[i].Cast(dt), 0)
			}
		})
	}
}

// TestLayerNormOneParamChecksItsShape: a weight without a bias (or a bias
// without a weight) whose shape is not normalized_shape is an ErrShape
// naming it, before the missing one is filled in: a normalized_shape near
// int's edge was allocated first, and failed as out of memory.
func TestLayerNormOneParamChecksItsShape(t *testing.T) {
	x := Ones(CPU, Float32, 2, 3)
	p := Ones(CPU, Float32, 3)
	for _, c := range []struct {
		name         string
		shape        []int
		weight, bias *Tensor
		arg          string
	}{
		{"weight/maxint", []int{math.MaxInt}, p, nil, "weight"},
		{"bias/2^40", []int{1 << 40}, nil, p, "bias"},
		{"weight/[2]", []int{2}, p, nil, "weight"},
	} {
		err := x.LayerNorm(c.shape, c.weight, c.bias, 1e-5).Err()
		var e *Error
		if !errors.Is(err, ErrShape) || !errors.As(err, &e) || e.Op != "layer_norm" || e.Arg != c.arg {
			t.Errorf("%s: %v, want an ErrShape of layer_norm naming %s", c.name, err, c.arg)
		}
	}
}
