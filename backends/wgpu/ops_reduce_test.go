//go:build cgo

package wgpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	_ "github.com/lathe-ml/lathe/backends/cpu" // the reference results
	"github.com/lathe-ml/lathe/dispatch"
)

// The conformance cases are small; these check the paths they do not
// reach against the cpu: rows split in two passes (a whole sum of 1M
// elements, a few long strided rows), reduced dims that do not merge,
// lines longer than a workgroup for cumsum and softmax, and argmax and
// argmin, whose int64 indices wgpu:0 cannot hold (they are checked here
// through the kernel writing int32 indices).

var (
	gpu = dispatch.Device{Kind: dispatch.KindWGPU}
	cpu = dispatch.Device{Kind: dispatch.KindCPU}
)

func needDevice(t *testing.T) {
	t.Helper()
	if _, err := dispatch.Open(gpu); err != nil {
		t.Skipf("wgpu:0 is unavailable: %v", err)
	}
}

// layoutCase is an input of shape, made contiguous or as a transposed view
// of the last two dims (the data then lies with those dims swapped).
type layoutCase struct {
	name       string
	shape      []int
	transposed bool
}

// upload makes the input of c on dev from data (in storage order).
func upload(t *testing.T, dev dispatch.Device, c layoutCase, data any, dt dispatch.DType) *dispatch.Tensor {
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

func float32s(t *testing.T, x *dispatch.Tensor) []float64 {
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

// closeTo compares within atol + rtol·|want|, NaN matching NaN.
func closeTo(t *testing.T, got, want []float64, atol, rtol float64) {
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

func randomFloats(n int, seed uint64, f func(*rand.Rand) float32) []float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]float32, n)
	for i := range out {
		out[i] = f(rng)
	}
	return out
}

func uniform(r *rand.Rand) float32 { return float32(2*r.Float64() - 1) }

// nearOne keeps long products finite.
func nearOne(r *rand.Rand) float32 { return float32(math.Exp(1e-3 * (2*r.Float64() - 1))) }

func TestReduceLarge(t *testing.T) {
	needDevice(t)
	layouts := []struct {
		c    layoutCase
		dims []int
	}{
		{layoutCase{"all[1048576]", []int{1 << 20}, false}, nil},        // one row, split into parts
		{layoutCase{"dim1[3,50000]", []int{3, 50000}, false}, []int{1}}, // few long rows
		{layoutCase{"dim0/transposed[50000,3]", []int{50000, 3}, true}, []int{0}},
		{layoutCase{"dim0[50000,3]", []int{50000, 3}, false}, []int{0}}, // strided rows
		{layoutCase{"dim1[300,700]", []int{300, 700}, false}, []int{1}}, // many rows, one pass
		{layoutCase{"dims02/transposed[6,50,70]", []int{6, 50, 70}, true}, []int{0, 2}},
		{layoutCase{"dims02[20,30,400]", []int{20, 30, 400}, false}, []int{0, 2}},
		{layoutCase{"dim0[300,2000]", []int{300, 2000}, false}, []int{0}}, // column-wise: a row per invocation
		{layoutCase{"dim1[2000,3]", []int{2000, 3}, false}, []int{1}},     // short rows: a row per invocation
		{layoutCase{"dims02[30,40,50]", []int{30, 40, 50}, false}, []int{0, 2}},
	}
	ops := []struct {
		name       string
		correction int
		data       func(*rand.Rand) float32
		atol, rtol float64
	}{
		{"sum", 0, uniform, 1e-3, 1e-5},
		{"prod", 0, nearOne, 0, 2e-3}, // f32 products: 1M roundings near 1 drift by 6e-4
		{"max", 0, uniform, 0, 0},
		{"min", 0, uniform, 0, 0},
		{"var", 1, uniform, 0, 1e-4},
		{"var", 0, uniform, 0, 1e-4},
		{"std", 1, uniform, 0, 1e-4},
		{"logsumexp", 0, uniform, 0, 1e-5},
	}
	for _, l := range layouts {
		for k, op := range ops {
			t.Run(fmt.Sprintf("%s/c%d/%s", op.name, op.correction, l.c.name), func(t *testing.T) {
				data := randomFloats(dispatch.Numel(l.c.shape), uint64(k), op.data)
				attrs := dispatch.Reduce{Dims: l.dims, Correction: op.correction}
				want := call(t, op.name, attrs, upload(t, cpu, l.c, data, dispatch.Float32))
				got := call(t, op.name, attrs, upload(t, gpu, l.c, data, dispatch.Float32))
				closeTo(t, float32s(t, got), float32s(t, want), op.atol, op.rtol)
			})
		}
	}
}

