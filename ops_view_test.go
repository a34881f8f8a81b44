package lathe

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// Helpers shared by the view, copy and index tests (prefixed vw so they do
// not collide with other families' test helpers).

// vwSeq is 0, 1, 2, ... in dtype dt with the given shape.
func vwSeq(dt DType, shape ...int) *Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	if dt == Bool { // false, true, true, ...: arange has no bool
		return Arange(CPU, Int64, 0, float64(n), 1).Cast(Bool).Reshape(shape...)
	}
	return Arange(CPU, dt, 0, float64(n), 1).Reshape(shape...)
}

// vwCase is one op call and the result it must give.
type vwCase struct {
	name  string
	got   *Tensor
	shape []int
	want  []float64
}

func vwRun(t *testing.T, cases []vwCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Helper()
			vwExpect(t, c.got, c.shape, c.want)
		})
	}
}

// vwExpect checks x's shape and its elements in row-major order.
func vwExpect(t *testing.T, x *Tensor, shape []int, want []float64) {
	t.Helper()
	if err := x.Err(); err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if got := x.Shape(); !slices.Equal(got, shape) {
		t.Fatalf("shape %v, want %v", got, shape)
	}
	data, err := x.host("test")
	if err != nil {
		t.Fatal(err)
	}
	got := asFloat64s(data)
	if want == nil {
		want = []float64{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("values %v, want %v", got, want)
	}
}

// vwErrCase is a call that must fail with an error of kind.
type vwErrCase struct {
	name string
	err  error
	kind error
}

func vwRunErr(t *testing.T, cases []vwErrCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil {
				t.Fatalf("no error, want %v", c.kind)
			}
			if !errors.Is(c.err, c.kind) {
				t.Fatalf("error %v, want kind %v", c.err, c.kind)
			}
			var e *Error
			if !errors.As(c.err, &e) || e.Op == "" || e.Site == "" {
				t.Fatalf("error %#v lacks op or site", c.err)
			}
		})
	}
}

// vwSameStorage reports whether two tensors share one storage.
func vwSameStorage(a, b *Tensor) bool { return a.t.Storage == b.t.Storage }

