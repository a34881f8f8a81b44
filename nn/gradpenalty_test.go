package nn

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/lathe-ml/lathe"
)

// wganRef is nn/testdata/wgan_gp.json, written by
// build/torchref/wgan_gp_ref.py.
type wganRef struct {
	Lambda, LR         float64
	Steps              int
	Init, Grads, Final map[string]struct {
		Shape []int
		Data  []float64
	}
	Real, Fake, Eps []float64
	Shape           []int
	Loss, Penalty   []float64
}

// TestWGANGradientPenaltyMatchesTorch trains a small conv critic for three
// SGD steps on the WGAN-GP critic loss
//
//	D(fake).mean() - D(real).mean() + λ·mean_i (‖∂D(x̂)/∂x̂_i‖ - 1)²
//
// from PyTorch's initial weights. The penalty's gradient with respect to
// the weights is a second derivative through convolution, leaky ReLU,
// average and max pooling and the linear layer; each step's loss and
// penalty, the first step's gradients and the final weights must match
// torch.autograd.grad(..., create_graph=True) in float64.
func TestWGANGradientPenaltyMatchesTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/wgan_gp.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref wganRef
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	f64 := WithDType(lathe.Float64)
	critic := Sequential(
		NewConv2d(1, 4, 3, f64, Padding(1)), LeakyReLU{Slope: 0.2}, NewAvgPool2d(2),
		NewConv2d(4, 8, 3, f64, Stride(2), Padding(1)), LeakyReLU{Slope: 0.2}, NewMaxPool2d(2),
		Flatten{}, NewLinear(8, 1, f64))
	params := critic.Parameters()
	for _, p := range params {
		init, ok := ref.Init[p.Name]
		if !ok {
			t.Fatalf("no reference weights for %s", p.Name)
		}
		*p.T = *lathe.FromSlice(lathe.CPU, init.Data, init.Shape...).RequireGrad()
	}
	opt, err := NewSGD(params, ref.LR)
	if err != nil {
		t.Fatal(err)
	}
	real := lathe.FromSlice(lathe.CPU, ref.Real, ref.Shape...)
	fake := lathe.FromSlice(lathe.CPU, ref.Fake, ref.Shape...)
	eps := lathe.FromSlice(lathe.CPU, ref.Eps, ref.Shape[0], 1, 1, 1)
	mix := eps.Mul(real).Add(eps.MulScalar(-1).AddScalar(1).Mul(fake))
	for step := range ref.Steps {
		xhat := mix.Detach().RequireGrad()
		g, err := lathe.Grad(critic.Forward(xhat).Sum(), []*lathe.Tensor{xhat}, lathe.CreateGraph())
		if err != nil {
			t.Fatal(err)
		}
		norm := g[0].Reshape(ref.Shape[0], -1).Square().Sum(1).Sqrt()
		penalty := norm.SubScalar(1).Square().Mean()
		loss := critic.Forward(fake).Mean().Sub(critic.Forward(real).Mean()).Add(penalty.MulScalar(ref.Lambda))
		opt.ZeroGrad()
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			for _, p := range params {
				assertClose(t, "step 0 gradient of "+p.Name, values(t, p.T.Grad()), ref.Grads[p.Name].Data, 1e-9)
			}
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		assertClose(t, "loss", values(t, loss), ref.Loss[step:step+1], 1e-10)
		assertClose(t, "penalty", values(t, penalty), ref.Penalty[step:step+1], 1e-10)
	}
	for _, p := range params {
		assertClose(t, "final "+p.Name, values(t, p.T), ref.Final[p.Name].Data, 1e-9)
	}
}