func TestReduceInt32(t *testing.T) {
	needDevice(t)
	c := layoutCase{"all[1048576]", []int{1 << 20}, false}
	rng := rand.New(rand.NewPCG(3, 7))
	data := make([]int32, 1<<20)
	for i := range data {
		data[i] = rng.Int32() // the sum wraps, as on the cpu
	}
	for _, op := range []string{"sum", "prod", "max", "min"} {
		t.Run(op, func(t *testing.T) {
			want := call(t, op, dispatch.Reduce{}, upload(t, cpu, c, data, dispatch.Int32))
			got := call(t, op, dispatch.Reduce{}, upload(t, gpu, c, data, dispatch.Int32))
			closeTo(t, float32s(t, got), float32s(t, want), 0, 0)
		})
	}
}

func TestArgExtremes(t *testing.T) {
	needDevice(t)
	nan := float32(math.NaN())
	cases := []struct {
		c    layoutCase
		dims []int
		data []float32
	}{
		{layoutCase{"all[1048576]", []int{1 << 20}, false}, nil, randomFloats(1<<20, 5, uniform)},
		{layoutCase{"dim1/ties[3,4]", []int{3, 4}, false}, []int{1}, []float32{1, 3, 3, 0, 2, 2, 2, 2, -1, 5, -1, 5}},
		{layoutCase{"dim0/nan/transposed[4,3]", []int{4, 3}, true}, []int{0}, []float32{1, nan, 3, nan, 2, 2, 2, 2, -1, 5, -1, 5}},
		{layoutCase{"dim0/ties[300,2000]", []int{300, 2000}, false}, []int{0}, randomFloats(600000, 6, func(r *rand.Rand) float32 { return float32(r.IntN(3)) })},
		{layoutCase{"dim1/ties[2,20000]", []int{2, 20000}, false}, []int{1}, randomFloats(40000, 6, func(r *rand.Rand) float32 { return float32(r.IntN(3)) })},
		{layoutCase{"dim1/nan[2,20000]", []int{2, 20000}, false}, []int{1}, randomFloats(40000, 6, func(r *rand.Rand) float32 {
			if r.IntN(5000) == 0 {
				return nan
			}
			return uniform(r)
		})},
	}
	for _, op := range []string{"argmax", "argmin"} {
		for _, tc := range cases {
			t.Run(op+"/"+tc.c.name, func(t *testing.T) {
				r := dispatch.Reduce{Dims: tc.dims}
				want := call(t, op, r, upload(t, cpu, tc.c, tc.data, dispatch.Float32))
				x := upload(t, gpu, tc.c, tc.data, dispatch.Float32)
				dims, shape, err := dispatch.ReduceShape(x, r)
				if err != nil {
					t.Fatal(err)
				}
				got, err := dispatch.Empty(gpu, dispatch.Int32, shape)
				if err != nil {
					t.Fatal(err)
				}
				if err := reduce(op, got, x, dims, 0); err != nil {
					t.Fatal(err)
				}
				closeTo(t, float32s(t, got), float32s(t, want), 0, 0)
			})
		}
	}
}

