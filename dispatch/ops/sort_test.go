package ops

import (
	"errors"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// TestArgTopKInfer: argtopk's output is x's shape with the dim's size k,
// and what the root package's TopK checks before calling it (k's range,
// bool, a 0-d x) argtopk refuses itself for a program that calls it
// through dispatch.
func TestArgTopKInfer(t *testing.T) {
	f32 := func(shape ...int) *dispatch.Tensor { return &dispatch.Tensor{DType: dispatch.Float32, Shape: shape} }
	dt, shape, err := ArgTopK.Infer([]*dispatch.Tensor{f32(3, 7, 2)}, TopKDim{Dim: -2, K: 4})
	if err != nil || dt != dispatch.Int64 || !slices.Equal(shape, []int{3, 4, 2}) {
		t.Errorf("argtopk of [3,7,2] along -2, k 4: %v %v %v, want int64 [3 4 2]", dt, shape, err)
	}
	for name, c := range map[string]struct {
		err  error
		kind error
	}{
		"k>size": {infer(ArgTopK, TopKDim{Dim: 1, K: 8}, f32(3, 7)), dispatch.ErrValue},
		"k<0":    {infer(ArgTopK, TopKDim{Dim: 1, K: -1}, f32(3, 7)), dispatch.ErrValue},
		"dim":    {infer(ArgTopK, TopKDim{Dim: 2, K: 1}, f32(3, 7)), dispatch.ErrIndex},
		"0-d":    {infer(ArgTopK, TopKDim{Dim: 0, K: 1}, f32()), dispatch.ErrShape},
		"bool":   {infer(ArgTopK, TopKDim{Dim: 0, K: 1}, &dispatch.Tensor{DType: dispatch.Bool, Shape: []int{3}}), dispatch.ErrDType},
	} {
		var e *dispatch.Error
		if !errors.As(c.err, &e) || !errors.Is(c.err, c.kind) {
			t.Errorf("%s: got %v, want %v", name, c.err, c.kind)
		}
	}
}
