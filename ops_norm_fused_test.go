package lathe

import (
	"errors"
	"fmt"
	"strings"

	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The fused batch norm (dispatch/ops/batchnorm.go) against the composite,
// which the conformance suite holds to PyTorch: values, running
// statistics, gradients and second derivatives, on the layouts and edge
// sizes the kernels special-case.

// bnCase is x's shape and how to make it: perm, when set, makes x a
// permuted (non-contiguous) view of a contiguous tensor.
type bnCase struct {
	name  string
	shape []int
	perm  []int
}

var bnCases = []bnCase{
	{name: "rank2", shape: []int{5, 3}},
	{name: "rank3", shape: []int{3, 2, 5}},
	{name: "rank4", shape: []int{2, 3, 4, 5}},
	{name: "rank5", shape: []int{2, 2, 3, 2, 2}},
	// Planes of 320 values, which the AVX2 loops take (vectorMin).
	{name: "rank4-long-planes", shape: []int{2, 3, 16, 20}},
	// Planes of 1025, which the 16-bit loops widen in blocks of 512.
	{name: "rank4-planes-of-blocks", shape: []int{2, 3, 25, 41}},
	{name: "empty-batch", shape: []int{0, 3, 4}},
	{name: "one-channel", shape: []int{5, 1, 6}},
	{name: "no-channels", shape: []int{2, 0, 3}},
	{name: "transposed-rank2", shape: []int{4, 3}, perm: []int{1, 0}},
	{name: "permuted-rank4", shape: []int{2, 3, 4, 5}, perm: []int{0, 3, 1, 2}},
}

// bnInput is x of c.shape and dtype dt on dev (values around 3, so that
// the statistics' centring matters), requiring a gradient.
func bnInput(dev Device, c bnCase, dt DType) *Tensor {
	if c.perm == nil {
		return RandN(dev, dt, c.shape...).AddScalar(3).Detach().RequireGrad()
	}
	// The base has the shape that the permutation brings to c.shape; the
	// view, detached, is a leaf that is not contiguous.
	base := make([]int, len(c.shape))
	for i, p := range c.perm {
		base[p] = c.shape[i]
	}
	x := RandN(dev, dt, base...).AddScalar(3).Permute(c.perm...).Detach().RequireGrad()
	if x.IsContiguous() {
		panic("bnInput: the view is contiguous")
	}
	return x
}

// bnArgs is bnInput's x of dtype dt, with weight and bias of dtype pdt
// (nil unless affine), requiring gradients, and an upstream gradient of
// x's shape that is itself a strided view.
func bnArgs(dev Device, c bnCase, dt, pdt DType, affine bool) (x, w, b, g *Tensor) {
	x = bnInput(dev, c, dt)
	if affine {
		w, b = RandN(dev, pdt, c.shape[1]).RequireGrad(), RandN(dev, pdt, c.shape[1]).RequireGrad()
	}
	g = RandN(dev, dt, slices.Concat(c.shape[1:2], c.shape[:1], c.shape[2:])...).Transpose(0, 1)
	return x, w, b, g
}

// f64s is t's elements as float64s.
func f64s(t *Tensor) ([]float64, error) { return t.Cast(Float64).Float64s() }

// bnResult is what a training or eval step gives: y, the running
// statistics after it and the gradients of x, weight and bias.
type bnResult struct{ y, mean, variance, dx, dw, db []float64 }

func bnStep(t *testing.T, x, w, b, g *Tensor, training, fused bool) bnResult {
	t.Helper()
	c := x.Shape()[1]
	dt := x.DType()
	mean := Full(x.Device(), dt, 0.5, c)
	variance := Full(x.Device(), dt, 2, c)
	y := x.batchNorm(mean, variance, w, b, training, 0.1, 1e-5, fused)
	wrt := []*Tensor{x}
	if w != nil {
		wrt = append(wrt, w, b)
	}
	d, err := Grad(y, wrt, WithGradient(g))
	if err != nil {
		t.Fatal(err)
	}
	var r bnResult
	for _, p := range []struct {
		dst *[]float64
		t   *Tensor
	}{{&r.y, y}, {&r.mean, mean}, {&r.variance, variance}, {&r.dx, d[0]}} {
		if *p.dst, err = f64s(p.t); err != nil {
			t.Fatal(err)
		}
	}
	if w != nil {
		if r.dw, err = f64s(d[1]); err != nil {
			t.Fatal(err)
		}
		if r.db, err = f64s(d[2]); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TestBatchNormFusedMatchesComposite holds the fused kernels of every
// device that has them (the cpu's, cuda's) to the composite on the same
// device.
func TestBatchNormFusedMatchesComposite(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float32, Float64} {
			if !fusedBatchNorm(dev, dt) {
				if dev == CPU || dev.Kind == cudaKind {
					t.Errorf("%s has no fused batch norm for %v", dev, dt)
				}
				continue // wgpu runs batch norm as the composite
			}
			testBatchNormFused(t, dev, dt)
		}
	}
}

func testBatchNormFused(t *testing.T, dev Device, dt DType) {
	{
		tol := 1e-10
		if dt == Float32 {
			tol = 1e-4
		}
		for _, c := range bnCases {
			for _, training := range []bool{true, false} {
				for _, affine := range []bool{true, false} {
					name := fmt.Sprintf("%s/%v/%s/training=%v/affine=%v", dev, dt, c.name, training, affine)
					t.Run(name, func(t *testing.T) {
						Seed(7)
						x, w, b, g := bnArgs(dev, c, dt, dt, affine)
						got := bnStep(t, x, w, b, g, training, true)
						want := bnStep(t, x, w, b, g, training, false)
						for _, p := range []struct {
							name      string
							got, want []float64
						}{{"y", got.y, want.y}, {"running_mean", got.mean, want.mean}, {"running_var", got.variance, want.variance},
							{"dx", got.dx, want.dx}, {"dweight", got.dw, want.dw}, {"dbias", got.db, want.db}} {
							if !closeAll(p.got, p.want, tol) {
								t.Errorf("%s: fused %v, composite %v", p.name, p.got, p.want)
							}
						}
					})
				}
			}
		}
	}
}

// TestBatchNormMixedFused: a 16-bit x with float32 statistics and affine
// (autocast's activations into a float32 BatchNorm2d), run by the fused
// ops on x's 16 bits, gives bit for bit what casting x to float32, the
// float32 batch norm and rounding y back give (the path it replaces): y,
// the running statistics, dx in x's dtype and float32 dweight and dbias.
func TestBatchNormMixedFused(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float16, BFloat16} {
			if !fusedBatchNorm(dev, dt) {
				if dev == CPU {
					t.Errorf("cpu has no fused batch norm for %v", dt)
				}
				continue
			}
			for _, c := range bnCases {
				for _, training := range []bool{true, false} {
					for _, affine := range []bool{true, false} {
						t.Run(fmt.Sprintf("%s/%v/%s/training=%v/affine=%v", dev, dt, c.name, training, affine), func(t *testing.T) {
							testBatchNormMixed(t, dev, dt, c, training, affine)
						})
					}
				}
			}
		}
	}
}

