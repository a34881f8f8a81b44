package dispatch

import (
	"errors"
	"slices"
	"testing"
)

// The schemas of the convolution ops, called directly: shapes that fit give
// PyTorch's sizes, and each misfit is an *Error of the right kind naming
// the argument at fault.
func TestConvInfer(t *testing.T) {
	f32 := func(shape ...int) *Tensor { return &Tensor{Shape: shape, DType: Float32} }
	win := func(k ...int) Window {
		one := make([]int, len(k))
		for i := range one {
			one[i] = 1
		}
		return Window{Kernel: k, Stride: slices.Clone(one), Padding: make([]int, len(k)), Dilation: one}
	}
	strided := win(3, 3)
	strided.Stride, strided.Padding = []int{2, 2}, []int{1, 1}
	for _, c := range []struct {
		name  string
		op    string
		in    []*Tensor
		attrs any
		shape []int
		kind  error
		arg   string
	}{
		{"conv", "conv", []*Tensor{f32(2, 4, 7, 7), f32(6, 2, 3, 3)}, Conv{Window: strided, Groups: 2}, []int{2, 6, 4, 4}, nil, ""},
		{"conv/attrs", "conv", []*Tensor{f32(2, 4, 7, 7), f32(6, 2, 3, 3)}, Window{}, nil, ErrValue, "attrs"},
		{"conv/groups0", "conv", []*Tensor{f32(2, 4, 7, 7), f32(6, 4, 3, 3)}, Conv{Window: strided}, nil, ErrValue, "groups"},
		{"input_backward", "conv_input_backward", []*Tensor{f32(2, 6, 4, 4), f32(6, 2, 3, 3)},
			Conv{Window: strided, Groups: 2, InputSize: []int{8, 7}}, []int{2, 4, 8, 7}, nil, ""},
		{"input_backward/size_count", "conv_input_backward", []*Tensor{f32(2, 6, 4, 4), f32(6, 2, 3, 3)},
			Conv{Window: strided, Groups: 2, InputSize: []int{8}}, nil, ErrValue, "input_size"},
		{"input_backward/g_shape", "conv_input_backward", []*Tensor{f32(2, 6, 5, 4), f32(6, 2, 3, 3)},
			Conv{Window: strided, Groups: 2, InputSize: []int{8, 7}}, nil, ErrShape, "g"},
		{"input_backward/w_channels", "conv_input_backward", []*Tensor{f32(2, 6, 4, 4), f32(5, 2, 3, 3)},
			Conv{Window: strided, Groups: 1, InputSize: []int{8, 7}}, nil, ErrShape, "w"},
		{"weight_backward", "conv_weight_backward", []*Tensor{f32(2, 4, 7, 7), f32(2, 6, 4, 4)},
			Conv{Window: strided, Groups: 2}, []int{6, 2, 3, 3}, nil, ""},
		{"weight_backward/dtype", "conv_weight_backward", []*Tensor{f32(2, 4, 7, 7), {Shape: []int{2, 6, 4, 4}, DType: Float64}},
			Conv{Window: strided, Groups: 2}, nil, ErrDType, "g"},
		{"weight_backward/groups", "conv_weight_backward", []*Tensor{f32(2, 4, 7, 7), f32(2, 6, 4, 4)},
			Conv{Window: strided, Groups: 4}, nil, ErrValue, "groups"},
		{"unfold", "unfold", []*Tensor{f32(2, 3, 5, 5)}, Unfold{Window: strided}, []int{2, 27, 9}, nil, ""},
		{"fold", "fold", []*Tensor{f32(2, 27, 9)}, Unfold{Window: strided, OutputSize: []int{5, 5}}, []int{2, 3, 5, 5}, nil, ""},
		{"fold/windows", "fold", []*Tensor{f32(2, 27, 8)}, Unfold{Window: strided, OutputSize: []int{5, 5}}, nil, ErrShape, "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, shape, err := Lookup(c.op).Infer(c.in, c.attrs)
			var e *Error
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
