package nn

import (
	"errors"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
)

// The pooling modules in a Sequential against torch.nn's
// (build/torchref/nnpool_ref.py): the output, and the gradient of
// Σ y²·w with respect to the input, through max, average and adaptive
// average pooling's backward passes.
var (
	poolSeqWant = []float64{
		1.140625, 1.140625, 1.15234375, 1.22265625, 1.0859375, 1.1484375, 1.15234375, 1.12890625,
		1.17578125, 1.12890625, 1.22265625, 1.2265625,
	}
	poolSeqGradWant = []float64{
		0.0, 0.0, 0.0, -0.427734375, 0.0, 0.0, 0.0, 0.0, -0.0712890625, -0.0712890625, 0.0, 0.0, 0.0,
		-0.802001953125, 0.0, -0.0712890625, -0.81982421875, 0.0, 0.0, 0.0, 0.0, 0.0, -0.124755859375, 0.0,
		0.0, 0.0, -0.837646484375, 0.0, 0.0, -0.124755859375, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.32080078125,
		0.0, 0.0, -0.2138671875, 0.0, -0.10693359375, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.2542724609375,
		0.0, 0.0, -0.1080322265625, 0.0, 0.0, -0.1080322265625, 0.0, 0.0, 0.0, -0.438720703125, 0.0, 0.0,
		-0.438720703125, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.05511474609375, -0.16973876953125, 0.0,
		0.0, 0.0, 0.0, 0.0, -0.0382080078125, 0.0, 0.0, 0.0, -0.15283203125, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
		0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0538330078125, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
		0.107666015625, 0.0, 0.0, 0.1256103515625, 0.0, 0.0, 0.035888671875, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
		0.1614990234375, 0.0, 0.0179443359375, 0.0538330078125, 0.0, 0.0, 0.0179443359375, 0.0, 0.0, 0.0,
		0.216064453125, 0.0, 0.0, 0.2880859375, 0.0, 0.0, 0.0360107421875, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
		0.569580078125, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.69232177734375, 0.0,
		0.1778564453125, 0.211669921875, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1778564453125, 0.0, 0.0, 0.0,
		0.211669921875, 0.0, 0.0, 0.26458740234375, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.44091796875, 0.0,
		0.073486328125, 0.92596435546875, 0.0, 0.0, 0.073486328125, 0.0, 0.0, 0.073486328125, 0.0, 0.0,
		0.0, 1.366943359375, 0.0, 0.0, 0.16168212890625, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.01422119140625,
		0.0, 0.0, 0.69085693359375, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.352783203125, 0.45849609375,
		0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.43408203125, 0.0, 0.0, 1.43408203125, 0.0, 0.0, 0.0,
		0.0, 0.0, 0.0, 0.0, 0.0, 0.248779296875, 1.3975830078125, 0.0, 0.0, 0.0, 0.0, 0.0, 0.248779296875,
		0.0, 0.0, 0.0, 2.068359375, 0.0, 0.0, 0.53662109375, 0.0, 0.0, 0.1341552734375, 0.0, 0.0,
	}
)

// poolInput is x[i] = ((7i mod 23) - 11) / 8, exact in binary, as the
// reference script builds it.
func poolInput() []float64 {
	x := make([]float64, 2*3*6*7)
	for i := range x {
		x[i] = float64((7*i)%23-11) / 8
	}
	return x
}

func poolSeq() *Seq {
	return Sequential(NewMaxPool2d(3, lathe.Stride(1), lathe.Padding(1)), NewAvgPool2d(2, lathe.CeilMode()),
		NewAdaptiveAvgPool2d(2, 1))
}

func TestPoolModulesMatchTorch(t *testing.T) {
	for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			tol := 1e-15
			if dt == lathe.Float32 {
				tol = 1e-6
			}
			x := toDType(t, poolInput(), dt, 2, 3, 6, 7).RequireGrad()
			y := poolSeq().Forward(x)
			if !slices.Equal(y.Shape(), []int{2, 3, 2, 1}) {
				t.Fatalf("shape %v, want [2 3 2 1]", y.Shape())
			}
			assertClose(t, "y", values(t, y), poolSeqWant, tol)
			w := make([]float64, 12)
			for i := range w {
				w[i] = float64(i)/4 - 1
			}
			gs, err := lathe.Grad(y.Square().Mul(toDType(t, w, dt, 2, 3, 2, 1)).Sum(), []*lathe.Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "grad", values(t, gs[0]), poolSeqGradWant, tol)
		})
	}
}

func TestPoolModulesHaveNoParameters(t *testing.T) {
	s := poolSeq()
	if ps := s.Parameters(); len(ps) != 0 {
		t.Fatalf("parameters %v, want none", ps)
	}
	if err := s.To(lathe.CPU); err != nil {
		t.Fatal(err)
	}
	s.Train(false)
	if err := Err(s); err != nil {
		t.Fatal(err)
	}
}

// A bad option is a sticky error of the output, never a panic.
func TestPoolModulesErrors(t *testing.T) {
	x := lathe.Zeros(lathe.CPU, lathe.Float32, 1, 1, 4, 4)
	for name, m := range map[string]Module{
		"maxpool/padding":  NewMaxPool2d(2, lathe.Padding(2)),
		"maxpool/divisor":  NewMaxPool2d(2, lathe.Divisor(2)),
		"avgpool/dilation": NewAvgPool2d(2, lathe.Dilation(2)),
		"avgpool/kernel":   NewAvgPool2d(5),
		"adaptive/size0":   NewAdaptiveAvgPool2d(0),
		"adaptive/three":   NewAdaptiveAvgPool2d(1, 2, 3),
	} {
		t.Run(name, func(t *testing.T) {
			err := m.Forward(x).Err()
			var le *lathe.Error
			if err == nil || !errors.As(err, &le) {
				t.Fatalf("error %v, want a *lathe.Error", err)
			}
		})
	}
}
