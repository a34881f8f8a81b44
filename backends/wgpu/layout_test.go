package wgpu_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// Walks of ten dims against the cpu. The kernels' parameters hold eight
// dims of a walk after layout.Walk.Collapse has merged what it can, so
// size-1 dims, contiguous runs, broadcasts and permuted views of any rank
// run; only a view whose dims step over storage unevenly past eight is
// refused, with the fix (a contiguous copy, which takes any rank).

// both is one argument on the cpu and on wgpu:0.
type both struct{ cpu, wgpu *dispatch.Tensor }

// rankArg stores data of shape stored contiguously on both devices and
// sees it through view (nil: as stored).
func rankArg(t *testing.T, stored []int, view func(*dispatch.Tensor) *dispatch.Tensor) both {
	t.Helper()
	data := make([]float32, dispatch.Numel(stored))
	for i := range data {
		data[i] = float32(i%23)/7 - 1.5
	}
	a := both{upload(t, cpu0, data, stored), upload(t, wgpu0, data, stored)}
	if view != nil {
		a.cpu, a.wgpu = view(a.cpu), view(a.wgpu)
	}
	return a
}

// permuted is the view of a contiguous tensor with its dims in order perm.
func permuted(perm ...int) func(*dispatch.Tensor) *dispatch.Tensor {
	return func(x *dispatch.Tensor) *dispatch.Tensor {
		shape, strides := make([]int, len(perm)), make([]int, len(perm))
		for i, d := range perm {
			shape[i], strides[i] = x.Shape[d], x.Strides[d]
		}
		return x.View(shape, strides, x.Offset)
	}
}

// corner is the view of the first two elements along every dim of a
// tensor of 3s: no two of its dims merge (stride 3·s over size 2).
func corner(x *dispatch.Tensor) *dispatch.Tensor {
	shape := slices.Repeat([]int{2}, x.Rank())
	return x.View(shape, x.Strides, x.Offset)
}

