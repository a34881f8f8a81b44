package lathe

import "testing"

// BenchmarkConvBlock is the convolutions of a small ResNet basic block at
// batch 32 on 32×32 images: a 3→16 stem and two 16→16 convolutions, all 3×3
// with padding 1, forward and backward (weight gradients, and input
// gradients but for the stem's). The GFLOP/s figure counts 2·N·O·C·K·L per
// pass: two passes for the stem, three for each 16→16 convolution.
func BenchmarkConvBlock(b *testing.B) {
	Seed(1)
	x := RandN(CPU, Float32, 32, 3, 32, 32)
	w0 := RandN(CPU, Float32, 16, 3, 3, 3).MulScalar(0.2).RequireGrad()
	w1 := RandN(CPU, Float32, 16, 16, 3, 3).MulScalar(0.1).RequireGrad()
	w2 := RandN(CPU, Float32, 16, 16, 3, 3).MulScalar(0.1).RequireGrad()
	flops := 2 * 32 * 16 * 9 * 32 * 32 * float64(2*3+3*16+3*16)
	b.ReportAllocs()
	for b.Loop() {
		h := x.Conv2d(w0, nil, Padding(1)).ReLU()
		y := h.Conv2d(w1, nil, Padding(1)).ReLU().Conv2d(w2, nil, Padding(1)).Add(h)
		if err := y.Sum().Backward(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
