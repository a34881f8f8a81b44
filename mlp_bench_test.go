package lathe

import "testing"

// BenchmarkMLPStep is one training step of a 784-256-10 MLP at batch 128:
// forward, cross-entropy, backward and an SGD update, written with the
// tensor API alone. PyTorch 1.13 takes about 1.4 ms for the same step on the
// 2-core development machine.
func BenchmarkMLPStep(b *testing.B) {
	Seed(1)
	x := RandN(CPU, Float32, 128, 784)
	classes := make([]int64, 128)
	for i := range classes {
		classes[i] = int64(i % 10)
	}
	labels := FromSlice(CPU, classes)
	w1 := RandN(CPU, Float32, 784, 256).MulScalar(0.05).RequireGrad()
	w2 := RandN(CPU, Float32, 256, 10).MulScalar(0.05).RequireGrad()
	b.ReportAllocs()
	for b.Loop() {
		loss := x.MatMul(w1).ReLU().MatMul(w2).CrossEntropy(labels)
		if err := loss.Backward(); err != nil {
			b.Fatal(err)
		}
		NoGrad(func() {
			w1 = w1.Sub(w1.Grad().MulScalar(0.1)).RequireGrad()
			w2 = w2.Sub(w2.Grad().MulScalar(0.1)).RequireGrad()
		})
	}
}
