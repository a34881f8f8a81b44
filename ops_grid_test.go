package lathe

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// GridSample's and AffineGrid's values, gradients and Hessian-vector
// products are checked against PyTorch by internal/conformance (grid.json,
// grad_grid.json); these check the API's errors, that a second derivative
// is the derivative of the first (finite differences, independent of the
// torch composite that made the references), the 16-bit floats, and
// concurrent use.

// gridValues is n seeded values in [-1.2, 1.2] whose source coordinates
// (for an input of the given sizes) stay 0.02 pixels or more from a whole
// or half pixel, the kinks of bilinear sampling and of reflection.
func gridValues(r *rand.Rand, n, k int, sizes []int, align bool) []float64 {
	out := make([]float64, 0, n*k)
	for len(out) < n*k {
		j := len(out) % k
		size := float64(sizes[len(sizes)-1-j])
		g := r.Float64()*2.4 - 1.2
		c := (g+1)*size/2 - 0.5
		if align {
			c = (g + 1) * (size - 1) / 2
		}
		if d := 2*c - math.Round(2*c); math.Abs(d) < 0.04 {
			continue
		}
		out = append(out, g)
	}
	return out
}

func randomF64(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = r.NormFloat64()
	}
	return out
}

// TestGridSampleSecondOrder checks, in float64, that the Hessian-vector
// product of L = Σ w·GridSample(x, grid) along (vx, vg) is the central
// difference of the first derivatives along (vx, vg), for every padding,
// both ranks, bilinear and bicubic: the mixed x-grid terms and the
// grid-grid terms included.
func TestGridSampleSecondOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 7))
	shapes := []struct{ x, grid []int }{{[]int{2, 2, 3, 4}, []int{2, 3, 2, 2}}, {[]int{1, 2, 3, 2, 3}, []int{1, 2, 2, 2, 3}}}
	for _, sh := range shapes {
		for _, mode := range []string{"bilinear", "bicubic"} {
			for _, padding := range []string{"zeros", "border", "reflection"} {
				for _, align := range []bool{false, true} {
					if mode == "bicubic" && len(sh.x) == 5 {
						continue
					}
					name := fmt.Sprintf("%dd/%s/%s/align=%v", len(sh.x)-2, mode, padding, align)
					t.Run(name, func(t *testing.T) {
						opts := []GridOption{GridMode(mode), GridPadding(padding)}
						if align {
							opts = append(opts, GridAlignCorners())
						}
						nx, ng := numel(sh.x), numel(sh.grid)
						k := sh.grid[len(sh.grid)-1]
						x0, g0 := randomF64(r, nx), gridValues(r, ng/k, k, sh.x[2:], align)
						vx, vg := randomF64(r, nx), randomF64(r, ng)
						outShape := append(append([]int{}, sh.x[:2]...), sh.grid[1:len(sh.grid)-1]...)
						w := FromSlice(CPU, randomF64(r, numel(outShape)), outShape...)
						// grads at x + h·vx, grid + h·vg, without a graph.
						grads := func(h float64, create bool) ([]*Tensor, []*Tensor) {
							xs, gs := make([]float64, nx), make([]float64, ng)
							for i := range xs {
								xs[i] = x0[i] + h*vx[i]
							}
							for i := range gs {
								gs[i] = g0[i] + h*vg[i]
							}
							x := FromSlice(CPU, xs, sh.x...).RequireGrad()
							g := FromSlice(CPU, gs, sh.grid...).RequireGrad()
							var o []GradOption
							if create {
								o = append(o, CreateGraph())
							}
							d, err := Grad(GridSample(x, g, opts...), []*Tensor{x, g}, append(o, WithGradient(w))...)
							if err != nil {
								t.Fatal(err)
							}
							return []*Tensor{x, g}, d
						}
						in, d := grads(0, true)
						dot := d[0].Mul(FromSlice(CPU, vx, sh.x...)).Sum().Add(d[1].Mul(FromSlice(CPU, vg, sh.grid...)).Sum())
						hvp, err := Grad(dot, in)
						if err != nil {
							t.Fatal(err)
						}
						const h = 1e-6
						_, plus := grads(h, false)
						_, minus := grads(-h, false)
						for i, what := range []string{"x", "grid"} {
							got, _ := hvp[i].Float64s()
							p, _ := plus[i].Float64s()
							m, _ := minus[i].Float64s()
							for j := range got {
								fd := (p[j] - m[j]) / (2 * h)
								if math.Abs(got[j]-fd) > 1e-6+1e-6*math.Abs(fd) {
									t.Errorf("HVP for %s[%d] = %.10g, finite difference %.10g", what, j, got[j], fd)
								}
							}
						}
					})
				}
			}
		}
	}
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

