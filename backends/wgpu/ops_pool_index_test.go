package wgpu_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// Max pooling's kernels against the cpu's: int64 indices on both, the
// same values.

var (
	onCPU  = cpu0
	onWGPU = wgpu0
)

func openOrSkip(t *testing.T) {
	t.Helper()
	if _, err := dispatch.Open(onWGPU); err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
}

// wgpuIndices puts int64 indices on wgpu:0.
func wgpuIndices(t *testing.T, vals []int64, shape []int) *dispatch.Tensor {
	t.Helper()
	x, err := dispatch.Upload(onWGPU, vals, dispatch.Int64, shape)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func hostValues[T any](t *testing.T, x *dispatch.Tensor) []T {
	t.Helper()
	v, err := dispatch.ReadHost(x)
	if err != nil {
		t.Fatal(err)
	}
	return v.([]T)
}

// tiedData is small integers, so that windows have ties, with some NaNs
// and infinities.
func tiedData(rng *rand.Rand, n int) []float32 {
	data := make([]float32, n)
	for i := range data {
		switch r := rng.IntN(20); {
		case r == 0:
			data[i] = float32(math.NaN())
		case r == 1:
			data[i] = float32(math.Inf(-1))
		case r == 2:
			data[i] = float32(math.Inf(1))
		default:
			data[i] = float32(rng.IntN(4))
		}
	}
	return data
}

// same puts data of shape on the cpu and on wgpu:0.
func same(t *testing.T, shape []int, data []float32) (cpu, gpu *dispatch.Tensor) {
	t.Helper()
	c, err := dispatch.Upload(onCPU, append([]float32(nil), data...), dispatch.Float32, shape)
	if err != nil {
		t.Fatal(err)
	}
	g, err := dispatch.Upload(onWGPU, append([]float32(nil), data...), dispatch.Float32, shape)
	if err != nil {
		t.Fatal(err)
	}
	return c, g
}

func TestMaxPoolKernels(t *testing.T) {
	openOrSkip(t)
	type pooling struct {
		name    string
		indices func(x *dispatch.Tensor) (*dispatch.Tensor, error) // max_pool_indices or adaptive_max_pool_indices
		shape   []int
	}
	w := func(k, s, p, d []int, ceil bool) layout.Window {
		return layout.Window{Kernel: k, Stride: s, Padding: p, Dilation: d, CeilMode: ceil}
	}
	sliding := func(k, s, p, d []int, ceil bool) func(*dispatch.Tensor) (*dispatch.Tensor, error) {
		return func(x *dispatch.Tensor) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.MaxPoolIndices, w(k, s, p, d, ceil), x)
		}
	}
	adaptive := func(size ...int) func(*dispatch.Tensor) (*dispatch.Tensor, error) {
		return func(x *dispatch.Tensor) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.AdaptiveMaxPoolIndices, ops.AdaptivePool{Size: size}, x)
		}
	}
	cases := []pooling{
		{"2d", sliding([]int{3, 3}, []int{2, 2}, []int{1, 1}, []int{1, 1}, false), []int{2, 3, 7, 6}},
		{"2d/overlap_ceil", sliding([]int{3, 2}, []int{1, 2}, []int{1, 0}, []int{1, 1}, true), []int{2, 2, 6, 7}},
		{"2d/dilation", sliding([]int{2, 2}, []int{1, 1}, []int{1, 1}, []int{2, 3}, false), []int{1, 2, 6, 7}},
		{"1d", sliding([]int{3}, []int{2}, []int{1}, []int{1}, true), []int{2, 3, 10}},
		{"3d", sliding([]int{2, 3, 2}, []int{2, 1, 2}, []int{1, 1, 0}, []int{1, 1, 1}, false), []int{1, 2, 4, 5, 6}},
		{"adaptive2d", adaptive(3, 4), []int{2, 3, 7, 10}},
		{"adaptive2d/up", adaptive(9, 5), []int{2, 3, 4, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			data := tiedData(rng, dispatch.Numel(c.shape))
			xc, xg := same(t, c.shape, data)
			idxCPU, err := c.indices(xc)
			if err != nil {
				t.Fatal(err)
			}
			want := hostValues[int64](t, idxCPU)

			idxGPU, err := c.indices(xg)
			if err != nil {
				t.Fatal(err)
			}
			if idxGPU.DType != dispatch.Int64 {
				t.Fatalf("indices are %s on wgpu:0, want int64", idxGPU.DType)
			}
			got := hostValues[int64](t, idxGPU)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("index %d: %d, want %d (window values %v)", i, got[i], want[i], data[:min(len(data), 16)])
				}
			}

			// pool_gather at the same indices.
			idxG := wgpuIndices(t, want, idxCPU.Shape)
			vc, err := dispatch.Call(ops.PoolGather, dispatch.None{}, xc, idxCPU)
			if err != nil {
				t.Fatal(err)
			}
			vg, err := dispatch.Call(ops.PoolGather, dispatch.None{}, xg, idxG)
			if err != nil {
				t.Fatal(err)
			}
			closeFloats(t, "pool_gather", hostValues[float32](t, vg), hostValues[float32](t, vc))

			// max_pool_backward and max_unpool: places that several
			// windows chose get several gradients, and max_unpool the last
			// value.
			g := make([]float32, idxCPU.Numel())
			for i := range g {
				g[i] = float32(rng.NormFloat64())
			}
			gc, gg := same(t, idxCPU.Shape, g)
			size := ops.PoolScatter{Size: c.shape[2:]}
			for _, scatter := range []*dispatch.Op[ops.PoolScatter]{ops.MaxPoolBackward, ops.MaxUnpool} {
				sc, err := dispatch.Call(scatter, size, gc, idxCPU)
				if err != nil {
					t.Fatal(err)
				}
				sg, err := dispatch.Call(scatter, size, gg, idxG)
				if err != nil {
					t.Fatal(err)
				}
				closeFloats(t, scatter.Name, hostValues[float32](t, sg), hostValues[float32](t, sc))
			}
		})
	}
}

func closeFloats(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) != math.IsNaN(w) || math.Abs(g-w) > 1e-6+1e-6*math.Abs(w) {
			t.Fatalf("%s: element %d: %g, want %g", what, i, g, w)
		}
	}
}

// max_unpool's indices are the caller's: one outside its plane is an
// ErrIndex naming it, as on the cpu, negative ones included, and int64s
// whose low word alone would be in range.
func TestMaxUnpoolIndexRange(t *testing.T) {
	openOrSkip(t)
	for _, bad := range []int64{16, -1, 1 << 30, 1<<32 + 3, -1<<32 + 3, math.MinInt64, math.MaxInt64} {
		idx := wgpuIndices(t, []int64{0, 5, bad, 15}, []int{1, 1, 2, 2})
		x, err := dispatch.Upload(onWGPU, []float32{1, 2, 3, 4}, dispatch.Float32, []int{1, 1, 2, 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err = dispatch.Call(ops.MaxUnpool, ops.PoolScatter{Size: []int{4, 4}}, x, idx); err == nil {
			b, _ := dispatch.Open(onWGPU) // the indices are checked on the device, reported at the sync
			err = b.Sync(onWGPU)
		}
		var le *dispatch.Error
		if !errors.As(err, &le) || !errors.Is(err, dispatch.ErrIndex) || le.Found != fmt.Sprint(bad) {
			t.Errorf("index %d: error %v, want an ErrIndex that found %d", bad, err, bad)
		}
	}
}
