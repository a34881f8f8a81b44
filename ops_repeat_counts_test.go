package lathe

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestRepeatInterleaveCounts: the tensor-of-counts form of
// torch.repeat_interleave, on every device. The values and gradients are
// torch 1.13's (torch.repeat_interleave(x, torch.tensor([2, 0, 1]),
// dim=0), then the sum of y times arange(6) backward).
func TestRepeatInterleaveCounts(t *testing.T) {
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(dev, []float32{1, 2, 3, 4, 5, 6}, 3, 2).RequireGrad()
			for _, c := range []struct {
				name   string
				counts *Tensor
				dim    int
				shape  []int
				want   []float32
			}{
				{"per element", FromSlice(dev, []int64{2, 0, 1}), 0, []int{3, 2}, []float32{1, 2, 1, 2, 5, 6}},
				{"int32, negative dim", FromSlice(dev, []int32{1, 2, 3}), -2, []int{6, 2}, []float32{1, 2, 3, 4, 3, 4, 5, 6, 5, 6, 5, 6}},
				{"one for all", FromSlice(dev, []int64{3}), 1, []int{3, 6}, []float32{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6}},
				{"0-d", Scalar(dev, int64(2)), 1, []int{3, 4}, []float32{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}},
				{"all zero", FromSlice(dev, []int64{0, 0, 0}), 0, []int{0, 2}, nil},
			} {
				y := x.RepeatInterleaveCounts(c.counts, c.dim)
				got, err := y.Float32s()
				if err != nil || !slices.Equal(y.Shape(), c.shape) || !slices.Equal(got, c.want) && len(c.want)+len(got) > 0 {
					t.Errorf("%s: %v %v (%v), want %v %v", c.name, y.Shape(), got, err, c.shape, c.want)
				}
			}
			y := x.RepeatInterleaveCounts(FromSlice(dev, []int64{2, 0, 1}), 0)
			if err := y.Mul(Arange(dev, Float32, 0, 6, 1).Reshape(3, 2)).Sum().Backward(); err != nil {
				t.Fatal(err)
			}
			if g, err := x.Grad().Float32s(); err != nil || !slices.Equal(g, []float32{2, 4, 0, 0, 4, 5}) {
				t.Errorf("gradient %v (%v), want torch's [2 4 0 0 4 5]", g, err)
			}
			empty := Zeros(dev, Float32, 3, 0).RepeatInterleaveCounts(FromSlice(dev, []int64{1, math.MaxInt64 / 4, 3}), 0)
			if err := empty.Err(); err != nil || !slices.Equal(empty.Shape(), []int{1 + math.MaxInt64/4 + 3, 0}) {
				t.Errorf("x [3, 0]: %v %v, want an empty result with the counts' sum as its size", empty.Shape(), err)
			}
		})
	}
}

// TestRepeatInterleaveCountsRefuses: what torch refuses, lathe refuses
// with the kind and argument, and a sum past an int.
func TestRepeatInterleaveCountsRefuses(t *testing.T) {
	x := FromSlice(CPU, []float32{1, 2, 3, 4, 5, 6}, 3, 2)
	released := FromSlice(CPU, []int64{1, 1, 1})
	released.Release()
	for _, c := range []struct {
		name, arg string
		got       *Tensor
		kind      error
	}{
		{"length", "counts", x.RepeatInterleaveCounts(FromSlice(CPU, []int64{1, 2}), 0), ErrShape},
		{"negative", "counts", x.RepeatInterleaveCounts(FromSlice(CPU, []int64{-1, 1, 1}), 0), ErrValue},
		{"float", "counts", x.RepeatInterleaveCounts(FromSlice(CPU, []float32{1, 1, 1}), 0), ErrDType},
		{"int8", "counts", x.RepeatInterleaveCounts(FromSlice(CPU, []int8{1, 1, 1}), 0), ErrDType},
		{"2-d", "counts", x.RepeatInterleaveCounts(FromSlice(CPU, []int64{1, 1, 1}, 1, 3), 0), ErrShape},
		{"dim", "dim", x.RepeatInterleaveCounts(FromSlice(CPU, []int64{1, 1}), 2), ErrIndex},
		{"0-d x", "dim", Scalar(CPU, float32(1)).RepeatInterleaveCounts(FromSlice(CPU, []int64{1}), 0), ErrIndex},
		{"sum past int", "counts", x.RepeatInterleaveCounts(FromSlice(CPU, []int64{math.MaxInt64, 1, 0}), 0), ErrShape},
		{"too large for memory", "", x.RepeatInterleaveCounts(FromSlice(CPU, []int64{1 << 50, 0, 0}), 0), ErrOutOfMemory},
		{"released", "counts", x.RepeatInterleaveCounts(released, 0), ErrReleased},
		{"nil", "counts", x.RepeatInterleaveCounts(nil, 0), ErrValue},
	} {
		var e *Error
		err := c.got.Err()
		if !errors.As(err, &e) || !errors.Is(err, c.kind) || c.arg != "" && e.Arg != c.arg || e.Op != "repeat_interleave" {
			t.Errorf("%s: %v, want a %v naming repeat_interleave and %q", c.name, err, c.kind, c.arg)
		}
	}
}
