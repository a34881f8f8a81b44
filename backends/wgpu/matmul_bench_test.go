package wgpu_test

import (
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// BenchmarkMatmulWGPU times float32 matrix products on wgpu:0, each waited
// for, and reports GFLOP/s (2n³ operations per product). Sizes stay at 256
// or below: on a machine without a GPU, wgpu:0 is lavapipe, which runs the
// shader on the CPU. rhsT multiplies by a transposed view, which the
// kernel reads through its strides.
func BenchmarkMatmulWGPU(b *testing.B) {
	dev := lathe.WGPU(0)
	if !available(dev) {
		testenv.SkipDevice(b, "wgpu:0", "wgpu:0 is unavailable")
	}
	for _, c := range []struct {
		name string
		n    int
		rhsT bool
	}{{"64", 64, false}, {"256", 256, false}, {"256/rhsT", 256, true}} {
		b.Run(c.name, func(b *testing.B) {
			lathe.Seed(1)
			x := lathe.RandN(dev, lathe.Float32, c.n, c.n)
			y := lathe.RandN(dev, lathe.Float32, c.n, c.n)
			if c.rhsT {
				y = y.MT()
			}
			if err := finish(x.MatMul(y)); err != nil { // compiles the shader
				b.Fatal(err)
			}
			for b.Loop() {
				if err := finish(x.MatMul(y)); err != nil {
					b.Fatal(err)
				}
			}
			flops := 2 * float64(c.n) * float64(c.n) * float64(c.n) * float64(b.N)
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// finish waits for the product z and releases it.
func finish(z *lathe.Tensor) error {
	defer z.Release()
	if err := z.Err(); err != nil {
		return err
	}
	return lathe.Synchronize(z.Device())
}

// available says whether this machine opens dev.
func available(dev lathe.Device) bool {
	for _, d := range lathe.Devices() {
		if d == dev {
			return true
		}
	}
	return false
}
