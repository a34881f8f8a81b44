package wgpu_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	_ "github.com/lathe-ml/lathe/backends/cpu"
	_ "github.com/lathe-ml/lathe/backends/wgpu"
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// The convolution, pooling and interpolation kernels are checked here
// against the cpu's on the same data, op by op: the conformance suite
// reaches most of them only through ops of other families (bias adds,
// squares, sums), and the backward ops only through gradients.

var (
	cpu0  = dispatch.Device{Kind: dispatch.Host}
	wgpu0 = dispatch.Device{Kind: dispatch.Kind("wgpu")}
)

// nnCase is one call of an op (with its attribute) and its arguments'
// shapes. With transposed set, the first argument is a view with its last
// two dims swapped, so that the kernels read a strided layout.
type nnCase struct {
	name       string
	run        func(in ...*dispatch.Tensor) (*dispatch.Tensor, error)
	shapes     [][]int
	transposed bool
}

// call is op with the attribute a, as an nnCase runs it.
func call[A any](op *dispatch.Op[A], a A) func(...*dispatch.Tensor) (*dispatch.Tensor, error) {
	return func(in ...*dispatch.Tensor) (*dispatch.Tensor, error) { return dispatch.Call(op, a, in...) }
}

func win(kernel, stride, pad, dil []int, ceil bool) layout.Window {
	return layout.Window{Kernel: kernel, Stride: stride, Padding: pad, Dilation: dil, CeilMode: ceil}
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
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(c.name))))
			var onCPU, onWGPU []*dispatch.Tensor
			for i, s := range c.shapes {
				a, b := argument(t, rng, s, c.transposed && i == 0)
				onCPU, onWGPU = append(onCPU, a), append(onWGPU, b)
			}
			want, err := c.run(onCPU...)
			if err != nil {
				t.Fatalf("cpu: %v", err)
			}
			got, err := c.run(onWGPU...)
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
	c2 := ops.ConvParams{Window: win(nil, []int{2, 1}, []int{1, 0}, []int{1, 2}, false), Groups: 2}
	c1 := ops.ConvParams{Window: win(nil, two, one, two, false), Groups: 1}
	c3 := ops.ConvParams{Window: win(nil, []int{1, 2, 1}, []int{1, 0, 1}, []int{1, 1, 1}, false), Groups: 1}
	withInput := func(c ops.ConvParams, size ...int) ops.ConvParams { c.InputSize = size; return c }
	withKernel := func(c ops.ConvParams, k ...int) ops.ConvParams { c.Window.Kernel = k; return c }
	unf := ops.UnfoldParams{Window: win([]int{2, 3}, []int{1, 2}, []int{1, 1}, []int{2, 1}, false)}
	fold := unf
	fold.OutputSize = []int{5, 6}
	runNNCases(t, []nnCase{
		{name: "conv2d", run: call(ops.Conv, c2), shapes: [][]int{{2, 4, 7, 6}, {6, 2, 3, 2}}},
		{name: "conv2d/strided", run: call(ops.Conv, c2), shapes: [][]int{{2, 4, 6, 7}, {6, 2, 3, 2}}, transposed: true},
		{name: "conv1d", run: call(ops.Conv, c1), shapes: [][]int{{3, 2, 11}, {4, 2, 3}}},
		{name: "conv3d", run: call(ops.Conv, c3), shapes: [][]int{{2, 3, 4, 5, 3}, {2, 3, 2, 3, 2}}},
		{name: "input_backward2d", run: call(ops.ConvInputBackward, withInput(c2, 7, 6)), shapes: [][]int{{2, 6, 4, 4}, {6, 2, 3, 2}}},
		{name: "input_backward1d", run: call(ops.ConvInputBackward, withInput(c1, 11)), shapes: [][]int{{3, 4, 5}, {4, 2, 3}}},
		{name: "input_backward3d", run: call(ops.ConvInputBackward, withInput(c3, 4, 5, 3)), shapes: [][]int{{2, 2, 5, 2, 4}, {2, 3, 2, 3, 2}}},
		{name: "weight_backward2d", run: call(ops.ConvWeightBackward, withKernel(c2, 3, 2)), shapes: [][]int{{2, 4, 7, 6}, {2, 6, 4, 4}}},
		{name: "weight_backward2d/strided", run: call(ops.ConvWeightBackward, withKernel(c2, 3, 2)), shapes: [][]int{{2, 4, 7, 6}, {2, 6, 4, 4}}, transposed: true},
		{name: "weight_backward1d", run: call(ops.ConvWeightBackward, withKernel(c1, 3)), shapes: [][]int{{3, 2, 11}, {3, 4, 5}}},
		{name: "weight_backward3d", run: call(ops.ConvWeightBackward, withKernel(c3, 2, 3, 2)), shapes: [][]int{{2, 3, 4, 5, 3}, {2, 2, 5, 2, 4}}},
		{name: "weight_backward/large", run: call(ops.ConvWeightBackward, withKernel(ops.ConvParams{Window: win(nil, one, one, one, false), Groups: 1}, 3)),
			shapes: [][]int{{8, 3, 300}, {8, 5, 300}}},
		{name: "unfold", run: call(ops.Unfold, unf), shapes: [][]int{{2, 3, 5, 6}}},
		{name: "unfold/strided", run: call(ops.Unfold, unf), shapes: [][]int{{2, 3, 5, 6}}, transposed: true},
		{name: "fold", run: call(ops.Fold, fold), shapes: [][]int{{2, 18, 15}}},
	})
}

