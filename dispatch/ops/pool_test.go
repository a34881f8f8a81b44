package ops

import (
	"errors"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// The backward and gather ops, which the root package never calls with
// bad arguments but a program using dispatch can, validate too.
func TestPoolInferErrors(t *testing.T) {
	f64 := func(shape ...int) *dispatch.Tensor { return &dispatch.Tensor{DType: dispatch.Float64, Shape: shape} }
	i64 := func(shape ...int) *dispatch.Tensor { return &dispatch.Tensor{DType: dispatch.Int64, Shape: shape} }
	w := layout.Window{Kernel: []int{2, 2}, Stride: []int{2, 2}, Padding: []int{0, 0}, Dilation: []int{1, 1}}
	back := AvgPoolBackwardParams{AvgPoolParams: AvgPoolParams{Window: w}, InSize: []int{4, 4}}
	for name, c := range map[string]struct {
		err  error
		kind error
	}{
		"avg_backward/grad":   {infer(AvgPoolBackward, back, f64(1, 1, 3, 2)), dispatch.ErrShape},
		"avg_backward/int":    {infer(AvgPoolBackward, back, i64(1, 1, 2, 2)), dispatch.ErrDType},
		"adaptive_back/rank":  {infer(AdaptiveAvgPoolBackward, AdaptivePoolBackward{InSize: []int{4, 4}}, f64(1, 2, 2)), dispatch.ErrShape},
		"adaptive_back/empty": {infer(AdaptiveAvgPoolBackward, AdaptivePoolBackward{InSize: []int{0, 4}}, f64(1, 1, 2, 2)), dispatch.ErrShape},
		"gather/rank":         {infer(PoolGather, dispatch.None{}, f64(4, 4), i64(4, 4)), dispatch.ErrShape},
		"gather/channels":     {infer(PoolGather, dispatch.None{}, f64(1, 2, 4, 4), i64(1, 3, 2, 2)), dispatch.ErrShape},
		"gather/int32":        {infer(PoolGather, dispatch.None{}, f64(1, 2, 4, 4), &dispatch.Tensor{DType: dispatch.Int32, Shape: []int{1, 2, 2, 2}}), dispatch.ErrDType},
		"scatter/shape":       {infer(MaxPoolBackward, PoolScatter{Size: []int{4, 4}}, f64(1, 1, 2, 2), i64(1, 1, 2, 1)), dispatch.ErrShape},
		"scatter/size_count":  {infer(MaxPoolBackward, PoolScatter{Size: []int{4}}, f64(1, 1, 2, 2), i64(1, 1, 2, 2)), dispatch.ErrShape},
		"scatter/size0":       {infer(MaxUnpool, PoolScatter{Size: []int{0, 4}}, f64(1, 1, 2, 2), i64(1, 1, 2, 2)), dispatch.ErrValue},
		"scatter/no_size":     {infer(MaxUnpool, PoolScatter{}, f64(1, 1, 2, 2), i64(1, 1, 2, 2)), dispatch.ErrValue},
		"indices/in_padding":  {infer(MaxPoolIndices, layout.Window{Kernel: []int{2, 2}, Stride: []int{1, 1}, Padding: []int{1, 1}, Dilation: []int{3, 3}}, f64(1, 1, 2, 2)), dispatch.ErrValue},
	} {
		var e *dispatch.Error
		if !errors.As(c.err, &e) || !errors.Is(c.err, c.kind) {
			t.Errorf("%s: got %v, want %v", name, c.err, c.kind)
		}
	}
}

// infer is op's Infer's error on in with attributes a.
func infer[A any](op *dispatch.Op[A], a A, in ...*dispatch.Tensor) error {
	_, _, err := op.Infer(in, a)
	return err
}