func TestViews(t *testing.T) {
	x := vwSeq(Float32, 2, 3, 4)
	m := vwSeq(Float32, 2, 3)
	mt := m.Transpose(0, 1) // [3, 2], not contiguous
	vwRun(t, []vwCase{
		{"reshape/f32/[6,4]", x.Reshape(6, 4), []int{6, 4}, seqF(24)},
		{"reshape/f32/infer[-1,2]", m.Reshape(-1, 2), []int{3, 2}, seqF(6)},
		{"reshape/f32/0d", Scalar(CPU, float32(7)).Reshape(1, 1), []int{1, 1}, []float64{7}},
		{"reshape/f32/to0d", vwSeq(Float32, 1, 1).Reshape(), []int{}, []float64{0}},
		{"reshape/f32/empty[0,3]->[3,-1]", Zeros(CPU, Float32, 0, 3).Reshape(3, -1), []int{3, 0}, nil},
		{"reshape/f32/transposed(copies)", mt.Reshape(6), []int{6}, []float64{0, 3, 1, 4, 2, 5}},
		{"reshape/f32/transposed[3,2]->[3,1,2](views)", mt.Reshape(3, 1, 2), []int{3, 1, 2}, []float64{0, 3, 1, 4, 2, 5}},
		{"view/f32/[4,6]", x.View(4, 6), []int{4, 6}, seqF(24)},
		{"flatten/f32/[2,3,4]", x.Flatten(), []int{24}, seqF(24)},
		{"flatten/f32/0d", Scalar(CPU, float32(3)).Flatten(), []int{1}, []float64{3}},
		{"flatten/f32/transposed", mt.Flatten(), []int{6}, []float64{0, 3, 1, 4, 2, 5}},
		{"permute/f32/[2,0,1]", x.Permute(2, 0, 1).Narrow(0, 1, 1), []int{1, 2, 3}, []float64{1, 5, 9, 13, 17, 21}},
		{"permute/f32/neg[-1,0,1]", x.Permute(-1, 0, 1).Slice(0, 3, 4, 1), []int{1, 2, 3}, []float64{3, 7, 11, 15, 19, 23}},
		{"permute/f32/0d", Scalar(CPU, float32(2)).Permute(), []int{}, []float64{2}},
		{"transpose/f32/[0,1]", m.Transpose(0, 1), []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}},
		{"transpose/f32/neg[-1,-3]", x.Transpose(-1, -3).Slice(0, 0, 1, 1).Slice(1, 0, 1, 1), []int{1, 1, 2}, []float64{0, 12}},
		{"transpose/f32/same", m.Transpose(1, -1), []int{2, 3}, seqF(6)},
		{"mt/f32/[2,3,4]", x.MT().Slice(0, 1, 2, 1).Slice(1, 0, 2, 1), []int{1, 2, 3}, []float64{12, 16, 20, 13, 17, 21}},
		{"mt/f32/[2,3]", m.MT(), []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}},
		{"squeeze/f32/all", vwSeq(Float32, 1, 3, 1).Squeeze(), []int{3}, seqF(3)},
		{"squeeze/f32/dim0", vwSeq(Float32, 1, 3, 1).Squeeze(0), []int{3, 1}, seqF(3)},
		{"squeeze/f32/dim-1", vwSeq(Float32, 1, 3, 1).Squeeze(-1), []int{1, 3}, seqF(3)},
		{"squeeze/f32/not1(stays)", vwSeq(Float32, 1, 3, 1).Squeeze(1), []int{1, 3, 1}, seqF(3)},
		{"squeeze/f32/dims[0,2]", vwSeq(Float32, 1, 3, 1).Squeeze(0, 2), []int{3}, seqF(3)},
		{"squeeze/f32/0d", Scalar(CPU, float32(4)).Squeeze(0), []int{}, []float64{4}},
		{"unsqueeze/f32/0", m.Unsqueeze(0), []int{1, 2, 3}, seqF(6)},
		{"unsqueeze/f32/2(end)", m.Unsqueeze(2), []int{2, 3, 1}, seqF(6)},
		{"unsqueeze/f32/-1", m.Unsqueeze(-1), []int{2, 3, 1}, seqF(6)},
		{"unsqueeze/f32/-3", m.Unsqueeze(-3), []int{1, 2, 3}, seqF(6)},
		{"unsqueeze/f32/0d", Scalar(CPU, float32(4)).Unsqueeze(-1), []int{1}, []float64{4}},
		{"unsqueeze/f32/transposed", mt.Unsqueeze(1), []int{3, 1, 2}, []float64{0, 3, 1, 4, 2, 5}},
		{"expand/f32/[2,1]->[2,3]", vwSeq(Float32, 2, 1).Expand(2, 3), []int{2, 3}, []float64{0, 0, 0, 1, 1, 1}},
		{"expand/f32/keep[-1,2]", vwSeq(Float32, 2, 1).Expand(-1, 2), []int{2, 2}, []float64{0, 0, 1, 1}},
		{"expand/f32/lead[2,1,3]", vwSeq(Float32, 3).Expand(2, 1, 3), []int{2, 1, 3}, []float64{0, 1, 2, 0, 1, 2}},
		{"expand/f32/0d", Scalar(CPU, float32(5)).Expand(3), []int{3}, []float64{5, 5, 5}},
		{"expand/f32/to0", vwSeq(Float32, 1).Expand(0), []int{0}, nil},
		{"expand/f32/then-reshape(copies)", vwSeq(Float32, 2, 1).Expand(2, 2).Reshape(4), []int{4}, []float64{0, 0, 1, 1}},
		{"broadcast_to/f32/[3]->[2,3]", vwSeq(Float32, 3).BroadcastTo(2, 3), []int{2, 3}, []float64{0, 1, 2, 0, 1, 2}},
		{"narrow/f32/dim1", m.Narrow(1, 1, 2), []int{2, 2}, []float64{1, 2, 4, 5}},
		{"narrow/f32/negstart", m.Narrow(-1, -2, 2), []int{2, 2}, []float64{1, 2, 4, 5}},
		{"narrow/f32/empty", m.Narrow(1, 3, 0), []int{2, 0}, nil},
		{"narrow/f32/transposed", mt.Narrow(0, 1, 2), []int{2, 2}, []float64{1, 4, 2, 5}},
		{"slice/f32/step2", vwSeq(Float32, 6).Slice(0, 0, 6, 2), []int{3}, []float64{0, 2, 4}},
		{"slice/f32/clamped", vwSeq(Float32, 6).Slice(0, -100, 100, 2), []int{3}, []float64{0, 2, 4}},
		{"slice/f32/neg", vwSeq(Float32, 6).Slice(-1, -2, 6, 1), []int{2}, []float64{4, 5}},
		{"slice/f32/huge-step", vwSeq(Float32, 6).Slice(0, 1, 6, math.MaxInt), []int{1}, []float64{1}},
		{"slice/f32/backward(empty)", vwSeq(Float32, 6).Slice(0, 4, 1, 1), []int{0}, nil},
		{"slice/f32/step3-past-end", vwSeq(Float32, 6).Slice(0, 5, 100, 3), []int{1}, []float64{5}},
		{"slice/f32/empty-then-narrow", m.Slice(1, 3, 3, 1).Narrow(0, 2, 0), []int{0, 0}, nil},
		{"view-of-view/i64", vwSeq(Int64, 4, 5).Slice(0, 1, 4, 2).Slice(1, 1, 5, 2).Transpose(0, 1), []int{2, 2},
			[]float64{6, 16, 8, 18}},
		{"view-of-view/bool", vwSeq(Int32, 2, 3).Cast(Bool).MT().Narrow(0, 0, 2), []int{2, 2}, []float64{0, 1, 1, 1}},
	})
}