func TestPoolKernels(t *testing.T) {
	avg := func(w layout.Window, exclude bool, divisor int) ops.AvgPoolParams {
		return ops.AvgPoolParams{Window: w, ExcludePadding: exclude, Divisor: divisor}
	}
	back := func(a ops.AvgPoolParams, size ...int) ops.AvgPoolBackwardParams {
		return ops.AvgPoolBackwardParams{AvgPoolParams: a, InSize: size}
	}
	a2 := avg(win([]int{3, 2}, []int{2, 1}, []int{1, 1}, []int{1, 1}, true), false, 0)
	a2x := avg(win([]int{3, 3}, []int{2, 2}, []int{1, 1}, []int{1, 1}, true), true, 0)
	a2d := avg(win([]int{2, 2}, []int{2, 2}, []int{1, 0}, []int{1, 1}, false), false, 3)
	a1 := avg(win([]int{3}, []int{2}, []int{1}, []int{1}, false), true, 0)
	a3 := avg(win([]int{2, 3, 2}, []int{1, 2, 2}, []int{0, 1, 1}, []int{1, 1, 1}, true), false, 0)
	out := func(a ops.AvgPoolParams, in ...int) []int { return a.OutShape(in) }
	o2, o2x, o2d := out(a2, 7, 6), out(a2x, 7, 6), out(a2d, 7, 6)
	o1, o3 := out(a1, 9), out(a3, 4, 5, 6)
	ad := func(s ...int) ops.AdaptivePool { return ops.AdaptivePool{Size: s} }
	adb := func(s ...int) ops.AdaptivePoolBackward { return ops.AdaptivePoolBackward{InSize: s} }
	runNNCases(t, []nnCase{
		{name: "avg2d/ceil", run: call(ops.AvgPool, a2), shapes: [][]int{{2, 3, 7, 6}}},
		{name: "avg2d/strided", run: call(ops.AvgPool, a2), shapes: [][]int{{2, 3, 7, 6}}, transposed: true},
		{name: "avg2d/exclude", run: call(ops.AvgPool, a2x), shapes: [][]int{{2, 3, 7, 6}}},
		{name: "avg2d/divisor", run: call(ops.AvgPool, a2d), shapes: [][]int{{2, 3, 7, 6}}},
		{name: "avg1d", run: call(ops.AvgPool, a1), shapes: [][]int{{2, 3, 9}}},
		{name: "avg3d", run: call(ops.AvgPool, a3), shapes: [][]int{{1, 2, 4, 5, 6}}},
		{name: "avg2d_backward/ceil", run: call(ops.AvgPoolBackward, back(a2, 7, 6)), shapes: [][]int{{2, 3, o2[0], o2[1]}}},
		{name: "avg2d_backward/exclude", run: call(ops.AvgPoolBackward, back(a2x, 7, 6)), shapes: [][]int{{2, 3, o2x[0], o2x[1]}}},
		{name: "avg2d_backward/divisor", run: call(ops.AvgPoolBackward, back(a2d, 7, 6)), shapes: [][]int{{2, 3, o2d[0], o2d[1]}}, transposed: true},
		{name: "avg1d_backward", run: call(ops.AvgPoolBackward, back(a1, 9)), shapes: [][]int{{2, 3, o1[0]}}},
		{name: "avg3d_backward", run: call(ops.AvgPoolBackward, back(a3, 4, 5, 6)), shapes: [][]int{{1, 2, o3[0], o3[1], o3[2]}}},
		{name: "adaptive2d/down", run: call(ops.AdaptiveAvgPool, ad(3, 4)), shapes: [][]int{{2, 3, 7, 10}}},
		{name: "adaptive2d/up", run: call(ops.AdaptiveAvgPool, ad(9, 5)), shapes: [][]int{{2, 3, 4, 3}}, transposed: true},
		{name: "adaptive1d", run: call(ops.AdaptiveAvgPool, ad(4)), shapes: [][]int{{2, 3, 11}}},
		{name: "adaptive3d", run: call(ops.AdaptiveAvgPool, ad(2, 3, 1)), shapes: [][]int{{1, 2, 5, 7, 3}}},
		{name: "adaptive2d_backward/down", run: call(ops.AdaptiveAvgPoolBackward, adb(7, 10)), shapes: [][]int{{2, 3, 3, 4}}},
		{name: "adaptive2d_backward/up", run: call(ops.AdaptiveAvgPoolBackward, adb(4, 3)), shapes: [][]int{{2, 3, 9, 5}}},
		{name: "adaptive1d_backward", run: call(ops.AdaptiveAvgPoolBackward, adb(11)), shapes: [][]int{{2, 3, 4}}},
		{name: "adaptive3d_backward", run: call(ops.AdaptiveAvgPoolBackward, adb(5, 7, 3)), shapes: [][]int{{1, 2, 2, 3, 1}}},
	})
}

