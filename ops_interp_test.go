package lathe

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// Interpolate's values are checked against PyTorch by internal/conformance
// (interp.json, grad_interp.json); these check the API: errors as values
// naming the option, and the sizes that the options give.

func TestInterpolateSizes(t *testing.T) {
	x := Zeros(CPU, Float32, 2, 3, 4, 5)
	cases := []struct {
		name string
		x    *Tensor
		opts []InterpOption
		want []int
	}{
		{"size/one", x, []InterpOption{Size(6)}, []int{2, 3, 6, 6}},
		{"size/each", x, []InterpOption{Size(7, 2), Mode("bilinear")}, []int{2, 3, 7, 2}},
		{"scale/floor", x, []InterpOption{ScaleFactor(1.7), Mode("bicubic")}, []int{2, 3, 6, 8}},
		{"scale/each", x, []InterpOption{ScaleFactor(0.5, 2), Mode("nearest-exact")}, []int{2, 3, 2, 10}},
		{"scale/recompute", x, []InterpOption{ScaleFactor(1.7), RecomputeScaleFactor(), Mode("bilinear"), AlignCorners()}, []int{2, 3, 6, 8}},
		{"linear", Zeros(CPU, Float64, 1, 2, 5), []InterpOption{Mode("linear"), ScaleFactor(2)}, []int{1, 2, 10}},
		{"trilinear", Zeros(CPU, Float64, 1, 1, 2, 3, 4), []InterpOption{Mode("trilinear"), Size(3, 1, 4)}, []int{1, 1, 3, 1, 4}},
		{"nil option", x, []InterpOption{nil, Size(2)}, []int{2, 3, 2, 2}},
		{"empty batch", Zeros(CPU, Float32, 0, 3, 4, 5), []InterpOption{Size(2), Mode("bicubic")}, []int{0, 3, 2, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := c.x.Interpolate(c.opts...)
			if err := y.Err(); err != nil {
				t.Fatal(err)
			}
			if got := y.Shape(); !slices.Equal(got, c.want) {
				t.Errorf("shape %v, want %v", got, c.want)
			}
		})
	}
}

func TestInterpolateErrors(t *testing.T) {
	x3, x4 := Zeros(CPU, Float32, 1, 2, 5), Zeros(CPU, Float32, 1, 2, 4, 5)
	cases := []struct {
		name string
		x    *Tensor
		opts []InterpOption
		kind error
		arg  string
	}{
		{"unknown mode", x4, []InterpOption{Mode("cubic"), Size(3)}, ErrValue, "mode"},
		{"bilinear on 3-d", x3, []InterpOption{Mode("bilinear"), Size(3)}, ErrShape, "x"},
		{"linear on 4-d", x4, []InterpOption{Mode("linear"), Size(3)}, ErrShape, "x"},
		{"bicubic on 5-d", Zeros(CPU, Float32, 1, 1, 2, 2, 2), []InterpOption{Mode("bicubic"), Size(3)}, ErrShape, "x"},
		{"nearest on 2-d", Zeros(CPU, Float32, 2, 5), []InterpOption{Size(3)}, ErrShape, "x"},
		{"nearest on 6-d", Zeros(CPU, Float32, 1, 1, 1, 1, 1, 2), []InterpOption{Size(3)}, ErrShape, "x"},
		{"align_corners with nearest", x4, []InterpOption{Size(3), AlignCorners()}, ErrValue, "align_corners"},
		{"align_corners with nearest-exact", x4, []InterpOption{Size(3), AlignCorners(), Mode("nearest-exact")}, ErrValue, "align_corners"},
		{"both", x4, []InterpOption{Size(3), ScaleFactor(2)}, ErrValue, "size"},
		{"neither", x4, []InterpOption{Mode("bilinear")}, ErrValue, "size"},
		{"size count", x4, []InterpOption{Size(3, 3, 3)}, ErrValue, "size"},
		{"scale count", x4, []InterpOption{ScaleFactor(2, 2, 2)}, ErrValue, "scale_factor"},
		{"size 0", x4, []InterpOption{Size(0, 3)}, ErrValue, "size"},
		{"negative size", x3, []InterpOption{Size(-1)}, ErrValue, "size"},
		{"scale to 0", x3, []InterpOption{ScaleFactor(0.1)}, ErrValue, "scale_factor"},
		{"negative scale", x3, []InterpOption{ScaleFactor(-2)}, ErrValue, "scale_factor"},
		{"zero scale", x3, []InterpOption{ScaleFactor(0)}, ErrValue, "scale_factor"},
		{"huge scale", x3, []InterpOption{ScaleFactor(1e300)}, ErrValue, "scale_factor"},
		{"nan scale", x3, []InterpOption{ScaleFactor(math.NaN())}, ErrValue, "scale_factor"},
		{"int dtype", Zeros(CPU, Int32, 1, 2, 5), []InterpOption{Size(3)}, ErrDType, "x"},
		{"empty input", Zeros(CPU, Float32, 1, 2, 0), []InterpOption{Size(3)}, ErrShape, "x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.x.Interpolate(c.opts...).Err()
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, c.kind) || e.Arg != c.arg {
				t.Fatalf("error %v, want kind %v naming %q", err, c.kind, c.arg)
			}
			if !strings.HasPrefix(err.Error(), "lathe: interpolate: ") || e.Site == "" || e.Fix == "" {
				t.Errorf("error %q lacks its op, call site or fix", err)
			}
		})
	}
	// A failed input passes its error on; a nil one is an error, not a panic.
	bad := x4.Reshape(7)
	if err := bad.Interpolate(Size(2)).Err(); err != bad.Err() {
		t.Errorf("failed input gave %v, want its own error %v", err, bad.Err())
	}
	var nilT *Tensor
	if err := nilT.Interpolate(Size(2)).Err(); !errors.Is(err, ErrValue) {
		t.Errorf("nil tensor gave %v, want ErrValue", err)
	}
}

// TestInterpolateSecondOrder: the gradient of ‖∂L/∂x‖² for L = Σ w·y²,
// y = A x (A linear) is 8·Aᵀ(w ⊙ A Aᵀ(w ⊙ A x)), a chain of forward and
// backward ops; CreateGraph must give it. Checked here for a bilinear A with
// w = 1 against the same formula built from the ops themselves.
func TestInterpolateSecondOrder(t *testing.T) {
	opts := []InterpOption{Mode("bilinear"), Size(5, 3), AlignCorners()}
	x := FromSlice(CPU, []float64{0.3, -1.2, 0.8, 2.0, -0.5, 1.1}, 1, 1, 2, 3).RequireGrad()
	y := x.Interpolate(opts...)
	gs, err := Grad(y.Square().Sum(), []*Tensor{x}, CreateGraph())
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Grad(gs[0].Square().Sum(), []*Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	// Aᵀ v is the gradient of Σ v·(A x) with respect to x.
	at := func(v *Tensor) *Tensor {
		z := x.Detach().RequireGrad()
		g, err := Grad(z.Interpolate(opts...), []*Tensor{z}, WithGradient(v))
		if err != nil {
			t.Fatal(err)
		}
		return g[0]
	}
	a := func(v *Tensor) *Tensor { return v.Interpolate(opts...) }
	want := at(a(at(a(x.Detach())))).MulScalar(8)
	got, _ := hs[0].Float64s()
	w, _ := want.Float64s()
	for i := range w {
		if d := got[i] - w[i]; d > 1e-12 || d < -1e-12 {
			t.Fatalf("[%d] = %v, want %v", i, got[i], w[i])
		}
	}
}
