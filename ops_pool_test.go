package lathe

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// Pooling's values, gradients and second derivatives are checked against
// PyTorch by internal/conformance (testdata/conformance/pool.json and
// grad_pool.json); these tests cover the API around them: the options, the
// errors, unbatched inputs, and the parallel path.

// Options that do not apply, and values the op cannot take, are ErrValue
// errors of the result, never panics.
func TestPoolOptionErrors(t *testing.T) {
	x := Zeros(CPU, Float32, 1, 2, 6, 6)
	idx := Zeros(CPU, Int64, 1, 2, 3, 3)
	cases := map[string]*Tensor{
		"max/same":             x.MaxPool2d(2, PaddingSame()),
		"max/groups":           x.MaxPool2d(2, Groups(2)),
		"max/output_padding":   x.MaxPool2d(2, OutputPadding(1)),
		"max/exclude":          x.MaxPool2d(2, ExcludePadding()),
		"max/divisor":          x.MaxPool2d(2, Divisor(3)),
		"max/stride_count":     x.MaxPool2d(2, Stride(1, 1, 1)),
		"max/kernel_count":     x.MaxPool2d(0, KernelSize(2, 2, 2)),
		"max/dilation0":        x.MaxPool2d(2, Dilation(0)),
		"avg/dilation":         x.AvgPool2d(2, Dilation(2)),
		"avg/divisor0":         x.AvgPool2d(2, Divisor(0)),
		"avg/padding":          x.AvgPool2d(3, Padding(2)),
		"avg/negative_padding": x.AvgPool2d(3, Padding(-1)),
		"adaptive/empty":       x.AdaptiveAvgPool2d(),
		"adaptive/size0":       x.AdaptiveAvgPool2d(0),
		"adaptive_max/count":   x.AdaptiveMaxPool2d(1, 2, 3),
		"unpool/output_count":  idx.Cast(Float32).MaxUnpool2d(idx, 2, OutputSize(6)),
		"unpool/output_small":  idx.Cast(Float32).MaxUnpool2d(idx, 2, OutputSize(4, 6)),
	}
	for name, y := range cases {
		t.Run(name, func(t *testing.T) {
			if err := y.Err(); !errors.Is(err, ErrValue) {
				t.Fatalf("error %v, want ErrValue", err)
			}
		})
	}
	v, i := x.MaxPool2dWithIndices(2, Padding(2))
	if !errors.Is(v.Err(), ErrValue) || !errors.Is(i.Err(), ErrValue) {
		t.Errorf("with indices: errors %v and %v, want ErrValue for both", v.Err(), i.Err())
	}
}

// Wrong inputs: their rank, dtype, and indices that do not fit.
func TestPoolInputErrors(t *testing.T) {
	x := Zeros(CPU, Float64, 1, 2, 4, 4)
	v, idx := x.MaxPool2dWithIndices(2)
	cases := []struct {
		name string
		y    *Tensor
		kind error
	}{
		{"rank2", Zeros(CPU, Float64, 4, 4).MaxPool2d(2), ErrShape},
		{"rank4_for_1d", x.AvgPool1d(2), ErrShape},
		{"int", Zeros(CPU, Int32, 1, 1, 4, 4).AvgPool2d(2), ErrDType},
		{"too_small", x.MaxPool2d(5), ErrShape},
		{"failed_input", Failed(errors.New("boom")).AvgPool2d(2), nil},
		{"unpool/i32", v.MaxUnpool2d(idx.Cast(Int32), 2), ErrDType},
		{"unpool/shape", v.MaxUnpool2d(idx.Reshape(1, 2, 4, 1), 2), ErrShape},
		{"unpool/range", v.MaxUnpool2d(idx.AddScalar(16), 2), ErrIndex},
		{"unpool/negative", v.MaxUnpool2d(idx.SubScalar(1), 2), ErrIndex},
		{"unpool/nil", v.MaxUnpool2d(nil, 2), ErrValue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.y.Err()
			var le *Error
			switch {
			case err == nil:
				t.Fatal("no error")
			case c.kind != nil && !errors.Is(err, c.kind):
				t.Fatalf("error %v, want kind %v", err, c.kind)
			case c.kind != nil && !errors.As(err, &le):
				t.Fatalf("error %v (%T) is not a *lathe.Error", err, err)
			}
		})
	}
}

// An unbatched (C, H, W) input pools as a batch of one, as in PyTorch.
func TestPoolUnbatched(t *testing.T) {
	data := make([]float64, 2*5*5)
	for i := range data {
		data[i] = math.Sin(float64(i))
	}
	x3, x4 := FromSlice(CPU, data, 2, 5, 5), FromSlice(CPU, data, 1, 2, 5, 5)
	v3, i3 := x3.MaxPool2dWithIndices(2, Stride(1))
	v4, i4 := x4.MaxPool2dWithIndices(2, Stride(1))
	pairs := map[string][2]*Tensor{
		"max":      {v3, v4},
		"indices":  {i3.Cast(Float64), i4.Cast(Float64)},
		"avg":      {x3.AvgPool2d(2, Padding(1)), x4.AvgPool2d(2, Padding(1))},
		"adaptive": {x3.AdaptiveAvgPool2d(2, 3), x4.AdaptiveAvgPool2d(2, 3)},
		"unpool":   {v3.MaxUnpool2d(i3, 2, Stride(1)), v4.MaxUnpool2d(i4, 2, Stride(1))},
	}
	for name, p := range pairs {
		t.Run(name, func(t *testing.T) {
			a, err := p[0].Float64s()
			if err != nil {
				t.Fatal(err)
			}
			b, err := p[1].Float64s()
			if err != nil {
				t.Fatal(err)
			}
			if p[0].Rank() != 3 || !slices.Equal(a, b) {
				t.Fatalf("unbatched %v %v, batched %v", p[0].Shape(), a, b)
			}
		})
	}
}