func TestGridSampleErrors(t *testing.T) {
	x, g := Zeros(CPU, Float32, 1, 2, 3, 4), Zeros(CPU, Float32, 1, 2, 2, 2)
	released := Zeros(CPU, Float32, 1, 2, 2, 2)
	released.Release()
	cases := []struct {
		name string
		y    *Tensor
		kind error
		arg  string
	}{
		{"nil x", GridSample(nil, g), ErrValue, "x"},
		{"nil grid", GridSample(x, nil), ErrValue, "grid"},
		{"released grid", GridSample(x, released), ErrReleased, "grid"},
		{"unknown mode", GridSample(x, g, GridMode("area")), ErrValue, "mode"},
		{"bicubic on 5-d", GridSample(Zeros(CPU, Float32, 1, 2, 2, 3, 4), Zeros(CPU, Float32, 1, 1, 2, 2, 3), GridMode("bicubic")), ErrValue, "mode"},
		{"unknown padding", GridSample(x, g, GridPadding("circular")), ErrValue, "padding_mode"},
		{"3-d x", GridSample(Zeros(CPU, Float32, 2, 3, 4), Zeros(CPU, Float32, 2, 4, 2)), ErrShape, "x"},
		{"grid rank", GridSample(x, Zeros(CPU, Float32, 1, 2, 2, 2, 2)), ErrShape, "grid"},
		{"grid last dim", GridSample(x, Zeros(CPU, Float32, 1, 2, 2, 3)), ErrShape, "grid"},
		{"batch", GridSample(x, Zeros(CPU, Float32, 2, 2, 2, 2)), ErrShape, "grid"},
		{"int x", GridSample(Zeros(CPU, Int32, 1, 2, 3, 4), g), ErrDType, "x"},
		{"mixed dtypes", GridSample(x, Zeros(CPU, Float64, 1, 2, 2, 2)), ErrDType, "grid"},
		{"empty spatial", GridSample(Zeros(CPU, Float32, 1, 2, 0, 4), g), ErrShape, "x"},
		{"affine size rank", AffineGrid(Zeros(CPU, Float32, 1, 2, 3), []int{1, 1, 4}, false), ErrValue, "size"},
		{"affine size 0", AffineGrid(Zeros(CPU, Float32, 1, 2, 3), []int{1, 1, 0, 4}, false), ErrValue, "size"},
		{"affine theta shape", AffineGrid(Zeros(CPU, Float32, 1, 2, 3), []int{1, 1, 2, 3, 4}, false), ErrShape, "theta"},
		{"affine theta batch", AffineGrid(Zeros(CPU, Float32, 2, 2, 3), []int{1, 1, 2, 3}, false), ErrShape, "theta"},
		{"affine int theta", AffineGrid(Zeros(CPU, Int64, 1, 2, 3), []int{1, 1, 2, 3}, false), ErrDType, "theta"},
		{"affine nil theta", AffineGrid(nil, []int{1, 1, 2, 3}, false), ErrValue, "theta"},
		{"affine huge", AffineGrid(Zeros(CPU, Float32, 1, 2, 3), []int{1, 1, 1 << 30, 1 << 30}, false), ErrOutOfMemory, "size"},
		{"affine overflow", AffineGrid(Zeros(CPU, Float32, 1, 3, 4), []int{1, 1, 1 << 62, 1 << 62, 4}, false), ErrOutOfMemory, "size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.y.Err()
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, c.kind) || e.Arg != c.arg {
				t.Fatalf("got %v, want a %v error naming %q", err, c.kind, c.arg)
			}
			if !strings.HasPrefix(e.Error(), "lathe: grid_sample:") && !strings.HasPrefix(e.Error(), "lathe: affine_grid:") {
				t.Errorf("message %q does not name the op", e.Error())
			}
		})
	}
}