func testBatchNormMixed(t *testing.T, dev Device, dt DType, c bnCase, training, affine bool) {
	Seed(11)
	x, w, b, g := bnArgs(dev, c, dt, Float32, affine)
	ch := c.shape[1]
	run := func(y *Tensor, mean, variance *Tensor) [][]float64 {
		if y.DType() != dt {
			t.Fatalf("y is %v, want %v", y.DType(), dt)
		}
		wrt := []*Tensor{x}
		if affine {
			wrt = append(wrt, w, b)
		}
		d, err := Grad(y, wrt, WithGradient(g))
		if err != nil {
			t.Fatal(err)
		}
		if d[0].DType() != dt || (affine && d[1].DType() != Float32) {
			t.Fatalf("gradients of dtypes %v and %v", d[0].DType(), d[len(d)-1].DType())
		}
		var out [][]float64
		for _, r := range append([]*Tensor{y, mean, variance}, d...) {
			v, err := f64s(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	stats := func() (*Tensor, *Tensor) { return Full(dev, Float32, 0.5, ch), Full(dev, Float32, 2, ch) }
	mean, variance := stats()
	got := run(x.BatchNorm(mean, variance, w, b, training, 0.1, 1e-5), mean, variance)
	refMean, refVar := stats()
	want := run(x.Cast(Float32).BatchNorm(refMean, refVar, w, b, training, 0.1, 1e-5).Cast(dt), refMean, refVar)
	for i, name := range []string{"y", "running_mean", "running_var", "dx", "dweight", "dbias"}[:len(got)] {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("%s: mixed %v, through float32 %v", name, got[i], want[i])
		}
	}
}

// TestBatchNormFusedSecondDerivative: the gradient of a recorded backward
// (CreateGraph) of the fused op, which runs its formulas as dispatch ops,
// matches the composite's in x, weight and the upstream gradient.
func TestBatchNormFusedSecondDerivative(t *testing.T) {
	for _, training := range []bool{true, false} {
		t.Run(fmt.Sprintf("training=%v", training), func(t *testing.T) {
			Seed(3)
			x := RandN(CPU, Float64, 3, 2, 4).RequireGrad()
			w, b := RandN(CPU, Float64, 2).RequireGrad(), RandN(CPU, Float64, 2).RequireGrad()
			g := RandN(CPU, Float64, 3, 2, 4).RequireGrad()
			v, u := RandN(CPU, Float64, 3, 2, 4), RandN(CPU, Float64, 2)
			run := func(fused bool) [][]float64 {
				mean, variance := Zeros(CPU, Float64, 2), Ones(CPU, Float64, 2)
				y := x.batchNorm(mean, variance, w, b, training, 0.1, 1e-5, fused)
				d, err := Grad(y, []*Tensor{x, w}, WithGradient(g), CreateGraph())
				if err != nil {
					t.Fatal(err)
				}
				s := d[0].Mul(v).Sum().Add(d[1].Mul(u).Sum())
				dd, err := Grad(s, []*Tensor{x, w, g})
				if err != nil {
					t.Fatal(err)
				}
				out := make([][]float64, len(dd))
				for i, t2 := range dd {
					if out[i], err = t2.Float64s(); err != nil {
						t.Fatal(err)
					}
				}
				return out
			}
			got, want := run(true), run(false)
			for i, name := range []string{"x", "weight", "grad"} {
				if !closeAll(got[i], want[i], 1e-10) {
					t.Errorf("d²/d%s: fused %v, composite %v", name, got[i], want[i])
				}
			}
		})
	}
}

// TestBatchNormMixedSecondDerivative: the recorded backward of the mixed
// type (a bfloat16 x, float32 weight) against the path it replaces, x cast
// to float32 and y back, both recorded.
func TestBatchNormMixedSecondDerivative(t *testing.T) {
	for _, training := range []bool{true, false} {
		t.Run(fmt.Sprintf("training=%v", training), func(t *testing.T) {
			Seed(3)
			x := RandN(CPU, BFloat16, 3, 2, 4).RequireGrad()
			w, b := RandN(CPU, Float32, 2).RequireGrad(), RandN(CPU, Float32, 2).RequireGrad()
			g := RandN(CPU, BFloat16, 3, 2, 4).RequireGrad()
			v, u := RandN(CPU, BFloat16, 3, 2, 4), RandN(CPU, Float32, 2)
			run := func(norm func(mean, variance *Tensor) *Tensor) [][]float64 {
				y := norm(Zeros(CPU, Float32, 2), Ones(CPU, Float32, 2))
				d, err := Grad(y, []*Tensor{x, w}, WithGradient(g), CreateGraph())
				if err != nil {
					t.Fatal(err)
				}
				s := d[0].Mul(v).Sum().Cast(Float32).Add(d[1].Mul(u).Sum())
				dd, err := Grad(s, []*Tensor{x, w, g})
				if err != nil {
					t.Fatal(err)
				}
				out := make([][]float64, len(dd))
				for i, t2 := range dd {
					if out[i], err = f64s(t2); err != nil {
						t.Fatal(err)
					}
				}
				return out
			}
			got := run(func(mean, variance *Tensor) *Tensor { return x.BatchNorm(mean, variance, w, b, training, 0.1, 1e-5) })
			want := run(func(mean, variance *Tensor) *Tensor {
				return x.Cast(Float32).BatchNorm(mean, variance, w, b, training, 0.1, 1e-5).Cast(BFloat16)
			})
			for i, name := range []string{"x", "weight", "grad"} {
				if !closeAll(got[i], want[i], 1e-6) {
					t.Errorf("d²/d%s: mixed %v, through float32 %v", name, got[i], want[i])
				}
			}
		})
	}
}

// TestBatchNormMomentsGrad: batch_norm_moments' own rule (BatchNorm runs
// it outside the tape, so only a direct call reaches it) against the
// gradients of Mean and Var.
func TestBatchNormMomentsGrad(t *testing.T) {
	Seed(5)
	x := RandN(CPU, Float64, 3, 2, 4).RequireGrad()
	r := RandN(CPU, Float64, 2, 2)
	m := apply(ops.BatchNormMoments, none, x)
	got, err := Grad(m.Mul(r).Sum(), []*Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	dims := []int{0, 2}
	s := x.Mean(dims...).Mul(r.Narrow(0, 0, 1).Reshape(2)).Sum().Add(x.Var(false, dims...).Mul(r.Narrow(0, 1, 1).Reshape(2)).Sum())
	want, err := Grad(s, []*Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := f64s(got[0])
	w, _ := f64s(want[0])
	if !closeAll(g, w, 1e-12) {
		t.Errorf("moments' gradient %v, want %v", g, w)
	}
}

// TestBatchNormFusedEmptyBatch: an empty batch (no samples, or samples
// of no positions) gives an empty y, zero weight and bias gradients, and
// leaves the running statistics as they were, as PyTorch's
// native_batch_norm, through the fused ops and the composite alike (the
// composite, the path of wgpu, gave NaN weight gradients: its empty
// batch's NaN mean times a zero sum), on every device that opens.
func TestBatchNormFusedEmptyBatch(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, shape := range [][]int{{0, 3, 2}, {0, 3}, {2, 3, 0}} {
			for _, fused := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%v/fused=%v", dev, shape, fused), func(t *testing.T) {
					x := Zeros(dev, Float32, shape...).RequireGrad()
					w, b := Ones(dev, Float32, 3).RequireGrad(), Zeros(dev, Float32, 3).RequireGrad()
					mean, variance := Full(dev, Float32, 0.5, 3), Full(dev, Float32, 2, 3)
					y := x.batchNorm(mean, variance, w, b, true, 0.1, 1e-5, fused)
					d, err := Grad(y.Sum(), []*Tensor{w, b})
					if err != nil {
						t.Fatal(err)
					}
					for i, want := range [][]float64{{0, 0, 0}, {0, 0, 0}, {0.5, 0.5, 0.5}, {2, 2, 2}} {
						v, err := f64s([]*Tensor{d[0], d[1], mean, variance}[i].To(CPU))
						if err != nil || !slices.Equal(v, want) {
							t.Errorf("result %d is %v (%v), want %v", i, v, err, want)
						}
					}
					if !slices.Equal(y.Shape(), shape) {
						t.Errorf("y has shape %v", y.Shape())
					}
				})
			}
		}
	}
}

