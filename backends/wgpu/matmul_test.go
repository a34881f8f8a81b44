package wgpu_test

import (
	"testing"

	"github.com/lathe-ml/lathe"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestMatmulAgainstCPU checks what the conformance cases leave out: sizes
// past one tile (64×64 for matmul, 128×128 for matmul_cpu) and not
// multiples of it, k past one step of 16, more tiles than a grid dimension
// holds (65535), and batch dims broadcast from strided views; float32
// within rounding of the cpu's BLAS, int32 exactly. It runs the adapter's
// kernel; TestMatmulTiledAgainstCPU runs the GPU's where that is another.
func TestMatmulAgainstCPU(t *testing.T) {
	matmulAgainstCPU(t)
}

func matmulAgainstCPU(t *testing.T) {
	dev := lathe.WGPU(0)
	if !available(dev) {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable")
	}
	lathe.Seed(5)
	a := lathe.RandN(lathe.CPU, lathe.Float32, 70, 130)
	b := lathe.RandN(lathe.CPU, lathe.Float32, 130, 65)
	batchA := lathe.RandN(lathe.CPU, lathe.Float32, 3, 1, 17, 9) // read as its transpose
	batchB := lathe.RandN(lathe.CPU, lathe.Float32, 4, 17, 18)   // read every other column
	vec := lathe.RandN(lathe.CPU, lathe.Float32, 17)
	manyA := lathe.RandN(lathe.CPU, lathe.Float32, 66000, 1, 2)
	manyB := lathe.RandN(lathe.CPU, lathe.Float32, 66000, 2, 1)
	emptyA := lathe.RandN(lathe.CPU, lathe.Float32, 3, 0)
	emptyB := lathe.RandN(lathe.CPU, lathe.Float32, 0, 4)
	wideA := lathe.RandN(lathe.CPU, lathe.Float32, 2, 260, 37)
	wideB := lathe.RandN(lathe.CPU, lathe.Float32, 37, 131)
	ia := lathe.Arange(lathe.CPU, lathe.Int32, -40, 40, 1).Reshape(4, 20)
	ib := lathe.Arange(lathe.CPU, lathe.Int32, 0, 100, 1).Reshape(20, 5)
	cases := []struct {
		name string
		run  func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor
		tol  float64
	}{
		{"[70,130]x[130,65]", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(a).MatMul(on(b))
		}, 1e-4},
		{"transposed_both", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(b).MT().MatMul(on(a).MT())
		}, 1e-4},
		{"broadcast_batch/strided", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(batchA).MT().MatMul(on(batchB).Slice(2, 0, 18, 2))
		}, 1e-4},
		{"vector_x_batch", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(vec).MatMul(on(batchB).Slice(2, 1, 18, 2))
		}, 1e-4},
		{"batch_x_vector", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(batchA).MT().MatMul(on(vec))
		}, 1e-4},
		{"edges_of_128_tiles", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(wideA).MatMul(on(wideB))
		}, 1e-4},
		{"edges_of_128_tiles/transposed", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(wideB).MT().MatMul(on(wideA).MT())
		}, 1e-4},
		{"k=0", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(emptyA).MatMul(on(emptyB))
		}, 0},
		{"66000_tiles", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(manyA).MatMul(on(manyB))
		}, 1e-5},
		{"int32", func(on func(*lathe.Tensor) *lathe.Tensor) *lathe.Tensor {
			return on(ia).MatMul(on(ib))
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "66000_tiles" && testing.Short() {
				t.Skip("66000 workgroups take lavapipe seconds")
			}
			want := c.run(func(x *lathe.Tensor) *lathe.Tensor { return x })
			got := c.run(func(x *lathe.Tensor) *lathe.Tensor { return x.To(dev) })
			if want.Err() != nil {
				t.Fatal(want.Err())
			}
			if err := sameResult(got, want, c.tol); err != nil {
				t.Error(err)
			}
		})
	}
}
