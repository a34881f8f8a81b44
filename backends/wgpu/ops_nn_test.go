package wgpu_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	_ "github.com/lathe-ml/lathe/backends/cpu"
	_ "github.com/lathe-ml/lathe/backends/wgpu"
	"github.com/lathe-ml/lathe/dispatch"
)

// The convolution, pooling and interpolation kernels are checked here
// against the cpu's on the same data, op by op: the conformance suite
// reaches most of them only through ops of other families (bias adds,
// squares, sums), and the backward ops only through gradients.

var (
	cpu0  = dispatch.Device{Kind: dispatch.Host}
	wgpu0 = dispatch.Device{Kind: dispatch.Kind("wgpu")}
)

// nnCase is one call of an op: its attribute and its arguments' shapes.
// With transposed set, the first argument is a view with its last two
// dims swapped, so that the kernels read a strided layout.
type nnCase struct {
	name       string
	op         string
	attrs      any
	shapes     [][]int
	transposed bool
}

func win(kernel, stride, pad, dil []int, ceil bool) dispatch.Window {
	return dispatch.Window{Kernel: kernel, Stride: stride, Padding: pad, Dilation: dil, CeilMode: ceil}
}

// upload makes a float32 tensor of shape on dev holding data.
func upload(t *testing.T, dev dispatch.Device, data []float32, shape []int) *dispatch.Tensor {
	t.Helper()
	x, err := dispatch.Upload(dev, append([]float32(nil), data...), dispatch.Float32, shape)
	if err != nil {
		t.Fatalf("upload to %s: %v", dev, err)
	}
	return x
}

// argument makes the same argument on the cpu and on wgpu:0.
func argument(t *testing.T, rng *rand.Rand, shape []int, transposed bool) (onCPU, onWGPU *dispatch.Tensor) {
	stored := append([]int(nil), shape...)
	r := len(shape)
	if transposed {
		stored[r-1], stored[r-2] = stored[r-2], stored[r-1]
	}
	data := make([]float32, dispatch.Numel(stored))
	for i := range data {
		data[i] = float32(rng.NormFloat64())
	}
	onCPU, onWGPU = upload(t, cpu0, data, stored), upload(t, wgpu0, data, stored)
	if transposed {
		st := dispatch.ContiguousStrides(stored)
		st[r-1], st[r-2] = st[r-2], st[r-1]
		onCPU, onWGPU = onCPU.View(shape, st, 0), onWGPU.View(shape, st, 0)
	}
	return onCPU, onWGPU
}

func floats(t *testing.T, x *dispatch.Tensor) []float32 {
	t.Helper()
	v, err := dispatch.ReadHost(x)
	if err != nil {
		t.Fatalf("reading %s: %v", x.Device, err)
	}
	return v.([]float32)
}

func runNNCases(t *testing.T, cases []nnCase) {
	if _, err := dispatch.Open(wgpu0); err != nil {
		t.Skipf("wgpu:0 is unavailable: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(c.name))))
			var onCPU, onWGPU []*dispatch.Tensor
			for i, s := range c.shapes {
				a, b := argument(t, rng, s, c.transposed && i == 0)
				onCPU, onWGPU = append(onCPU, a), append(onWGPU, b)
			}
			op := dispatch.Lookup(c.op)
			want, err := dispatch.Call(op, c.attrs, onCPU...)
			if err != nil {
				t.Fatalf("cpu: %v", err)
			}
			got, err := dispatch.Call(op, c.attrs, onWGPU...)
			if err != nil {
				t.Fatalf("wgpu:0: %v", err)
			}
			if !slices.Equal(got.Shape, want.Shape) {
				t.Fatalf("shape %v, want %v", got.Shape, want.Shape)
			}
			g, w := floats(t, got), floats(t, want)
			bad := 0
			for i := range w {
				if d := math.Abs(float64(g[i] - w[i])); d > 1e-5+1e-5*math.Abs(float64(w[i])) || math.IsNaN(float64(g[i])) != math.IsNaN(float64(w[i])) {
					if bad++; bad <= 5 {
						t.Errorf("element %d: %g, want %g", i, g[i], w[i])
					}
				}
			}
			if bad > 5 {
				t.Errorf("%d elements of %d differ", bad, len(w))
			}
		})
	}
}

