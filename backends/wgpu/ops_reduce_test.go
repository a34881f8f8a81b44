//go:build cgo

package wgpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	_ "github.com/lathe-ml/lathe/backends/cpu" // the reference results
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// The conformance cases are small; these check against the cpu the paths
// they do not reach: rows split in two passes (a whole sum of 1M elements,
// a few long strided rows), a row per invocation, reduced dims that do not
// merge, lines longer than a workgroup for cumsum and softmax, and argmax
// and argmin through the kernel (int64 indices, as the cpu's). The helpers
// carry the family's name, since the package's other test files are
// written alongside.

var (
	reduceGPU = dispatch.Device{Kind: kind}
	reduceCPU = dispatch.Device{Kind: dispatch.Host}
)

func needReduceDevice(t *testing.T) {
	t.Helper()
	if _, err := dispatch.Open(reduceGPU); err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
}

// reduceCase is an input of shape, made contiguous or as a transposed view
// of the last two dims (the data then lies with those dims swapped).
type reduceCase struct {
	name       string
	shape      []int
	transposed bool
}

// reduceInput makes the input of c on dev from data (in storage order).
func reduceInput(t *testing.T, dev dispatch.Device, c reduceCase, data any, dt dispatch.DType) *dispatch.Tensor {
	t.Helper()
	stored := append([]int{}, c.shape...)
	r := len(stored)
	if c.transposed {
		stored[r-1], stored[r-2] = stored[r-2], stored[r-1]
	}
	x, err := dispatch.Upload(dev, data, dt, stored)
	if err != nil {
		t.Fatal(err)
	}
	if !c.transposed {
		return x
	}
	strides := append([]int{}, x.Strides...)
	strides[r-1], strides[r-2] = strides[r-2], strides[r-1]
	return x.View(append([]int{}, c.shape...), strides, 0)
}

func reduceValues(t *testing.T, x *dispatch.Tensor) []float64 {
	t.Helper()
	v, err := dispatch.ReadHost(x)
	if err != nil {
		t.Fatal(err)
	}
	out := []float64{}
	switch d := v.(type) {
	case []float32:
		for _, e := range d {
			out = append(out, float64(e))
		}
	case []int32:
		for _, e := range d {
			out = append(out, float64(e))
		}
	case []int64:
		for _, e := range d {
			out = append(out, float64(e))
		}
	default:
		t.Fatalf("read %T", v)
	}
	return out
}

// reduceClose compares within atol + rtol·|want|, NaN matching NaN.
func reduceClose(t *testing.T, got, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d values, want %d", len(got), len(want))
	}
	worst, at := 0.0, -1
	for i := range want {
		g, w := got[i], want[i]
		if math.IsNaN(w) || math.IsInf(w, 0) {
			if !(math.IsNaN(g) && math.IsNaN(w)) && g != w {
				t.Fatalf("value %d: got %v, want %v", i, g, w)
			}
			continue
		}
		if e := math.Abs(g-w) - rtol*math.Abs(w); e > worst {
			worst, at = e, i
		}
	}
	if worst > atol {
		t.Fatalf("value %d: got %v, want %v (error %g past the tolerance %g + %g·|want|)", at, got[at], want[at], worst+rtol*math.Abs(want[at]), atol, rtol)
	}
}

func reduceRandom(n int, seed uint64, f func(*rand.Rand) float32) []float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]float32, n)
	for i := range out {
		out[i] = f(rng)
	}
	return out
}

func reduceUniform(r *rand.Rand) float32 { return float32(2*r.Float64() - 1) }

// reduceNearOne keeps long products finite.
func reduceNearOne(r *rand.Rand) float32 { return float32(math.Exp(1e-3 * (2*r.Float64() - 1))) }

