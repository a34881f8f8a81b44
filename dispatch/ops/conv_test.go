package ops

import (
	"errors"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// The schemas of the convolution ops, called directly: shapes that fit give
// PyTorch's sizes, and each misfit is an *Error of the right kind naming
// the argument at fault.
func TestConvInfer(t *testing.T) {
	f32 := func(shape ...int) *dispatch.Tensor { return &dispatch.Tensor{Shape: shape, DType: dispatch.Float32} }
	win := func(k ...int) layout.Window {
		one := make([]int, len(k))
		for i := range one {
			one[i] = 1
		}
		return layout.Window{Kernel: k, Stride: slices.Clone(one), Padding: make([]int, len(k)), Dilation: one}
	}
	strided := win(3, 3)
	strided.Stride, strided.Padding = []int{2, 2}, []int{1, 1}
	type result struct {
		shape []int
		err   error
	}
	run := func(op *dispatch.Op[ConvParams], a ConvParams, in ...*dispatch.Tensor) result {
		_, shape, err := op.Infer(in, a)
		return result{shape, err}
	}
	runUnfold := func(op *dispatch.Op[UnfoldParams], a UnfoldParams, in ...*dispatch.Tensor) result {
		_, shape, err := op.Infer(in, a)
		return result{shape, err}
	}
	for _, c := range []struct {
		name  string
		got   result
		shape []int
		kind  error
		arg   string
	}{
		{"conv", run(Conv, ConvParams{Window: strided, Groups: 2}, f32(2, 4, 7, 7), f32(6, 2, 3, 3)), []int{2, 6, 4, 4}, nil, ""},
		{"conv/groups0", run(Conv, ConvParams{Window: strided}, f32(2, 4, 7, 7), f32(6, 4, 3, 3)), nil, dispatch.ErrValue, "groups"},
		{"input_backward", run(ConvInputBackward, ConvParams{Window: strided, Groups: 2, InputSize: []int{8, 7}}, f32(2, 6, 4, 4), f32(6, 2, 3, 3)), []int{2, 4, 8, 7}, nil, ""},
		{"input_backward/size_count", run(ConvInputBackward, ConvParams{Window: strided, Groups: 2, InputSize: []int{8}}, f32(2, 6, 4, 4), f32(6, 2, 3, 3)), nil, dispatch.ErrValue, "input_size"},
		{"input_backward/g_shape", run(ConvInputBackward, ConvParams{Window: strided, Groups: 2, InputSize: []int{8, 7}}, f32(2, 6, 5, 4), f32(6, 2, 3, 3)), nil, dispatch.ErrShape, "g"},
		{"input_backward/w_channels", run(ConvInputBackward, ConvParams{Window: strided, Groups: 1, InputSize: []int{8, 7}}, f32(2, 6, 4, 4), f32(5, 2, 3, 3)), nil, dispatch.ErrShape, "w"},
		{"weight_backward", run(ConvWeightBackward, ConvParams{Window: strided, Groups: 2}, f32(2, 4, 7, 7), f32(2, 6, 4, 4)), []int{6, 2, 3, 3}, nil, ""},
		{"weight_backward/dtype", run(ConvWeightBackward, ConvParams{Window: strided, Groups: 2}, f32(2, 4, 7, 7), &dispatch.Tensor{Shape: []int{2, 6, 4, 4}, DType: dispatch.Float64}), nil, dispatch.ErrDType, "g"},
		{"weight_backward/groups", run(ConvWeightBackward, ConvParams{Window: strided, Groups: 4}, f32(2, 4, 7, 7), f32(2, 6, 4, 4)), nil, dispatch.ErrValue, "groups"},
		{"unfold", runUnfold(Unfold, UnfoldParams{Window: strided}, f32(2, 3, 5, 5)), []int{2, 27, 9}, nil, ""},
		{"fold", runUnfold(Fold, UnfoldParams{Window: strided, OutputSize: []int{5, 5}}, f32(2, 27, 9)), []int{2, 3, 5, 5}, nil, ""},
		{"fold/windows", runUnfold(Fold, UnfoldParams{Window: strided, OutputSize: []int{5, 5}}, f32(2, 27, 8)), nil, dispatch.ErrShape, "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			shape, err := c.got.shape, c.got.err
			var e *dispatch.Error
			switch {
			case c.kind == nil && err != nil:
				t.Fatal(err)
			case c.kind == nil && !slices.Equal(shape, c.shape):
				t.Fatalf("shape %v, want %v", shape, c.shape)
			case c.kind != nil && !errors.Is(err, c.kind):
				t.Fatalf("error %v, want kind %v", err, c.kind)
			case c.kind != nil && (!errors.As(err, &e) || e.Arg != c.arg):
				t.Fatalf("error %v, want one naming %q", err, c.arg)
			}
		})
	}
}
