package cpu

import (
	"fmt"
	"math"
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

// TestGlobalAvgPoolHalf: the 16-bit global pooling and its gradient, on
// the bits (globalAvgPoolHalf), give the float32 kernels' results on
// widened copies rounded once, bit for bit, for both 16-bit dtypes, on
// planes of 117 and of 1024 values (past vectorMin) with a gradient per
// plane that does not divide evenly.
func TestGlobalAvgPoolHalf(t *testing.T) {
	for _, dt := range []dispatch.DType{dispatch.BFloat16, dispatch.Float16} {
		for _, hw := range [][2]int{{9, 13}, {32, 32}} {
			h, w := hw[0], hw[1]
			shape := []int{4, 5, h, w}
			n := dispatch.Numel(shape)
			x := dispatch.NewTensor(cpu0, dt, shape, newBuffer(dt, n))
			castInto(x, tensorOf(dispatch.Float64, randomF64(n), shape...))
			g := dispatch.NewTensor(cpu0, dt, []int{4, 5, 1, 1}, newBuffer(dt, 20))
			castInto(g, tensorOf(dispatch.Float64, randomF64(20), 4, 5, 1, 1))
			wide := func(t16 *dispatch.Tensor) *dispatch.Tensor {
				t32 := dispatch.NewTensor(cpu0, dispatch.Float32, t16.Shape, newBuffer(dispatch.Float32, t16.Numel()))
				castInto(t32, t16)
				return t32
			}
			for _, c := range []struct {
				name      string
				got, want *dispatch.Tensor
			}{
				{"pool", call(t, ops.AdaptiveAvgPool, ops.AdaptivePool{Size: []int{1, 1}}, x),
					call(t, ops.AdaptiveAvgPool, ops.AdaptivePool{Size: []int{1, 1}}, wide(x))},
				{"gradient", call(t, ops.AdaptiveAvgPoolBackward, ops.AdaptivePoolBackward{InSize: []int{h, w}}, g),
					call(t, ops.AdaptiveAvgPoolBackward, ops.AdaptivePoolBackward{InSize: []int{h, w}}, wide(g))},
			} {
				want := dispatch.NewTensor(cpu0, dt, c.want.Shape, newBuffer(dt, c.want.Numel()))
				castInto(want, c.want)
				gb, wb := bits16(c.got.Storage.Buffer)[:c.got.Numel()], bits16(want.Storage.Buffer)[:want.Numel()]
				for i := range wb {
					if gb[i] != wb[i] {
						t.Fatalf("%s %v %s: element %d = %#04x, want %#04x", dt, shape, c.name, i, gb[i], wb[i])
					}
				}
			}
		}
	}
}

// TestGlobalAvgPool: adaptive pooling to one value per plane (a sum per
// plane) and its backward (the gradient spread over the plane) against
// float64 sums, in float32 and float64, on planes past a C loop's lanes.
func TestGlobalAvgPool(t *testing.T) {
	const planes, h, w = 6, 9, 13
	vals := randomF64(planes * h * w)
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
		t.Run(dt.String(), func(t *testing.T) {
			x := dispatch.NewTensor(cpu0, dt, []int{2, 3, h, w}, newBuffer(dt, len(vals)))
			castInto(x, tensorOf(dispatch.Float64, vals, 2, 3, h, w))
			xv := denseF64(x)
			got := denseF64(call(t, ops.AdaptiveAvgPool, ops.AdaptivePool{Size: []int{1, 1}}, x))
			for p := range planes {
				var want float64
				for _, v := range xv[p*h*w : (p+1)*h*w] {
					want += v
				}
				want /= h * w
				if math.Abs(got[p]-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Fatalf("plane %d: %v, want %v", p, got[p], want)
				}
			}
			g := dispatch.NewTensor(cpu0, dt, []int{2, 3, 1, 1}, newBuffer(dt, planes))
			castInto(g, tensorOf(dispatch.Float64, []float64{1, 2, 3, 4, 5, 6}, 2, 3, 1, 1))
			back := denseF64(call(t, ops.AdaptiveAvgPoolBackward, ops.AdaptivePoolBackward{InSize: []int{h, w}}, g))
			for i, v := range back {
				if want := float64(i/(h*w)+1) / (h * w); math.Abs(v-want) > 1e-7*want {
					t.Fatalf("gradient %d: %v, want %v", i, v, want)
				}
			}
		})
	}
}
