package cpu

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The forward values are checked against PyTorch in internal/conformance
// (for PyTorch's ranks); these check what PyTorch has no reference for:
// any number of spatial dims, and that each backward op is the transpose of
// its forward op, <A x, y> = <x, Aᵀ y>, which is what makes it a gradient.

func TestUpsampleBackwardIsTranspose(t *testing.T) {
	cases := []struct {
		op    ops.Upsample
		in    []int
		attrs ops.Interp
	}{
		{ops.UpsampleNearest, []int{2, 1, 5}, ops.Interp{Size: []int{8}}},
		{ops.UpsampleNearest, []int{1, 2, 4, 3}, ops.Interp{Size: []int{9, 2}, Exact: true}},
		{ops.UpsampleNearest, []int{1, 1, 3, 2, 2, 4}, ops.Interp{Size: []int{5, 3, 1, 7}, Scales: []float64{1.7, 1.5, 0.5, 1.9}}},
		{ops.UpsampleLinear, []int{2, 1, 5}, ops.Interp{Size: []int{3}}},
		{ops.UpsampleLinear, []int{1, 2, 4, 3}, ops.Interp{Size: []int{7, 5}, AlignCorners: true}},
		{ops.UpsampleLinear, []int{1, 1, 3, 2, 2, 4}, ops.Interp{Size: []int{5, 3, 2, 2}, Scales: []float64{1.7, 1.5, 1, 0.6}}},
		{ops.UpsampleBicubic, []int{1, 2, 4, 3}, ops.Interp{Size: []int{7, 2}}},
		{ops.UpsampleBicubic, []int{1, 1, 3, 4}, ops.Interp{Size: []int{6, 9}, AlignCorners: true}},
		{ops.UpsampleBicubic, []int{1, 1, 3, 2, 4}, ops.Interp{Size: []int{5, 3, 2}, Scales: []float64{1.7, 1.5, 0.6}}},
		{ops.UpsampleBicubic, []int{2, 1, 1}, ops.Interp{Size: []int{4}}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%v->%v", c.op.Forward.Name, c.in, c.attrs.Size), func(t *testing.T) {
			out := append(append([]int{}, c.in[:2]...), c.attrs.Size...)
			x := tensorOf(dispatch.Float64, randomF64(dispatch.Numel(c.in)), c.in...)
			y := tensorOf(dispatch.Float64, randomF64(dispatch.Numel(out) + 3)[3:], out...)
			ax := denseF64(call(t, c.op.Forward, c.attrs, x))
			b := c.attrs
			b.InputSize = c.in[2:]
			aty := denseF64(call(t, c.op.Backward, b, y))
			lhs, rhs := dot(ax, denseF64(y)), dot(denseF64(x), aty)
			if math.Abs(lhs-rhs) > 1e-12*(1+math.Abs(lhs)) {
				t.Errorf("<A x, y> = %v but <x, Aᵀ y> = %v", lhs, rhs)
			}
			// float32 runs the same code: it agrees with float64 to float32's precision.
			x32 := tensorOf(dispatch.Float32, f32s(denseF64(x)), c.in...)
			got := denseF64(call(t, c.op.Forward, c.attrs, x32))
			for i := range got {
				if math.Abs(got[i]-ax[i]) > 1e-5 {
					t.Fatalf("float32 [%d] = %v, float64 %v", i, got[i], ax[i])
				}
			}
		})
	}
}

// TestUpsampleNonContiguous: a transposed input gives what its contiguous
// copy gives.
func TestUpsampleNonContiguous(t *testing.T) {
	x := tensorOf(dispatch.Float64, randomF64(24), 1, 2, 3, 4)
	xt := dispatch.NewTensor(cpu0, dispatch.Float64, []int{1, 2, 4, 3}, x.Storage.Buffer)
	xt.Strides = []int{24, 12, 1, 4}
	a := ops.Interp{Size: []int{7, 5}}
	got := denseF64(call(t, ops.UpsampleBicubic.Forward, a, xt))
	want := denseF64(call(t, ops.UpsampleBicubic.Forward, a, contiguous(xt)))
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestUpsampleInferErrors(t *testing.T) {
	x := tensorOf(dispatch.Float64, randomF64(20), 1, 1, 4, 5)
	cases := []struct {
		name  string
		op    *dispatch.Op[ops.Interp]
		in    *dispatch.Tensor
		attrs ops.Interp
		kind  error
		arg   string
	}{
		{"rank", ops.UpsampleLinear.Forward, tensorOf(dispatch.Float64, randomF64(4), 2, 2), ops.Interp{Size: []int{4}}, dispatch.ErrShape, "x"},
		{"dtype", ops.UpsampleNearest.Forward, tensorOf(dispatch.Int64, make([]int64, 20), 1, 1, 4, 5), ops.Interp{Size: []int{2, 2}}, dispatch.ErrDType, "x"},
		{"size_count", ops.UpsampleLinear.Forward, x, ops.Interp{Size: []int{4}}, dispatch.ErrValue, "size"},
		{"size0", ops.UpsampleBicubic.Forward, x, ops.Interp{Size: []int{4, 0}}, dispatch.ErrValue, "size"},
		{"scales_count", ops.UpsampleLinear.Forward, x, ops.Interp{Size: []int{4, 4}, Scales: []float64{2}}, dispatch.ErrValue, "scale_factor"},
		{"scale_nan", ops.UpsampleLinear.Forward, x, ops.Interp{Size: []int{4, 4}, Scales: []float64{2, math.NaN()}}, dispatch.ErrValue, "scale_factor"},
		{"align_nearest", ops.UpsampleNearest.Forward, x, ops.Interp{Size: []int{4, 4}, AlignCorners: true}, dispatch.ErrValue, "align_corners"},
		{"exact_linear", ops.UpsampleLinear.Forward, x, ops.Interp{Size: []int{4, 4}, Exact: true}, dispatch.ErrValue, "exact"},
		{"backward_input_size", ops.UpsampleLinear.Backward, x, ops.Interp{Size: []int{4, 5}}, dispatch.ErrValue, "input_size"},
		{"backward_grad_shape", ops.UpsampleLinear.Backward, x, ops.Interp{Size: []int{4, 6}, InputSize: []int{2, 3}}, dispatch.ErrShape, "grad"},
		{"empty_input", ops.UpsampleLinear.Forward, tensorOf(dispatch.Float64, []float64{}, 1, 1, 0, 5), ops.Interp{Size: []int{4, 4}}, dispatch.ErrShape, "x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := dispatch.Call(c.op, c.attrs, c.in)
			var e *dispatch.Error
			if !errors.As(err, &e) || !errors.Is(err, c.kind) || e.Arg != c.arg || e.Op != c.op.Name {
				t.Fatalf("error %v, want kind %v on argument %q of %s", err, c.kind, c.arg, c.op.Name)
			}
		})
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
