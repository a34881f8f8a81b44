//go:build cgo

package wgpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	_ "github.com/lathe-ml/lathe/backends/cpu"
	"github.com/lathe-ml/lathe/dispatch"
)

// Max pooling's kernels against the cpu's. Its indices are int64, which
// wgpu:0 does not allocate yet: these tests lay them out by hand as the
// kernels read them (int64Words words per index, the low word first), so
// that the kernels are checked before the backend gives int64 tensors.

var (
	onCPU  = dispatch.Device{Kind: dispatch.KindCPU}
	onWGPU = dispatch.Device{Kind: dispatch.KindWGPU}
)

func openOrSkip(t *testing.T) {
	t.Helper()
	if _, err := dispatch.Open(onWGPU); err != nil {
		t.Skipf("wgpu:0 is unavailable: %v", err)
	}
}

// int64Tensor puts int64 values on wgpu:0 in the kernels' layout.
func int64Tensor(t *testing.T, vals []int64, shape []int) *dispatch.Tensor {
	t.Helper()
	words := make([]int32, int64Words*len(vals))
	for i, v := range vals {
		words[int64Words*i] = int32(uint32(v))
		if int64Words == 2 {
			words[2*i+1] = int32(uint32(uint64(v) >> 32))
		}
	}
	buf, err := backend{}.Upload(onWGPU, words)
	if err != nil {
		t.Fatal(err)
	}
	return dispatch.NewTensor(onWGPU, dispatch.Int64, shape, buf)
}

// emptyInt64 is an int64 tensor of shape on wgpu:0.
func emptyInt64(t *testing.T, shape []int) *dispatch.Tensor {
	t.Helper()
	buf, err := backend{}.Alloc(onWGPU, dispatch.Int32, int64Words*dispatch.Numel(shape))
	if err != nil {
		t.Fatal(err)
	}
	return dispatch.NewTensor(onWGPU, dispatch.Int64, shape, buf)
}

func readInt64(t *testing.T, x *dispatch.Tensor) []int64 {
	t.Helper()
	raw, err := backend{}.Read(onWGPU, x.Storage.Buffer, dispatch.Int32, int64Words*x.Offset, int64Words*x.Numel())
	if err != nil {
		t.Fatal(err)
	}
	words := raw.([]int32)
	vals := make([]int64, x.Numel())
	for i := range vals {
		v := uint64(uint32(words[int64Words*i]))
		if int64Words == 2 {
			v |= uint64(uint32(words[2*i+1])) << 32
		}
		vals[i] = int64(v)
	}
	return vals
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

func same(t *testing.T, x *dispatch.Tensor, data []float32) (cpu, gpu *dispatch.Tensor) {
	t.Helper()
	c, err := dispatch.Upload(onCPU, append([]float32(nil), data...), dispatch.Float32, x.Shape)
	if err != nil {
		t.Fatal(err)
	}
	g, err := dispatch.Upload(onWGPU, append([]float32(nil), data...), dispatch.Float32, x.Shape)
	if err != nil {
		t.Fatal(err)
	}
	return c, g
}

func TestMaxPoolKernels(t *testing.T) {
	openOrSkip(t)
	type pooling struct {
		name  string
		op    string
		attrs any
		shape []int
	}
	w := func(k, s, p, d []int, ceil bool) dispatch.Window {
		return dispatch.Window{Kernel: k, Stride: s, Padding: p, Dilation: d, CeilMode: ceil}
	}
	cases := []pooling{
		{"2d", "max_pool_indices", w([]int{3, 3}, []int{2, 2}, []int{1, 1}, []int{1, 1}, false), []int{2, 3, 7, 6}},
		{"2d/overlap_ceil", "max_pool_indices", w([]int{3, 2}, []int{1, 2}, []int{1, 0}, []int{1, 1}, true), []int{2, 2, 6, 7}},
		{"2d/dilation", "max_pool_indices", w([]int{2, 2}, []int{1, 1}, []int{1, 1}, []int{2, 3}, false), []int{1, 2, 6, 7}},
		{"1d", "max_pool_indices", w([]int{3}, []int{2}, []int{1}, []int{1}, true), []int{2, 3, 10}},
		{"3d", "max_pool_indices", w([]int{2, 3, 2}, []int{2, 1, 2}, []int{1, 1, 0}, []int{1, 1, 1}, false), []int{1, 2, 4, 5, 6}},
		{"adaptive2d", "adaptive_max_pool_indices", dispatch.AdaptivePool{Size: []int{3, 4}}, []int{2, 3, 7, 10}},
		{"adaptive2d/up", "adaptive_max_pool_indices", dispatch.AdaptivePool{Size: []int{9, 5}}, []int{2, 3, 4, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			data := tiedData(rng, dispatch.Numel(c.shape))
			xc, xg := same(t, &dispatch.Tensor{Shape: c.shape}, data)
			op := dispatch.Lookup(c.op)
			idxCPU, err := dispatch.Call(op, c.attrs, xc)
			if err != nil {
				t.Fatal(err)
			}
			want := hostValues[int64](t, idxCPU)

			// max_pool_indices and adaptive_max_pool_indices, by hand:
			// dispatch cannot allocate their int64 result on wgpu:0.
			idxGPU := emptyInt64(t, idxCPU.Shape)
			kernel := poolKernel(c.op, "argmax", c.op == "adaptive_max_pool_indices")
			if err := kernel(idxGPU, []*dispatch.Tensor{xg}, c.attrs); err != nil {
				t.Fatal(err)
			}
			got := readInt64(t, idxGPU)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("index %d: %d, want %d (window values %v)", i, got[i], want[i], data[:min(len(data), 16)])
				}
			}

			// pool_gather at the same indices.
			idxG := int64Tensor(t, want, idxCPU.Shape)
			gather := dispatch.Lookup("pool_gather")
			vc, err := dispatch.Call(gather, nil, xc, idxCPU)
			if err != nil {
				t.Fatal(err)
			}
			vg, err := dispatch.Call(gather, nil, xg, idxG)
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
			gc, gg := same(t, idxCPU, g)
			size := dispatch.PoolScatter{Size: c.shape[2:]}
			for _, name := range []string{"max_pool_backward", "max_unpool"} {
				scatter := dispatch.Lookup(name)
				sc, err := dispatch.Call(scatter, size, gc, idxCPU)
				if err != nil {
					t.Fatal(err)
				}
				sg, err := dispatch.Call(scatter, size, gg, idxG)
				if err != nil {
					t.Fatal(err)
				}
				closeFloats(t, name, hostValues[float32](t, sg), hostValues[float32](t, sc))
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
// ErrIndex naming it, as on the cpu, negative ones included.
func TestMaxUnpoolIndexRange(t *testing.T) {
	openOrSkip(t)
	for _, bad := range []int64{16, -1, 1 << 40} {
		idx := int64Tensor(t, []int64{0, 5, bad, 15}, []int{1, 1, 2, 2})
		x, err := dispatch.Upload(onWGPU, []float32{1, 2, 3, 4}, dispatch.Float32, []int{1, 1, 2, 2})
		if err != nil {
			t.Fatal(err)
		}
		_, err = dispatch.Call(dispatch.Lookup("max_unpool"), dispatch.PoolScatter{Size: []int{4, 4}}, x, idx)
		var le *dispatch.Error
		if !errors.As(err, &le) || !errors.Is(err, dispatch.ErrIndex) || le.Found != fmt.Sprint(bad) {
			t.Errorf("index %d: error %v, want an ErrIndex that found %d", bad, err, bad)
		}
	}
}