func TestReduceLarge(t *testing.T) {
	needReduceDevice(t)
	layouts := []struct {
		c    reduceCase
		dims []int
	}{
		{reduceCase{"all[1048576]", []int{1 << 20}, false}, nil},        // one row, split into parts
		{reduceCase{"dim1[3,50000]", []int{3, 50000}, false}, []int{1}}, // few long rows
		{reduceCase{"dim0/transposed[50000,3]", []int{50000, 3}, true}, []int{0}},
		{reduceCase{"dim0[50000,3]", []int{50000, 3}, false}, []int{0}}, // strided rows
		{reduceCase{"dim1[300,700]", []int{300, 700}, false}, []int{1}}, // many rows, one pass
		{reduceCase{"dims02/transposed[6,50,70]", []int{6, 50, 70}, true}, []int{0, 2}},
		{reduceCase{"dims02[20,30,400]", []int{20, 30, 400}, false}, []int{0, 2}},
		{reduceCase{"dim0[300,2000]", []int{300, 2000}, false}, []int{0}}, // column-wise: a row per invocation
		{reduceCase{"dim1[2000,3]", []int{2000, 3}, false}, []int{1}},     // short rows: a row per invocation
		{reduceCase{"dims02[30,40,50]", []int{30, 40, 50}, false}, []int{0, 2}},
	}
	reductions := []struct {
		op         *dispatch.Op[ops.Reduce]
		correction int
		data       func(*rand.Rand) float32
		atol, rtol float64
	}{
		{ops.Sum, 0, reduceUniform, 1e-3, 1e-5},
		{ops.Prod, 0, reduceNearOne, 0, 2e-3}, // f32 products: 1M roundings near 1 drift by 6e-4
		{ops.Max, 0, reduceUniform, 0, 0},
		{ops.Min, 0, reduceUniform, 0, 0},
		{ops.Var, 1, reduceUniform, 0, 1e-4},
		{ops.Var, 0, reduceUniform, 0, 1e-4},
		{ops.Std, 1, reduceUniform, 0, 1e-4},
		{ops.LogSumExp, 0, reduceUniform, 0, 1e-5},
	}
	for _, l := range layouts {
		for k, r := range reductions {
			t.Run(fmt.Sprintf("%s/c%d/%s", r.op.Name, r.correction, l.c.name), func(t *testing.T) {
				data := reduceRandom(dispatch.Numel(l.c.shape), uint64(k), r.data)
				attrs := ops.Reduce{Dims: l.dims, Correction: r.correction}
				want := reduceCall(t, r.op, attrs, reduceInput(t, reduceCPU, l.c, data, dispatch.Float32))
				got := reduceCall(t, r.op, attrs, reduceInput(t, reduceGPU, l.c, data, dispatch.Float32))
				reduceClose(t, reduceValues(t, got), reduceValues(t, want), r.atol, r.rtol)
			})
		}
	}
}

func TestReduceInt32(t *testing.T) {
	needReduceDevice(t)
	c := reduceCase{"all[1048576]", []int{1 << 20}, false}
	rng := rand.New(rand.NewPCG(3, 7))
	data := make([]int32, 1<<20)
	for i := range data {
		data[i] = rng.Int32() // the sum wraps, as on the cpu
	}
	for _, op := range []*dispatch.Op[ops.Reduce]{ops.Sum, ops.Prod, ops.Max, ops.Min} {
		t.Run(op.Name, func(t *testing.T) {
			want := reduceCall(t, op, ops.Reduce{}, reduceInput(t, reduceCPU, c, data, dispatch.Int32))
			got := reduceCall(t, op, ops.Reduce{}, reduceInput(t, reduceGPU, c, data, dispatch.Int32))
			reduceClose(t, reduceValues(t, got), reduceValues(t, want), 0, 0)
		})
	}
}