func TestInterpKernels(t *testing.T) {
	type interp = ops.Interp
	back := func(a interp, size ...int) interp { a.InputSize = size; return a }
	var cases []nnCase
	for _, u := range ops.Upsamples {
		op := u.Forward.Name
		forms := []struct {
			name string
			a    interp
		}{
			{"up", interp{Size: []int{9, 5}}},
			{"down", interp{Size: []int{3, 2}}},
			{"scale", interp{Size: []int{8, 7}, Scales: []float64{1.7, 2.5}}},
			{"same_rows", interp{Size: []int{5, 7}}},
		}
		if u.Filter == layout.FilterNearest {
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
				nnCase{name: op + "/" + f.name, run: call(u.Forward, f.a), shapes: [][]int{{2, 3, 5, 4}}},
				nnCase{name: op + "/" + f.name + "/strided", run: call(u.Forward, f.a), shapes: [][]int{{2, 3, 5, 4}}, transposed: true},
				nnCase{name: u.Backward.Name + "/" + f.name, run: call(u.Backward, back(f.a, 5, 4)),
					shapes: [][]int{{2, 3, f.a.Size[0], f.a.Size[1]}}})
		}
	}
	cases = append(cases,
		nnCase{name: "linear1d", run: call(ops.UpsampleLinear.Forward, interp{Size: []int{13}}), shapes: [][]int{{2, 3, 5}}},
		nnCase{name: "linear1d_backward", run: call(ops.UpsampleLinear.Backward, interp{Size: []int{13}, InputSize: []int{5}}), shapes: [][]int{{2, 3, 13}}},
		nnCase{name: "trilinear", run: call(ops.UpsampleLinear.Forward, interp{Size: []int{4, 6, 3}}), shapes: [][]int{{1, 2, 3, 4, 5}}},
		nnCase{name: "trilinear_backward", run: call(ops.UpsampleLinear.Backward, interp{Size: []int{4, 6, 3}, InputSize: []int{3, 4, 5}}), shapes: [][]int{{1, 2, 4, 6, 3}}},
		nnCase{name: "nearest/identity", run: call(ops.UpsampleNearest.Forward, interp{Size: []int{5, 4}}), shapes: [][]int{{2, 3, 5, 4}}, transposed: true},
	)
	runNNCases(t, cases)
}
