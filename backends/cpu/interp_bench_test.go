package cpu

import (
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// BenchmarkUpsample: a batch of 32 3×64×64 float32 images to 128×128, and
// the backward op back, reported in GB/s of the 128×128 side (written
// forward, read backward).
func BenchmarkUpsample(b *testing.B) {
	in := []int{32, 3, 64, 64}
	for _, c := range []struct {
		name string
		op   ops.Upsample
		a    ops.Interp
	}{
		{"nearest", ops.UpsampleNearest, ops.Interp{Size: []int{128, 128}}},
		{"bilinear", ops.UpsampleLinear, ops.Interp{Size: []int{128, 128}}},
		{"bicubic", ops.UpsampleBicubic, ops.Interp{Size: []int{128, 128}}},
	} {
		x := tensorOf(dispatch.Float32, f32s(randomF64(dispatch.Numel(in))), in...)
		g := tensorOf(dispatch.Float32, f32s(randomF64(32*3*128*128)), 32, 3, 128, 128)
		back := c.a
		back.InputSize = in[2:]
		for _, dir := range []struct {
			name string
			op   *dispatch.Op[ops.Interp]
			a    ops.Interp
			x    *dispatch.Tensor
		}{{"forward", c.op.Forward, c.a, x}, {"backward", c.op.Backward, back, g}} {
			op := dir.op
			b.Run(c.name+"/"+dir.name, func(b *testing.B) {
				for b.Loop() {
					out, err := dispatch.Call(op, dir.a, dir.x)
					if err != nil {
						b.Fatal(err)
					}
					out.Release()
				}
				b.ReportMetric(float64(32*3*128*128*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
