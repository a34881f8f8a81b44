package nn

import (
	"errors"
	"testing"

	"github.com/lathe-ml/lathe"
)

func TestUpsample(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float64{1, 2, 3, 4}, 1, 1, 2, 2).RequireGrad()
	cases := []struct {
		name string
		up   *Upsample
		want []float64 // torch.nn.Upsample's output (build/torchref/literals.py)
	}{
		{"nearest/scale2", NewUpsample(ScaleFactor(2)), torchUpsample["nearest/scale2"]},
		{"bilinear/size3/align_corners", NewUpsample(Size(3), Mode("bilinear"), AlignCorners()),
			torchUpsample["bilinear/size3/align_corners"]},
		{"bilinear/size[1,3]", NewUpsample(Size(1, 3), Mode("bilinear")), torchUpsample["bilinear/size[1,3]"]},
	}
	if len(cases) != len(torchUpsample) {
		t.Errorf("%d cases, %d torch references", len(cases), len(torchUpsample))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m Module = c.up
			if len(m.Parameters()) != 0 || Err(m) != nil || m.To(lathe.CPU) != nil {
				t.Fatal("Upsample has no parameters and nothing to move")
			}
			y := m.Forward(x)
			got, err := y.Float64s()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if d := got[i] - c.want[i]; d > 1e-12 || d < -1e-12 {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
			// It passes gradients back: each output's weights sum to 1, so
			// the input gradient of Σ y sums to the number of outputs.
			if err := y.Sum().Backward(); err != nil {
				t.Fatal(err)
			}
			g, err := x.Grad().Float64s()
			if err != nil {
				t.Fatal(err)
			}
			total := 0.0
			for _, v := range g {
				total += v
			}
			if d := total - float64(len(c.want)); d > 1e-12 || d < -1e-12 {
				t.Errorf("input gradient %v sums to %v, want %d", g, total, len(c.want))
			}
			x.ZeroGrad()
		})
	}
	// A bad option is a failed output naming it, not a panic.
	err := NewUpsample(Size(3), Mode("bicubic"), RecomputeScaleFactor()).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 3)).Err()
	var le *lathe.Error
	if !errors.As(err, &le) || !errors.Is(err, lathe.ErrShape) || le.Arg != "x" {
		t.Errorf("bicubic on a 2-d input gave %v, want ErrShape naming x", err)
	}
}