func TestLines(t *testing.T) {
	needDevice(t)
	cases := []struct {
		c   layoutCase
		dim int
	}{
		{layoutCase{"dim1[3,5000]", []int{3, 5000}, false}, 1},
		{layoutCase{"dim0[1000,3]", []int{1000, 3}, false}, 0},
		{layoutCase{"dim1/transposed[4,3000]", []int{4, 3000}, true}, 1},
		{layoutCase{"dim1[2,300,5]", []int{2, 300, 5}, false}, 1},
		{layoutCase{"dim1[2,50000]", []int{2, 50000}, false}, 1}, // softmax: split lines
		{layoutCase{"dim0/transposed[20000,3]", []int{20000, 3}, true}, 0},
		{layoutCase{"dim1[3000,7]", []int{3000, 7}, false}, 1}, // cumsum: a line per invocation
		{layoutCase{"dim0/transposed[5,3000]", []int{5, 3000}, true}, 0},
	}
	for _, op := range []string{"cumsum", "softmax", "log_softmax"} {
		for k, tc := range cases {
			t.Run(op+"/"+tc.c.name, func(t *testing.T) {
				data := randomFloats(dispatch.Numel(tc.c.shape), uint64(k), func(r *rand.Rand) float32 { return 10 * uniform(r) })
				sc := dispatch.Scan{Dim: tc.dim}
				want := call(t, op, sc, upload(t, cpu, tc.c, data, dispatch.Float32))
				got := call(t, op, sc, upload(t, gpu, tc.c, data, dispatch.Float32))
				closeTo(t, float32s(t, got), float32s(t, want), 1e-3, 1e-5)
			})
		}
	}
	// Lines of 20000 with a NaN, a +inf, only -inf, and one -inf, fused and
	// split.
	for _, n := range []int{300, 20000} {
		data := randomFloats(5*n, 9, uniform)
		data[3] = float32(math.NaN())
		data[n+5] = float32(math.Inf(1))
		for j := range n {
			data[2*n+j] = float32(math.Inf(-1))
		}
		data[3*n+7] = float32(math.Inf(-1))
		c := layoutCase{fmt.Sprintf("special[5,%d]", n), []int{5, n}, false}
		for _, op := range []string{"softmax", "log_softmax"} {
			t.Run(op+"/"+c.name, func(t *testing.T) {
				want := call(t, op, dispatch.Scan{Dim: 1}, upload(t, cpu, c, data, dispatch.Float32))
				got := call(t, op, dispatch.Scan{Dim: 1}, upload(t, gpu, c, data, dispatch.Float32))
				closeTo(t, float32s(t, got), float32s(t, want), 1e-6, 1e-5)
			})
		}
	}
	t.Run("cumsum/int32", func(t *testing.T) {
		c := layoutCase{"[3,5000]", []int{3, 5000}, false}
		data := make([]int32, 15000)
		for i := range data {
			data[i] = int32(i*7919%2001) - 1000
		}
		want := call(t, "cumsum", dispatch.Scan{Dim: 1}, upload(t, cpu, c, data, dispatch.Int32))
		got := call(t, "cumsum", dispatch.Scan{Dim: 1}, upload(t, gpu, c, data, dispatch.Int32))
		closeTo(t, float32s(t, got), float32s(t, want), 0, 0)
	})
}

func call(t *testing.T, op string, attrs any, x *dispatch.Tensor) *dispatch.Tensor {
	t.Helper()
	out, err := dispatch.Call(dispatch.Lookup(op), attrs, x)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkReduce measures a whole sum (split rows), row sums and column
// sums of a matrix (one workgroup per output) and softmax along rows, in
// GB/s of input read, each iteration waiting for the device.
func BenchmarkReduce(b *testing.B) {
	if _, err := dispatch.Open(gpu); err != nil {
		b.Skipf("wgpu:0 is unavailable: %v", err)
	}
	const n = 1024
	x, err := dispatch.Upload(gpu, make([]float32, n*n), dispatch.Float32, []int{n, n})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name, op string
		attrs    any
	}{
		{"sum/all", "sum", dispatch.Reduce{}},
		{"sum/dims[1]", "sum", dispatch.Reduce{Dims: []int{1}}},
		{"sum/dims[0]", "sum", dispatch.Reduce{Dims: []int{0}}},
		{"softmax/dim1", "softmax", dispatch.Scan{Dim: 1}},
		{"cumsum/dim1", "cumsum", dispatch.Scan{Dim: 1}},
	} {
		op := dispatch.Lookup(bc.op)
		b.Run(fmt.Sprintf("f32/%dx%d/%s", n, n, bc.name), func(b *testing.B) {
			for b.Loop() {
				out, err := dispatch.Call(op, bc.attrs, x)
				if err != nil {
					b.Fatal(err)
				}
				// Reading one element waits for the op (Sync answers
				// before Dawn's callback has run).
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