// Many planes take the goroutine path; each plane must still match the
// same pooling of that plane alone (which runs on one goroutine).
func TestPoolParallelMatchesSerial(t *testing.T) {
	const n, c, h, w = 2, 32, 24, 24
	data := make([]float32, n*c*h*w)
	for i := range data {
		data[i] = float32(math.Sin(0.37 * float64(i)))
	}
	x := FromSlice(CPU, data, n, c, h, w).RequireGrad()
	pools := map[string]func(*Tensor) *Tensor{
		"max":      func(x *Tensor) *Tensor { return x.MaxPool2d(3, Stride(2), Padding(1)) },
		"avg":      func(x *Tensor) *Tensor { return x.AvgPool2d(3, Stride(2), Padding(1), CeilMode()) },
		"adaptive": func(x *Tensor) *Tensor { return x.AdaptiveAvgPool2d(5) },
	}
	for name, f := range pools {
		t.Run(name, func(t *testing.T) {
			y := f(x)
			g, err := Grad(y.Square().Sum(), []*Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range [][2]int{{0, 0}, {1, 17}, {1, 31}} {
				plane := x.Detach().Narrow(0, p[0], 1).Narrow(1, p[1], 1).Contiguous()
				want, _ := f(plane).Float32s()
				got, _ := y.Narrow(0, p[0], 1).Narrow(1, p[1], 1).Contiguous().Float32s()
				if !slices.Equal(got, want) {
					t.Fatalf("plane %v: values differ", p)
				}
				plane = plane.RequireGrad()
				gw, err := Grad(f(plane).Square().Sum(), []*Tensor{plane})
				if err != nil {
					t.Fatal(err)
				}
				wantG, _ := gw[0].Float32s()
				gotG, _ := g[0].Narrow(0, p[0], 1).Narrow(1, p[1], 1).Contiguous().Float32s()
				if !slices.Equal(gotG, wantG) {
					t.Fatalf("plane %v: gradients differ", p)
				}
			}
		})
	}
}

// Third derivatives: each backward op's rule is recorded too, so the
// gradient of a second derivative exists. For y = Σ avg_pool(x)³ the third
// derivative along v, v, v is 6·Σ avg_pool(v)³ at any x.
func TestPoolThirdDerivative(t *testing.T) {
	x := FromSlice(CPU, []float64{0.3, -1.2, 2.0, 0.7, 1.1, -0.4, 0.9, 0.2, -0.8}, 1, 1, 3, 3).RequireGrad()
	vData := []float64{1, -0.5, 0.25, 2, 0, -1, 0.5, 1.5, -2}
	v := FromSlice(CPU, vData, 1, 1, 3, 3)
	pool := func(x *Tensor) *Tensor { return x.AvgPool2d(2, Stride(1), Padding(1), ExcludePadding()) }
	y := pool(x).PowScalar(3).Sum()
	d := func(f *Tensor) *Tensor {
		g, err := Grad(f, []*Tensor{x}, CreateGraph())
		if err != nil {
			t.Fatal(err)
		}
		return g[0].Mul(v).Sum()
	}
	got, err := d(d(d(y))).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := pool(v).PowScalar(3).Sum().MulScalar(6).Float64s()
	if math.Abs(got[0]-want[0]) > 1e-12*math.Abs(want[0]) {
		t.Fatalf("third derivative %v, want %v", got[0], want[0])
	}
}

func ExampleTensor_MaxPool2dWithIndices() {
	x := FromSlice(CPU, []float32{
		1, 5, 2, 0,
		3, 4, 8, 1,
		0, 2, 6, 7,
		9, 1, 3, 2,
	}, 1, 1, 4, 4)
	v, i := x.MaxPool2dWithIndices(2)
	values, _ := v.Float32s()
	indices, _ := i.Int64s()
	back, _ := v.MaxUnpool2d(i, 2).Float32s()
	fmt.Println(values, indices)
	fmt.Println(back)
	// Output:
	// [5 8 9 7] [1 6 12 11]
	// [0 5 0 0 0 0 8 0 0 0 0 7 9 0 0 0]
}

// TestMaxPoolNaNAndTies: a window's maximum is its last NaN where it holds
// NaNs (torch's cpu kernel takes every NaN it meets), and the first of
// tied values otherwise; the indices say which, on runs long enough for
// every loop the cpu has.
func TestMaxPoolNaNAndTies(t *testing.T) {
	nan := math.NaN()
	x := FromSlice(CPU, []float64{
		1, nan, 3, 3,
		nan, 0, 2, 1,
	}, 1, 1, 2, 4)
	for _, dt := range []DType{Float64, Float32} {
		v, idx := x.Cast(dt).MaxPool2dWithIndices(2)
		got, err := v.Cast(Float64).Float64s()
		if err != nil {
			t.Fatal(err)
		}
		at, err := idx.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(got[0]) || got[1] != 3 || at[0] != 4 || at[1] != 2 {
			t.Errorf("%v: max pool of a window with two NaNs and one with a tie: %v at %v, want [NaN 3] at [4 2]", dt, got, at)
		}
	}
}