func seqF(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

func TestViewsShareStorage(t *testing.T) {
	x := vwSeq(Float64, 3, 4)
	for _, c := range []struct {
		name string
		v    *Tensor
	}{
		{"reshape", x.Reshape(4, 3)},
		{"view", x.View(2, 6)},
		{"flatten", x.Flatten()},
		{"permute", x.Permute(1, 0)},
		{"transpose", x.Transpose(0, 1)},
		{"mt", x.MT()},
		{"squeeze", x.Unsqueeze(0).Squeeze()},
		{"expand", x.Unsqueeze(0).Expand(5, -1, -1)},
		{"broadcast_to", x.BroadcastTo(2, 3, 4)},
		{"narrow", x.Narrow(0, 1, 1)},
		{"slice", x.Slice(1, 0, 4, 3)},
		{"transpose/reshape(viewable)", x.Transpose(0, 1).Reshape(2, 2, 3)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.v.Err(); err != nil {
				t.Fatal(err)
			}
			if !vwSameStorage(x, c.v) {
				t.Fatal("does not share storage with its input")
			}
		})
	}
	t.Run("reshape/transposed(copies)", func(t *testing.T) {
		if vwSameStorage(x, x.MT().Reshape(12)) {
			t.Fatal("reshape of a non-viewable tensor must copy")
		}
	})
	t.Run("expand/strides", func(t *testing.T) {
		e := x.Narrow(0, 0, 1).Expand(4, 4)
		if got := e.t.Strides; !slices.Equal(got, []int{0, 1}) {
			t.Fatalf("strides %v, want [0 1]", got)
		}
	})
}