func TestConvKernels(t *testing.T) {
	one, two := []int{1}, []int{2}
	c2 := dispatch.Conv{Window: win(nil, []int{2, 1}, []int{1, 0}, []int{1, 2}, false), Groups: 2}
	c1 := dispatch.Conv{Window: win(nil, two, one, two, false), Groups: 1}
	c3 := dispatch.Conv{Window: win(nil, []int{1, 2, 1}, []int{1, 0, 1}, []int{1, 1, 1}, false), Groups: 1}
	withInput := func(c dispatch.Conv, size ...int) dispatch.Conv { c.InputSize = size; return c }
	withKernel := func(c dispatch.Conv, k ...int) dispatch.Conv { c.Window.Kernel = k; return c }
	unf := dispatch.Unfold{Window: win([]int{2, 3}, []int{1, 2}, []int{1, 1}, []int{2, 1}, false)}
	fold := unf
	fold.OutputSize = []int{5, 6}
	runNNCases(t, []nnCase{
		{name: "conv2d", op: "conv", attrs: c2, shapes: [][]int{{2, 4, 7, 6}, {6, 2, 3, 2}}},
		{name: "conv2d/strided", op: "conv", attrs: c2, shapes: [][]int{{2, 4, 6, 7}, {6, 2, 3, 2}}, transposed: true},
		{name: "conv1d", op: "conv", attrs: c1, shapes: [][]int{{3, 2, 11}, {4, 2, 3}}},
		{name: "conv3d", op: "conv", attrs: c3, shapes: [][]int{{2, 3, 4, 5, 3}, {2, 3, 2, 3, 2}}},
		{name: "input_backward2d", op: "conv_input_backward", attrs: withInput(c2, 7, 6), shapes: [][]int{{2, 6, 4, 4}, {6, 2, 3, 2}}},
		{name: "input_backward1d", op: "conv_input_backward", attrs: withInput(c1, 11), shapes: [][]int{{3, 4, 5}, {4, 2, 3}}},
		{name: "input_backward3d", op: "conv_input_backward", attrs: withInput(c3, 4, 5, 3), shapes: [][]int{{2, 2, 5, 2, 4}, {2, 3, 2, 3, 2}}},
		{name: "weight_backward2d", op: "conv_weight_backward", attrs: withKernel(c2, 3, 2), shapes: [][]int{{2, 4, 7, 6}, {2, 6, 4, 4}}},
		{name: "weight_backward2d/strided", op: "conv_weight_backward", attrs: withKernel(c2, 3, 2), shapes: [][]int{{2, 4, 7, 6}, {2, 6, 4, 4}}, transposed: true},
		{name: "weight_backward1d", op: "conv_weight_backward", attrs: withKernel(c1, 3), shapes: [][]int{{3, 2, 11}, {3, 4, 5}}},
		{name: "weight_backward3d", op: "conv_weight_backward", attrs: withKernel(c3, 2, 3, 2), shapes: [][]int{{2, 3, 4, 5, 3}, {2, 2, 5, 2, 4}}},
		{name: "weight_backward/large", op: "conv_weight_backward", attrs: withKernel(dispatch.Conv{Window: win(nil, one, one, one, false), Groups: 1}, 3),
			shapes: [][]int{{8, 3, 300}, {8, 5, 300}}},
		{name: "unfold", op: "unfold", attrs: unf, shapes: [][]int{{2, 3, 5, 6}}},
		{name: "unfold/strided", op: "unfold", attrs: unf, shapes: [][]int{{2, 3, 5, 6}}, transposed: true},
		{name: "fold", op: "fold", attrs: fold, shapes: [][]int{{2, 18, 15}}},
	})
}

