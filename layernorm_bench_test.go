package lathe

import "testing"

// BenchmarkLayerNormStep is float32 LayerNorm with weight and bias, forward
// and backward on [8,64,64], examples/gpt's size (nine of them per training
// step), upstream gradient given. Compare with
// torch.nn.functional.layer_norm and backward on the same machine.
func BenchmarkLayerNormStep(b *testing.B) {
	Seed(1)
	x := RandN(CPU, Float32, 8, 64, 64).RequireGrad()
	w := RandN(CPU, Float32, 64).RequireGrad()
	bias := RandN(CPU, Float32, 64).RequireGrad()
	g := RandN(CPU, Float32, 8, 64, 64)
	for b.Loop() {
		y := x.LayerNorm([]int{64}, w, bias, 1e-5)
		d, err := Grad(y, []*Tensor{x, w, bias}, WithGradient(g))
		if err != nil {
			b.Fatal(err)
		}
		y.Release()
		for _, t := range d {
			t.Release()
		}
	}
}
