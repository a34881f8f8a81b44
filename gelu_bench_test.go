package lathe

import "testing"

// BenchmarkGELUStep is float32 GELU forward and backward on [8,64,256],
// the size of examples/gpt's MLP activations, with the upstream gradient
// given (WithGradient) and Grad, not Backward, so that nothing but GELU's own ops is timed. Compare
// with torch.nn.functional.gelu and backward on the same machine.
func BenchmarkGELUStep(b *testing.B) {
	for _, c := range []struct {
		name string
		f    func(*Tensor) *Tensor
	}{{"erf", (*Tensor).GELU}, {"tanh", (*Tensor).GELUTanh}} {
		b.Run(c.name, func(b *testing.B) {
			Seed(1)
			x := RandN(CPU, Float32, 8, 64, 256).RequireGrad()
			g := RandN(CPU, Float32, 8, 64, 256)
			b.SetBytes(4 * 8 * 64 * 256)
			for b.Loop() {
				y := c.f(x)
				dx, err := Grad(y, []*Tensor{x}, WithGradient(g))
				if err != nil {
					b.Fatal(err)
				}
				y.Release()
				dx[0].Release()
			}
		})
	}
}