func TestPoolKernels(t *testing.T) {
	avg := func(w dispatch.Window, exclude bool, divisor int) dispatch.AvgPool {
		return dispatch.AvgPool{Window: w, ExcludePadding: exclude, Divisor: divisor}
	}
	back := func(a dispatch.AvgPool, size ...int) dispatch.AvgPoolBackward {
		return dispatch.AvgPoolBackward{AvgPool: a, InSize: size}
	}
	a2 := avg(win([]int{3, 2}, []int{2, 1}, []int{1, 1}, []int{1, 1}, true), false, 0)
	a2x := avg(win([]int{3, 3}, []int{2, 2}, []int{1, 1}, []int{1, 1}, true), true, 0)
	a2d := avg(win([]int{2, 2}, []int{2, 2}, []int{1, 0}, []int{1, 1}, false), false, 3)
	a1 := avg(win([]int{3}, []int{2}, []int{1}, []int{1}, false), true, 0)
	a3 := avg(win([]int{2, 3, 2}, []int{1, 2, 2}, []int{0, 1, 1}, []int{1, 1, 1}, true), false, 0)
	out := func(a dispatch.AvgPool, in ...int) []int { return a.OutShape(in) }
	o2, o2x, o2d := out(a2, 7, 6), out(a2x, 7, 6), out(a2d, 7, 6)
	o1, o3 := out(a1, 9), out(a3, 4, 5, 6)
	ad := func(s ...int) dispatch.AdaptivePool { return dispatch.AdaptivePool{Size: s} }
	adb := func(s ...int) dispatch.AdaptivePoolBackward { return dispatch.AdaptivePoolBackward{InSize: s} }
	runNNCases(t, []nnCase{
		{name: "avg2d/ceil", op: "avg_pool", attrs: a2, shapes: [][]int{{2, 3, 7, 6}}},
		{name: "avg2d/strided", op: "avg_pool", attrs: a2, shapes: [][]int{{2, 3, 7, 6}}, transposed: true},
		{name: "avg2d/exclude", op: "avg_pool", attrs: a2x, shapes: [][]int{{2, 3, 7, 6}}},
		{name: "avg2d/divisor", op: "avg_pool", attrs: a2d, shapes: [][]int{{2, 3, 7, 6}}},
		{name: "avg1d", op: "avg_pool", attrs: a1, shapes: [][]int{{2, 3, 9}}},
		{name: "avg3d", op: "avg_pool", attrs: a3, shapes: [][]int{{1, 2, 4, 5, 6}}},
		{name: "avg2d_backward/ceil", op: "avg_pool_backward", attrs: back(a2, 7, 6), shapes: [][]int{{2, 3, o2[0], o2[1]}}},
		{name: "avg2d_backward/exclude", op: "avg_pool_backward", attrs: back(a2x, 7, 6), shapes: [][]int{{2, 3, o2x[0], o2x[1]}}},
		{name: "avg2d_backward/divisor", op: "avg_pool_backward", attrs: back(a2d, 7, 6), shapes: [][]int{{2, 3, o2d[0], o2d[1]}}, transposed: true},
		{name: "avg1d_backward", op: "avg_pool_backward", attrs: back(a1, 9), shapes: [][]int{{2, 3, o1[0]}}},
		{name: "avg3d_backward", op: "avg_pool_backward", attrs: back(a3, 4, 5, 6), shapes: [][]int{{1, 2, o3[0], o3[1], o3[2]}}},
		{name: "adaptive2d/down", op: "adaptive_avg_pool", attrs: ad(3, 4), shapes: [][]int{{2, 3, 7, 10}}},
		{name: "adaptive2d/up", op: "adaptive_avg_pool", attrs: ad(9, 5), shapes: [][]int{{2, 3, 4, 3}}, transposed: true},
		{name: "adaptive1d", op: "adaptive_avg_pool", attrs: ad(4), shapes: [][]int{{2, 3, 11}}},
		{name: "adaptive3d", op: "adaptive_avg_pool", attrs: ad(2, 3, 1), shapes: [][]int{{1, 2, 5, 7, 3}}},
		{name: "adaptive2d_backward/down", op: "adaptive_avg_pool_backward", attrs: adb(7, 10), shapes: [][]int{{2, 3, 3, 4}}},
		{name: "adaptive2d_backward/up", op: "adaptive_avg_pool_backward", attrs: adb(4, 3), shapes: [][]int{{2, 3, 9, 5}}},
		{name: "adaptive1d_backward", op: "adaptive_avg_pool_backward", attrs: adb(11), shapes: [][]int{{2, 3, 4}}},
		{name: "adaptive3d_backward", op: "adaptive_avg_pool_backward", attrs: adb(5, 7, 3), shapes: [][]int{{1, 2, 2, 3, 1}}},
	})
}

func TestInterpKernels(t *testing.T) {
	type interp = dispatch.Interp
	back := func(a interp, size ...int) interp { a.InputSize = size; return a }
	var cases []nnCase
	for _, op := range []string{"upsample_nearest", "upsample_linear", "upsample_bicubic"} {
		forms := []struct {
			name string
			a    interp
		}{
			{"up", interp{Size: []int{9, 5}}},
			{"down", interp{Size: []int{3, 2}}},
			{"scale", interp{Size: []int{8, 7}, Scales: []float64{1.7, 2.5}}},
			{"same_rows", interp{Size: []int{5, 7}}},
		}
		if op == "upsample_nearest" {
			forms = append(forms, struct {
				name string
				a    interp
			}{"exact", interp{Size: []int{8, 7}, Exact: true}})
		} else {
			forms = append(forms, struct {
				name string
				a    interp
			}{"align_corners", interp{Size: []int{8, 7}, AlignCorners: true}})
		}
		for _, f := range forms {
			cases = append(cases,
				nnCase{name: op + "/" + f.name, op: op, attrs: f.a, shapes: [][]int{{2, 3, 5, 4}}},
				nnCase{name: op + "/" + f.name + "/strided", op: op, attrs: f.a, shapes: [][]int{{2, 3, 5, 4}}, transposed: true},
				nnCase{name: op + "_backward/" + f.name, op: op + "_backward", attrs: back(f.a, 5, 4),
					shapes: [][]int{{2, 3, f.a.Size[0], f.a.Size[1]}}})
		}
	}
	cases = append(cases,
		nnCase{name: "linear1d", op: "upsample_linear", attrs: interp{Size: []int{13}}, shapes: [][]int{{2, 3, 5}}},
		nnCase{name: "linear1d_backward", op: "upsample_linear_backward", attrs: interp{Size: []int{13}, InputSize: []int{5}}, shapes: [][]int{{2, 3, 13}}},
		nnCase{name: "trilinear", op: "upsample_linear", attrs: interp{Size: []int{4, 6, 3}}, shapes: [][]int{{1, 2, 3, 4, 5}}},
		nnCase{name: "trilinear_backward", op: "upsample_linear_backward", attrs: interp{Size: []int{4, 6, 3}, InputSize: []int{3, 4, 5}}, shapes: [][]int{{1, 2, 4, 6, 3}}},
		nnCase{name: "nearest/identity", op: "upsample_nearest", attrs: interp{Size: []int{5, 4}}, shapes: [][]int{{2, 3, 5, 4}}, transposed: true},
	)
	runNNCases(t, cases)
}
