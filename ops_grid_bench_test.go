package lathe_test

import (
	"testing"

	"github.com/lathe-ml/lathe"
)

// A spatial transformer's sampling: x [16, 8, 64, 64] float32 read at a
// [16, 64, 64, 2] grid (an affine map of rotation and zoom, so the points
// fall between pixels), bilinear with zeros padding; forward alone, and
// forward and backward to x and the grid. Compare with torch:
//
//	x = torch.randn(16, 8, 64, 64); theta = ...; grid = F.affine_grid(theta, x.shape, align_corners=False)
//	F.grid_sample(x, grid)                      # forward
//	torch.autograd.grad(F.grid_sample(x, grid).sum(), (x, grid))  # both
func BenchmarkGridSample(b *testing.B) {
	for _, name := range []string{"cpu", "wgpu:0"} {
		dev := lathe.CPU
		setup := func(b *testing.B) (*lathe.Tensor, *lathe.Tensor) {
			dev = benchDevice(b, name)
			x := lathe.RandN(dev, lathe.Float32, 16, 8, 64, 64)
			theta := lathe.FromSlice(lathe.CPU, []float32{0.8, -0.3, 0.1, 0.3, 0.8, -0.05}, 1, 2, 3).
				Expand(16, 2, 3).To(dev)
			grid := lathe.AffineGrid(theta, x.Shape(), false)
			if err := grid.Err(); err != nil {
				b.Fatal(err)
			}
			return x, grid
		}
		b.Run(name+"/forward/[16,8,64,64]", func(b *testing.B) {
			x, grid := setup(b)
			b.SetBytes(4 * (16*8*64*64*2 + 16*64*64*2))
			for b.Loop() {
				y := lathe.GridSample(x, grid)
				if _, err := y.Sum().Float32s(); err != nil {
					b.Fatal(err)
				}
				y.Release()
			}
		})
		b.Run(name+"/backward/[16,8,64,64]", func(b *testing.B) {
			x, grid := setup(b)
			x, grid = x.RequireGrad(), grid.Detach().RequireGrad()
			for b.Loop() {
				d, err := lathe.Grad(lathe.GridSample(x, grid).Sum(), []*lathe.Tensor{x, grid})
				if err == nil {
					_, err = d[1].Sum().Float32s()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
