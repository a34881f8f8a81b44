package cpu

import (
	"fmt"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// BenchmarkPool measures the pooling kernels on a CNN-sized activation
// (batch 32, 64 channels, 32×32, float32): a 3×3 stride-2 max pooling
// (indices, then the gather of the values), its backward scatter, and a
// 2×2 average pooling. GB/s counts the input read once.
func BenchmarkPool(b *testing.B) {
	const n, c, h, w = 32, 64, 32, 32
	x := tensorOf(dispatch.Float32, make([]float32, n*c*h*w), n, c, h, w)
	win := func(k, s, p int) layout.Window {
		return layout.Window{Kernel: []int{k, k}, Stride: []int{s, s}, Padding: []int{p, p}, Dilation: []int{1, 1}}
	}
	max3 := win(3, 2, 1)
	idx, err := dispatch.Call(ops.MaxPoolIndices, max3, x)
	if err != nil {
		b.Fatal(err)
	}
	g := tensorOf(dispatch.Float32, make([]float32, idx.Numel()), idx.Shape...)
	for _, bc := range []struct {
		name string
		call func() (*dispatch.Tensor, error)
	}{
		{"max_pool/3x3s2", func() (*dispatch.Tensor, error) { return dispatch.Call(ops.MaxPool, max3, x) }},
		{"max_pool_backward/3x3s2", func() (*dispatch.Tensor, error) {
			return dispatch.Call(ops.MaxPoolBackward, ops.PoolScatter{Size: []int{h, w}}, g, idx)
		}},
		{"avg_pool/2x2", func() (*dispatch.Tensor, error) {
			return dispatch.Call(ops.AvgPool, ops.AvgPoolParams{Window: win(2, 2, 0)}, x)
		}},
	} {
		b.Run(fmt.Sprintf("f32/%s", bc.name), func(b *testing.B) {
			for b.Loop() {
				out, err := bc.call()
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			b.ReportMetric(float64(4*n*c*h*w)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// TestPoolEmptyResult: pooling an empty batch to a size near int's edge
// gives the empty result at once: the kernels laid out their geometry,
// one window per output place, whatever the planes (adaptive_avg_pool of
// [0, 4, 3] to 2^40 walked 2^40 windows; found by FuzzWindow).
func TestPoolEmptyResult(t *testing.T) {
	x := tensorOf(dispatch.Float32, []float32{}, 0, 4, 3)
	for _, op := range []*dispatch.Op[ops.AdaptivePool]{ops.AdaptiveAvgPool, ops.AdaptiveMaxPoolIndices} {
		y, err := dispatch.Call(op, ops.AdaptivePool{Size: []int{1 << 40}}, x)
		if err != nil || y.Numel() != 0 {
			t.Errorf("%s: %v, %v; want an empty result", op.Name, y, err)
		}
	}
}