// BenchmarkBatchNormStep is float32 BatchNorm in training, with weight,
// bias and running statistics, forward and backward on [32,16,32,32] (the
// batch norms of lathe-bench's "resnet block b32 3x32x32 w16"), upstream
// gradient given: the fused ops, and the composite they replace; and the
// fused ops on a bfloat16 x (float32 statistics, as under Autocast).
// Compare with torch.nn.functional.batch_norm and its backward on the same
// machine.
func BenchmarkBatchNormStep(b *testing.B) {
	for _, c := range []struct {
		name  string
		fused bool
		dt    DType
	}{{"fused", true, Float32}, {"composite", false, Float32}, {"fused bfloat16", true, BFloat16}} {
		b.Run(c.name, func(b *testing.B) {
			Seed(1)
			x := RandN(CPU, Float32, 32, 16, 32, 32).Cast(c.dt).RequireGrad()
			w := RandN(CPU, Float32, 16).RequireGrad()
			bias := RandN(CPU, Float32, 16).RequireGrad()
			rm, rv := Zeros(CPU, Float32, 16), Ones(CPU, Float32, 16)
			g := RandN(CPU, Float32, 32, 16, 32, 32).Cast(c.dt)
			b.SetBytes(int64(c.dt.Size() * x.Numel()))
			for b.Loop() {
				y := x.batchNorm(rm, rv, w, bias, true, 0.1, 1e-5, c.fused)
				d, err := Grad(y, []*Tensor{x, w, bias}, WithGradient(g))
				if err != nil {
					b.Fatal(err)
				}
				y.Release()
				for _, t := range d {
					t.Release()
				}
			}
		})
	}
}

// TestBatchNormOpsMixedDTypes: the fused ops give a 16-bit x float32
// moments and refuse 16-bit statistics, naming the argument, the dtype and
// the cast that fixes it.
func TestBatchNormOpsMixedDTypes(t *testing.T) {
	x := Ones(CPU, BFloat16, 2, 3)
	if m := apply(ops.BatchNormMoments, none, x); m.Err() != nil || m.DType() != Float32 {
		t.Errorf("moments of bfloat16 x: %v %v, want float32", m.DType(), m.Err())
	}
	c := Ones(CPU, BFloat16, 3)
	err := apply(ops.BatchNormApply, ops.BatchNormParams{Eps: 1e-5}, x, c, c, c, c).Err()
	if !errors.Is(err, ErrDType) || !strings.Contains(err.Error(), `"mean"`) || !strings.Contains(err.Error(), ".Cast(lathe.Float32)") {
		t.Errorf("bfloat16 statistics: %v, want ErrDType naming mean and the cast", err)
	}
}