func TestArgExtremes(t *testing.T) {
	needReduceDevice(t)
	nan := float32(math.NaN())
	cases := []struct {
		c    reduceCase
		dims []int
		data []float32
	}{
		{reduceCase{"all[1048576]", []int{1 << 20}, false}, nil, reduceRandom(1<<20, 5, reduceUniform)},
		{reduceCase{"dim1/ties[3,4]", []int{3, 4}, false}, []int{1}, []float32{1, 3, 3, 0, 2, 2, 2, 2, -1, 5, -1, 5}},
		{reduceCase{"dim0/nan/transposed[4,3]", []int{4, 3}, true}, []int{0}, []float32{1, nan, 3, nan, 2, 2, 2, 2, -1, 5, -1, 5}},
		{reduceCase{"dim0/ties[300,2000]", []int{300, 2000}, false}, []int{0}, reduceRandom(600000, 6, func(r *rand.Rand) float32 { return float32(r.IntN(3)) })},
		{reduceCase{"dim1/ties[2,20000]", []int{2, 20000}, false}, []int{1}, reduceRandom(40000, 6, func(r *rand.Rand) float32 { return float32(r.IntN(3)) })},
		{reduceCase{"dim1/nan[2,20000]", []int{2, 20000}, false}, []int{1}, reduceRandom(40000, 6, func(r *rand.Rand) float32 {
			if r.IntN(5000) == 0 {
				return nan
			}
			return reduceUniform(r)
		})},
	}
	for _, op := range []*dispatch.Op[ops.Reduce]{ops.ArgMax, ops.ArgMin} {
		for _, tc := range cases {
			t.Run(op.Name+"/"+tc.c.name, func(t *testing.T) {
				r := ops.Reduce{Dims: tc.dims}
				want := reduceCall(t, op, r, reduceInput(t, reduceCPU, tc.c, tc.data, dispatch.Float32))
				x := reduceInput(t, reduceGPU, tc.c, tc.data, dispatch.Float32)
				dims, shape, err := ops.ReduceShape(x, r)
				if err != nil {
					t.Fatal(err)
				}
				got, err := dispatch.Empty(reduceGPU, dispatch.Int64, shape)
				if err != nil {
					t.Fatal(err)
				}
				if err := reduce(op.Name, got, x, dims, 0); err != nil {
					t.Fatal(err)
				}
				reduceClose(t, reduceValues(t, got), reduceValues(t, want), 0, 0)
			})
		}
	}
}

func TestLines(t *testing.T) {
	needReduceDevice(t)
	cases := []struct {
		c   reduceCase
		dim int
	}{
		{reduceCase{"dim1[3,5000]", []int{3, 5000}, false}, 1},
		{reduceCase{"dim0[1000,3]", []int{1000, 3}, false}, 0},
		{reduceCase{"dim1/transposed[4,3000]", []int{4, 3000}, true}, 1},
		{reduceCase{"dim1[2,300,5]", []int{2, 300, 5}, false}, 1},
		{reduceCase{"dim1[2,50000]", []int{2, 50000}, false}, 1}, // softmax: split lines
		{reduceCase{"dim0/transposed[20000,3]", []int{20000, 3}, true}, 0},
		{reduceCase{"dim1[3000,7]", []int{3000, 7}, false}, 1}, // cumsum: a line per invocation
		{reduceCase{"dim0/transposed[5,3000]", []int{5, 3000}, true}, 0},
	}
	for _, op := range []*dispatch.Op[ops.Scan]{ops.CumSum, ops.Softmax, ops.LogSoftmax} {
		for k, tc := range cases {
			t.Run(op.Name+"/"+tc.c.name, func(t *testing.T) {
				data := reduceRandom(dispatch.Numel(tc.c.shape), uint64(k), func(r *rand.Rand) float32 { return 10 * reduceUniform(r) })
				sc := ops.Scan{Dim: tc.dim}
				want := reduceCall(t, op, sc, reduceInput(t, reduceCPU, tc.c, data, dispatch.Float32))
				got := reduceCall(t, op, sc, reduceInput(t, reduceGPU, tc.c, data, dispatch.Float32))
				reduceClose(t, reduceValues(t, got), reduceValues(t, want), 1e-3, 1e-5)
			})
		}
	}
	// Lines of 20000 with a NaN, a +inf, only -inf, and one -inf, fused and
	// split.
	for _, n := range []int{300, 20000} {
		data := reduceRandom(5*n, 9, reduceUniform)
		data[3] = float32(math.NaN())
		data[n+5] = float32(math.Inf(1))
		for j := range n {
			data[2*n+j] = float32(math.Inf(-1))
		}
		data[3*n+7] = float32(math.Inf(-1))
		c := reduceCase{fmt.Sprintf("special[5,%d]", n), []int{5, n}, false}
		for _, op := range []*dispatch.Op[ops.Scan]{ops.Softmax, ops.LogSoftmax} {
			t.Run(op.Name+"/"+c.name, func(t *testing.T) {
				want := reduceCall(t, op, ops.Scan{Dim: 1}, reduceInput(t, reduceCPU, c, data, dispatch.Float32))
				got := reduceCall(t, op, ops.Scan{Dim: 1}, reduceInput(t, reduceGPU, c, data, dispatch.Float32))
				reduceClose(t, reduceValues(t, got), reduceValues(t, want), 1e-6, 1e-5)
			})
		}
	}
	t.Run("cumsum/int32", func(t *testing.T) {
		c := reduceCase{"[3,5000]", []int{3, 5000}, false}
		data := make([]int32, 15000)
		for i := range data {
			data[i] = int32(i*7919%2001) - 1000
		}
		want := reduceCall(t, ops.CumSum, ops.Scan{Dim: 1}, reduceInput(t, reduceCPU, c, data, dispatch.Int32))
		got := reduceCall(t, ops.CumSum, ops.Scan{Dim: 1}, reduceInput(t, reduceGPU, c, data, dispatch.Int32))
		reduceClose(t, reduceValues(t, got), reduceValues(t, want), 0, 0)
	})
}

