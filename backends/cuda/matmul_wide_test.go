//go:build cgo

package cuda

import (
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// fakeWideMatmul runs the wide product (two float16 or bfloat16 tensors,
// a float32 result) through the backend's host code, against the
// stand-in driver or a real device: [2, 3] times a transposed [3, 2] view,
// of values whose products and sums float32 holds exactly but the 16-bit
// dtypes would round (2048 + 1), bit for bit the cpu's, with every
// temporary back in the pool: where cuBLAS has GemmEx, as that one call.
func fakeWideMatmul(t *testing.T, dev dispatch.Device) {
	vals := []float32{1, -2, 0.5, 2048, 1, 0.25}
	for _, dt := range []dispatch.DType{dispatch.Float16, dispatch.BFloat16} {
		before, err := cudaBackend.MemoryStats(dev)
		if err != nil {
			t.Fatal(err)
		}
		product := func(dev dispatch.Device) []float32 {
			t.Helper()
			rev := slices.Clone(vals)
			slices.Reverse(rev)
			xs, err := uploadHalves(dev, vals, dt)
			if err != nil {
				t.Fatal(err)
			}
			defer xs.Release()
			ys, err := uploadHalves(dev, rev, dt)
			if err != nil {
				t.Fatal(err)
			}
			defer ys.Release()
			x := xs.View([]int{2, 3}, []int{3, 1}, 0)
			defer x.Release()
			y := ys.View([]int{3, 2}, []int{1, 3}, 0)
			defer y.Release()
			var d *device
			var launches int64
			if dev.Kind == kind {
				if d, err = opened(dev); err != nil {
					t.Fatal(err)
				}
				launches = d.launches.Load()
			}
			out, err := dispatch.Call(ops.MatMulWide, dispatch.None{}, x, y)
			if err != nil {
				t.Fatalf("%s wide matmul on %s: %v", dt, dev, err)
			}
			defer out.Release()
			// With cublasGemmStridedBatchedEx the product is that one
			// call, a float32 C from the 16-bit A and B in place.
			if d != nil && d.blas != nil && d.blas.ex {
				if op, n := *d.lastOp.Load(), d.launches.Load()-launches; op != "cublasGemmStridedBatchedEx" || n != 1 {
					t.Errorf("%s wide matmul on %s: %d launches, the last %s; want one cublasGemmStridedBatchedEx", dt, dev, n, op)
				}
			}
			if out.DType != dispatch.Float32 {
				t.Fatalf("%s wide matmul on %s is %s, want float32", dt, dev, out.DType)
			}
			return read[float32](t, out)
		}
		want, got := product(dispatch.Device{Kind: dispatch.Host}), product(dev)
		if !slices.Equal(got, want) {
			t.Errorf("%s wide matmul = %v, the cpu's %v", dt, got, want)
		}
		after, err := cudaBackend.MemoryStats(dev)
		if err != nil {
			t.Fatal(err)
		}
		if after.Allocated > before.Allocated { // less is no leak: a collected tensor's cleanup
			t.Errorf("%s: %d bytes allocated before, %d after", dt, before.Allocated, after.Allocated)
		}
	}
}