// hostFloats reads any tensor's elements as float64s (exactly).
func hostFloats(t *testing.T, x *dispatch.Tensor) []float64 {
	t.Helper()
	v, err := dispatch.ReadHost(x)
	if err != nil {
		t.Fatalf("reading %s: %v", x.Device, err)
	}
	var out []float64
	switch d := v.(type) {
	case []float32:
		for _, e := range d {
			out = append(out, float64(e))
		}
	case []half.Float16:
		for _, e := range d {
			out = append(out, float64(e.Float32()))
		}
	case []half.BFloat16:
		for _, e := range d {
			out = append(out, float64(e.Float32()))
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

func TestRank10(t *testing.T) {
	if _, err := dispatch.Open(wgpu0); err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	none := dispatch.None{}
	x := rankArg(t, []int{2, 1, 3, 1, 2, 1, 2, 1, 2, 2}, nil)
	y := rankArg(t, []int{1, 1, 3, 1, 2, 1, 1, 1, 2, 2}, nil) // broadcasts against x
	// dims 0, 1 and 8, 9 of a contiguous [2,3,2,...,2] swapped: 5 dims
	// once collapsed.
	p := rankArg(t, []int{2, 3, 2, 2, 2, 2, 2, 2, 2, 2}, permuted(1, 0, 2, 3, 4, 5, 6, 7, 9, 8))
	u := rankArg(t, slices.Repeat([]int{3}, 10), corner) // 10 dims that do not merge
	lhs := rankArg(t, []int{2, 1, 3, 1, 2, 1, 2, 1, 2, 3}, nil)
	rhs := rankArg(t, []int{1, 1, 3, 1, 2, 1, 1, 1, 3, 2}, nil)
	var index both
	for i, dev := range []dispatch.Device{cpu0, wgpu0} {
		ix, err := dispatch.Upload(dev, []int32{2, 0, 1, 2}, dispatch.Int32, []int{4})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			index.cpu = ix
		} else {
			index.wgpu = ix
		}
	}

	type on = func(both) *dispatch.Tensor
	cases := []struct {
		name string
		run  func(on) (*dispatch.Tensor, error)
	}{
		{"contiguous/size1", func(a on) (*dispatch.Tensor, error) { return dispatch.Call(ops.Contiguous, none, a(x)) }},
		{"contiguous/permuted", func(a on) (*dispatch.Tensor, error) { return dispatch.Call(ops.Contiguous, none, a(p)) }},
		{"exp/permuted", func(a on) (*dispatch.Tensor, error) { return dispatch.Call(ops.Exp, ops.Params{}, a(p)) }},
		{"add/broadcast", func(a on) (*dispatch.Tensor, error) { return dispatch.Call(ops.Add, none, a(x), a(y)) }},
		{"sum/dims[1,4,9]/permuted", func(a on) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.Sum, ops.Reduce{Dims: []int{1, 4, 9}}, a(p))
		}},
		{"argmax/dim8/permuted", func(a on) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.ArgMax, ops.Reduce{Dims: []int{8}}, a(p))
		}},
		{"cumsum/dim8/permuted", func(a on) (*dispatch.Tensor, error) { return dispatch.Call(ops.CumSum, ops.Scan{Dim: 8}, a(p)) }},
		{"softmax/dim1/permuted", func(a on) (*dispatch.Tensor, error) { return dispatch.Call(ops.Softmax, ops.Scan{Dim: 1}, a(p)) }},
		{"flip/dims[0,9]/permuted", func(a on) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.Flip, ops.FlipDims{Dims: []int{0, 9}}, a(p))
		}},
		{"pad/permuted", func(a on) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.Pad, ops.Padding{Pads: []int{1, -1, 0, 2}, Value: 0.5}, a(p))
		}},
		{"concat/dim2", func(a on) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.Concat, ops.ConcatDim{Dim: 2}, a(x), a(x))
		}},
		{"index_select/dim2", func(a on) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.IndexSelect, ops.IndexDim{Dim: 2}, a(x), a(index))
		}},
		{"matmul/8_batch_dims", func(a on) (*dispatch.Tensor, error) { return dispatch.Call(ops.MatMul, none, a(lhs), a(rhs)) }},
		// The copies take dims that do not merge.
		{"contiguous/unmerged", func(a on) (*dispatch.Tensor, error) { return dispatch.Call(ops.Contiguous, none, a(u)) }},
		{"cast/unmerged", func(a on) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.Cast, ops.CastTo{DType: dispatch.Int32}, a(u))
		}},
		{"pad/unmerged", func(a on) (*dispatch.Tensor, error) {
			return dispatch.Call(ops.Pad, ops.Padding{Pads: []int{0, 1, 1, 0}, Value: -2}, a(u))
		}},
		{"exp/unmerged/contiguous_first", func(a on) (*dispatch.Tensor, error) {
			c, err := dispatch.Call(ops.Contiguous, none, a(u))
			if err != nil {
				return nil, err
			}
			return dispatch.Call(ops.Exp, ops.Params{}, c)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.run(func(a both) *dispatch.Tensor { return a.cpu })
			if err != nil {
				t.Fatalf("cpu: %v", err)
			}
			got, err := c.run(func(a both) *dispatch.Tensor { return a.wgpu })
			if err != nil {
				t.Fatalf("wgpu:0: %v", err)
			}
			if !slices.Equal(got.Shape, want.Shape) {
				t.Fatalf("shape %v, want %v", got.Shape, want.Shape)
			}
			g, w := hostFloats(t, got), hostFloats(t, want)
			for i := range w {
				if math.Abs(g[i]-w[i]) > 1e-5+1e-5*math.Abs(w[i]) {
					t.Fatalf("element %d: %g, want %g", i, g[i], w[i])
				}
			}
		})
	}

	refused := []struct {
		name string
		run  func() (*dispatch.Tensor, error)
	}{
		{"exp/unmerged", func() (*dispatch.Tensor, error) { return dispatch.Call(ops.Exp, ops.Params{}, u.wgpu) }},
		{"add/unmerged", func() (*dispatch.Tensor, error) { return dispatch.Call(ops.Add, none, u.wgpu, u.wgpu) }},
		{"sum/unmerged", func() (*dispatch.Tensor, error) { return dispatch.Call(ops.Sum, ops.Reduce{}, u.wgpu) }},
	}
	for _, c := range refused {
		t.Run(c.name+"/error", func(t *testing.T) {
			_, err := c.run()
			var e *dispatch.Error
			if !errors.As(err, &e) || !errors.Is(err, dispatch.ErrUnsupported) ||
				!strings.Contains(e.Detail, "do not merge") || !strings.Contains(e.Fix, ".Contiguous()") {
				t.Fatalf("error %v, want an ErrUnsupported that the dims do not merge, with the fix .Contiguous()", err)
			}
		})
	}
}