func TestViewErrors(t *testing.T) {
	x := vwSeq(Float32, 2, 3)
	vwRunErr(t, []vwErrCase{
		{"reshape/numel", x.Reshape(4).Err(), ErrShape},
		{"reshape/two-infer", x.Reshape(-1, -1).Err(), ErrShape},
		{"reshape/negative", x.Reshape(-2, 3).Err(), ErrShape},
		{"reshape/empty-infer", Zeros(CPU, Float32, 0).Reshape(0, -1).Err(), ErrShape},
		{"view/transposed", x.MT().View(6).Err(), ErrShape},
		{"permute/dup", x.Permute(0, 0).Err(), ErrValue},
		{"permute/count", x.Permute(0).Err(), ErrValue},
		{"permute/range", x.Permute(0, 2).Err(), ErrIndex},
		{"transpose/range", x.Transpose(0, 2).Err(), ErrIndex},
		{"mt/rank1", vwSeq(Float32, 3).MT().Err(), ErrShape},
		{"mt/0d", Scalar(CPU, float32(1)).MT().Err(), ErrShape},
		{"squeeze/range", x.Squeeze(2).Err(), ErrIndex},
		{"unsqueeze/range", x.Unsqueeze(3).Err(), ErrIndex},
		{"unsqueeze/range-neg", x.Unsqueeze(-4).Err(), ErrIndex},
		{"expand/not1", x.Expand(4, 3).Err(), ErrShape},
		{"expand/fewer", x.Expand(3).Err(), ErrShape},
		{"expand/lead-1", x.Expand(-1, 2, 3).Err(), ErrShape},
		{"broadcast_to/bad", x.BroadcastTo(2, 2).Err(), ErrShape},
		{"narrow/start", x.Narrow(1, 4, 0).Err(), ErrIndex},
		{"narrow/length", x.Narrow(1, 1, 3).Err(), ErrIndex},
		{"narrow/dim", x.Narrow(2, 0, 1).Err(), ErrIndex},
		{"narrow/0d", Scalar(CPU, float32(1)).Narrow(0, 0, 1).Err(), ErrShape},
		{"slice/step0", x.Slice(0, 0, 2, 0).Err(), ErrValue},
		{"slice/stepneg", x.Slice(0, 0, 2, -1).Err(), ErrValue},
		{"slice/dim", x.Slice(-3, 0, 2, 1).Err(), ErrIndex},
	})
}

// TestViewRule checks reshape's choice between a view and a copy against
// PyTorch's view rule on layouts where it is not obvious.
func TestViewRule(t *testing.T) {
	x := vwSeq(Float32, 4, 6)
	for _, c := range []struct {
		name  string
		in    *Tensor
		shape []int
		view  bool
	}{
		{"contiguous", x, []int{3, 8}, true},
		{"narrow-rows", x.Narrow(0, 1, 2), []int{12}, true},
		{"narrow-cols", x.Narrow(1, 0, 3), []int{12}, false},
		{"narrow-cols/split-rows", x.Narrow(1, 0, 3), []int{2, 2, 3}, true},
		{"transposed/add-unit", x.MT(), []int{6, 1, 4}, true},
		{"transposed/flatten", x.MT(), []int{24}, false},
		{"step2/split", x.Slice(1, 0, 6, 2), []int{2, 2, 3}, true},
		{"expanded/merge", x.Narrow(0, 0, 1).Expand(3, 6), []int{18}, false},
		{"expanded/split-inner", x.Narrow(0, 0, 1).Expand(3, 6), []int{3, 2, 3}, true},
	} {
		t.Run(fmt.Sprint(c.name, c.shape), func(t *testing.T) {
			r := c.in.Reshape(c.shape...)
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if got := vwSameStorage(c.in, r); got != c.view {
				t.Fatalf("view = %v, want %v", got, c.view)
			}
			want, _ := c.in.Contiguous().Float32s()
			got, _ := r.Float32s()
			if !slices.Equal(got, want) {
				t.Fatalf("values %v, want %v", got, want)
			}
		})
	}
}
