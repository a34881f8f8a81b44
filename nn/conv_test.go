package nn

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
)

// Conv2d's forward against torch.nn.functional.conv2d with the same
// weights, stride (2, 1) and padding 1 (torchConv2d, written by
// build/torchref/literals.py).
func TestConv2dMatchesTorch(t *testing.T) {
	want := torchConv2d
	for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			c := NewConv2d(2, 2, 0, KernelSize(2, 1), WithDType(dt), Stride(2, 1), Padding(1))
			c.Weight = toDType(t, []float64{0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8}, dt, 2, 2, 2, 1)
			c.Bias = toDType(t, []float64{0.01, -0.02}, dt, 2)
			x := lathe.Arange(lathe.CPU, dt, 0, 18, 1).DivScalar(10).Reshape(1, 2, 3, 3)
			y := c.Forward(x)
			if !slices.Equal(y.Shape(), []int{1, 2, 2, 5}) {
				t.Fatalf("shape %v (%v)", y.Shape(), y.Err())
			}
			tol := 1e-15
			if dt == lathe.Float32 {
				tol = 1e-6
			}
			assertClose(t, "y", values(t, y), want, tol)
		})
	}
}

func TestConv2dInit(t *testing.T) {
	lathe.Seed(7)
	c := NewConv2d(4, 6, 3, Groups(2))
	if !slices.Equal(c.Weight.Shape(), []int{6, 2, 3, 3}) || !slices.Equal(c.Bias.Shape(), []int{6}) {
		t.Fatalf("weight %v, bias %v", c.Weight.Shape(), c.Bias.Shape())
	}
	if !c.Weight.RequiresGrad() || !c.Weight.IsLeaf() || !c.Bias.RequiresGrad() {
		t.Fatal("parameters must be leaves that require a gradient")
	}
	bound := 1 / math.Sqrt(2*3*3) // fan_in = in/groups·kh·kw
	for _, p := range c.Parameters() {
		v := values(t, p.T)
		lo, hi := slices.Min(v), slices.Max(v)
		if lo < -bound || hi > bound || hi-lo < bound {
			t.Errorf("%s in [%v, %v], want spread over [-%v, %v]", p.Name, lo, hi, bound, bound)
		}
	}
	// Gradients reach both parameters through a grouped, padded convolution.
	c.Window = []lathe.WindowOption{lathe.PaddingSame()}
	y := c.Forward(lathe.RandN(lathe.CPU, lathe.Float32, 2, 4, 5, 5))
	if !slices.Equal(y.Shape(), []int{2, 6, 5, 5}) {
		t.Fatalf("shape %v (%v)", y.Shape(), y.Err())
	}
	if err := y.Square().Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	if g := c.Weight.Grad(); g == nil || !slices.Equal(g.Shape(), []int{6, 2, 3, 3}) {
		t.Fatalf("weight gradient %v", g)
	}
	if g := c.Bias.Grad(); g == nil || !slices.Equal(g.Shape(), []int{6}) {
		t.Fatalf("bias gradient %v", g)
	}
	if ps := NewConv2d(3, 4, 2, NoBias()).Parameters(); len(ps) != 1 {
		t.Fatalf("NoBias gave %d parameters", len(ps))
	}
}

func TestConv2dErrors(t *testing.T) {
	for name, c := range map[string]*Conv2d{
		"groups":  NewConv2d(3, 4, 3, Groups(2)),
		"kernel":  NewConv2d(3, 4, 3, KernelSize(3, 3, 3)),
		"zero_in": NewConv2d(0, 4, 3),
		"groups0": NewConv2d(3, 4, 3, Groups(0)),
	} {
		if err := c.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 3, 5, 5)).Err(); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("%s: error %v, want ErrValue", name, err)
		}
	}
	c := NewConv2d(3, 4, 3)
	if err := c.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 5, 5)).Err(); !errors.Is(err, lathe.ErrShape) {
		t.Errorf("wrong channels: error %v, want ErrShape", err)
	}
}
