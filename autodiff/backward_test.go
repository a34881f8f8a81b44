package autodiff_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestFailedBackwardChangesNoLeaf gives one of eight leaves a hook that
// fails (issue 15, defect 8): Backward must return the hook's error with
// every leaf's gradient as it was, whichever order the leaves come in, and
// must not free the graph, so that the same pass succeeds once the hook
// does.
func TestFailedBackwardChangesNoLeaf(t *testing.T) {
	refusal := errors.New("hook refused")
	hooks := []struct {
		name string
		bad  func(g *lathe.Tensor) *lathe.Tensor
		text string
	}{
		{"failed", func(*lathe.Tensor) *lathe.Tensor { return lathe.Failed(refusal) }, "hook refused"},
		{"shape", func(*lathe.Tensor) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Float64, 3) }, "hook result"},
		{"zero", func(*lathe.Tensor) *lathe.Tensor { return &lathe.Tensor{} }, "hook result"},
	}
	for _, h := range hooks {
		for _, retain := range []bool{false, true} {
			name := h.name + "/free"
			if retain {
				name = h.name + "/retain"
			}
			t.Run(name, func(t *testing.T) {
				for round := range 16 {
					leaves := make([]*lathe.Tensor, 8)
					y := scalar(0)
					for i := range leaves {
						leaves[i] = scalar(float64(i + 1)).RequireGrad()
						y = y.Add(leaves[i].Mul(leaves[i])) // dy/dx_i = 2·x_i
					}
					if err := leaves[0].SetGrad(scalar(100)); err != nil {
						t.Fatal(err)
					}
					fail := true
					leaves[round%len(leaves)].OnGrad(func(g *lathe.Tensor) *lathe.Tensor {
						if fail {
							return h.bad(g)
						}
						return nil
					})
					var opts []lathe.GradOption
					if retain {
						opts = append(opts, lathe.RetainGraph())
					}
					err := y.Backward(opts...)
					if err == nil || !strings.Contains(err.Error(), h.text) {
						t.Fatalf("round %d: Backward gave %v, want an error mentioning %q", round, err, h.text)
					}
					for i, x := range leaves {
						switch g := x.Grad(); {
						case i == 0 && (g == nil || value(t, g) != 100):
							t.Fatalf("round %d: a failed pass changed leaf 0's gradient 100 to %v", round, g)
						case i > 0 && g != nil:
							t.Fatalf("round %d: a failed pass left leaf %d a gradient %v", round, i, g)
						}
					}
					fail = false
					if err := y.Backward(opts...); err != nil {
						t.Fatalf("round %d: the retried pass: %v", round, err)
					}
					for i, x := range leaves {
						want := 2 * float64(i+1)
						if i == 0 {
							want += 100
						}
						if got := value(t, x.Grad()); got != want {
							t.Fatalf("round %d: leaf %d's gradient after the retry is %v, want %v", round, i, got, want)
						}
					}
				}
			})
		}
	}
}

// TestFailedGradFreesNoGraph: lathe.Grad that fails (an unused input) must
// leave the graph for the next pass.
func TestFailedGradFreesNoGraph(t *testing.T) {
	x := scalar(3).RequireGrad()
	unused := scalar(1).RequireGrad()
	y := x.Mul(x)
	if _, err := lathe.Grad(y, []*lathe.Tensor{x, unused}); !errors.Is(err, lathe.ErrGrad) {
		t.Fatalf("unused input: %v, want ErrGrad", err)
	}
	g, err := lathe.Grad(y, []*lathe.Tensor{x})
	if err != nil {
		t.Fatalf("after a failed Grad: %v", err)
	}
	if got := value(t, g[0]); got != 6 {
		t.Fatalf("dy/dx = %v, want 6", got)
	}
}

// BenchmarkBackwardSmall is the fixed cost of a backward pass: a graph of
// 16 small leaves, where the bookkeeping (the walk, claiming nodes, hooks,
// locking the leaves, accumulating) outweighs the arithmetic.
func BenchmarkBackwardSmall(b *testing.B) {
	leaves := make([]*lathe.Tensor, 16)
	for i := range leaves {
		leaves[i] = lathe.Full(lathe.CPU, lathe.Float32, float64(i), 4).RequireGrad()
	}
	c := lathe.Ones(lathe.CPU, lathe.Float32, 4)
	b.ReportAllocs()
	for b.Loop() {
		y := c
		for _, x := range leaves {
			y = y.Add(x.Mul(c))
		}
		if err := y.Sum().Backward(); err != nil {
			b.Fatal(err)
		}
		for _, x := range leaves {
			x.ZeroGrad()
		}
	}
}