// TestGridSampleDevices checks a foreign-device grid, the 16-bit floats
// (computed in float32 and rounded once, as the cpu computes them) and an
// empty batch on every device that opens.
func TestGridSampleDevices(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs, gs := randomF64(r, 2*3*4*5), gridValues(r, 2*6*7, 2, []int{4, 5}, false)
	want32, err := GridSample(FromSlice(CPU, xs, 2, 3, 4, 5).Cast(Float32), FromSlice(CPU, gs, 2, 6, 7, 2).Cast(Float32),
		GridPadding("border")).Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"cpu", "wgpu:0", "cuda:0"} {
		t.Run(dev, func(t *testing.T) {
			d, _ := ParseDevice(dev)
			x := FromSlice(CPU, xs, 2, 3, 4, 5).Cast(Float32).To(d) // wgpu has no float64
			if err := x.Err(); err != nil {
				t.Skipf("%s: %v", dev, err)
			}
			for _, dt := range []DType{Float32, Float16, BFloat16} {
				y := GridSample(x.Cast(dt), FromSlice(CPU, gs, 2, 6, 7, 2).Cast(Float32).To(d).Cast(dt), GridPadding("border"))
				if errors.Is(y.Err(), ErrUnsupported) && dt != Float32 {
					continue // a device without the 16-bit floats
				}
				got, err := y.Cast(Float32).To(CPU).Float32s()
				if err != nil {
					t.Fatalf("%v: %v", dt, err)
				}
				tol := map[DType]float64{Float32: 1e-5, Float16: 4e-3, BFloat16: 3e-2}[dt]
				for i := range got {
					if math.Abs(float64(got[i]-want32[i])) > tol*(1+math.Abs(float64(want32[i]))) {
						t.Fatalf("%v: [%d] %v, want %v", dt, i, got[i], want32[i])
					}
				}
			}
			empty := GridSample(Zeros(d, Float32, 0, 3, 4, 5), Zeros(d, Float32, 0, 2, 2, 2))
			if s := empty.Shape(); empty.Err() != nil || len(s) != 4 || s[0] != 0 {
				t.Errorf("empty batch: %v %v", s, empty.Err())
			}
			if dev != "cpu" {
				err := GridSample(x, FromSlice(CPU, gs, 2, 6, 7, 2).Cast(Float32)).Err()
				if !errors.Is(err, ErrDevice) {
					t.Errorf("grid on the cpu: got %v, want ErrDevice", err)
				}
			}
		})
	}
}

// TestGridSampleConcurrent runs forward and backward from many goroutines
// at once; every one must get the single-goroutine result.
func TestGridSampleConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	xs, gs := randomF64(r, 1*2*5*6), gridValues(r, 1*4*4, 2, []int{5, 6}, true)
	run := func() ([]float64, error) {
		x, g := FromSlice(CPU, xs, 1, 2, 5, 6).RequireGrad(), FromSlice(CPU, gs, 1, 4, 4, 2).RequireGrad()
		d, err := Grad(GridSample(x, g, GridPadding("reflection"), GridAlignCorners()).Square().Sum(), []*Tensor{x, g})
		if err != nil {
			return nil, err
		}
		return d[1].Float64s()
	}
	want, err := run()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			got, err := run()
			if err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
				err = fmt.Errorf("got %v, want %v", got, want)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestGridSampleSpecialGrads runs the backward at NaN, ±Inf and ±1e30 grid
// values in every mode and padding: the corner indices of such points are
// never cast from a non-finite float, so the gradient is computed (no
// error, no panic), and x's gradient is finite.
func TestGridSampleSpecialGrads(t *testing.T) {
	special := []float64{math.NaN(), 0.3, math.Inf(1), -0.2, math.Inf(-1), 0.9, 1e30, -1e30, 0.1, 0.4, -1, 1}
	for _, k := range []int{2, 3} {
		for _, mode := range []string{"bilinear", "nearest"} {
			for _, padding := range []string{"zeros", "border", "reflection"} {
				xShape, gShape := []int{1, 2, 3, 4}, []int{1, 2, 3, 2}
				if k == 3 {
					xShape, gShape = []int{1, 2, 2, 3, 4}, []int{1, 1, 2, 2, 3}
				}
				x := FromSlice(CPU, randomF64(rand.New(rand.NewPCG(1, 1)), numel(xShape)), xShape...).RequireGrad()
				g := FromSlice(CPU, special, gShape...).RequireGrad()
				d, err := Grad(GridSample(x, g, GridMode(mode), GridPadding(padding)).Square().Sum(), []*Tensor{x, g}, CreateGraph())
				if err != nil {
					t.Fatalf("%dd %s %s: %v", k, mode, padding, err)
				}
				if _, err := Grad(d[0].Sum().Add(d[1].Sum()), []*Tensor{x, g}); err != nil {
					t.Fatalf("%dd %s %s, second order: %v", k, mode, padding, err)
				}
				v, _ := d[0].Float64s()
				for i, e := range v {
					if math.IsNaN(e) || math.IsInf(e, 0) {
						t.Errorf("%dd %s %s: x's gradient [%d] is %v", k, mode, padding, i, e)
					}
				}
			}
		}
	}
}