func reduceCall[A any](t *testing.T, op *dispatch.Op[A], attrs A, x *dispatch.Tensor) *dispatch.Tensor {
	t.Helper()
	out, err := dispatch.Call(op, attrs, x)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkReduce measures a whole sum (split rows), row sums and column
// sums of a matrix (one workgroup per output) and softmax along rows, in
// GB/s of input read, each iteration waiting for the device.
func BenchmarkReduce(b *testing.B) {
	if _, err := dispatch.Open(reduceGPU); err != nil {
		testenv.SkipDevice(b, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	const n = 1024
	x, err := dispatch.Upload(reduceGPU, make([]float32, n*n), dispatch.Float32, []int{n, n})
	if err != nil {
		b.Fatal(err)
	}
	sum := func(r ops.Reduce) func() (*dispatch.Tensor, error) {
		return func() (*dispatch.Tensor, error) { return dispatch.Call(ops.Sum, r, x) }
	}
	scan := func(op *dispatch.Op[ops.Scan]) func() (*dispatch.Tensor, error) {
		return func() (*dispatch.Tensor, error) { return dispatch.Call(op, ops.Scan{Dim: 1}, x) }
	}
	for _, bc := range []struct {
		name string
		run  func() (*dispatch.Tensor, error)
	}{
		{"sum/all", sum(ops.Reduce{})},
		{"sum/dims[1]", sum(ops.Reduce{Dims: []int{1}})},
		{"sum/dims[0]", sum(ops.Reduce{Dims: []int{0}})},
		{"softmax/dim1", scan(ops.Softmax)},
		{"cumsum/dim1", scan(ops.CumSum)},
	} {
		b.Run(fmt.Sprintf("f32/%dx%d/%s", n, n, bc.name), func(b *testing.B) {
			for b.Loop() {
				out, err := bc.run()
				if err != nil {
					b.Fatal(err)
				}
				// Reading one element waits for the op.
				first := out.View([]int{1}, []int{1}, 0)
				if _, err := dispatch.ReadHost(first); err != nil {
					b.Fatal(err)
				}
				first.Release()
				out.Release()
			}
			b.ReportMetric(float64(4*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
