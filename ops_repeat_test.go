package lathe

import (
	"errors"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestTriangleAndRepeatDTypes runs Tril, Triu, Repeat, Tile and
// RepeatInterleave on every device in each dtype it holds: the values and
// the dtype come back unchanged where kept, zero elsewhere.
func TestTriangleAndRepeatDTypes(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6} // [2, 3]
	cases := []struct {
		name  string
		f     func(*Tensor) *Tensor
		shape []int
		want  []float64
	}{
		{"tril0", func(x *Tensor) *Tensor { return x.Tril(0) }, []int{2, 3}, []float64{1, 0, 0, 4, 5, 0}},
		{"tril1", func(x *Tensor) *Tensor { return x.Tril(1) }, []int{2, 3}, []float64{1, 2, 0, 4, 5, 6}},
		{"tril-1", func(x *Tensor) *Tensor { return x.Tril(-1) }, []int{2, 3}, []float64{0, 0, 0, 4, 0, 0}},
		{"tril-9", func(x *Tensor) *Tensor { return x.Tril(-9) }, []int{2, 3}, []float64{0, 0, 0, 0, 0, 0}},
		{"tril9", func(x *Tensor) *Tensor { return x.Tril(1 << 62) }, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"triu0", func(x *Tensor) *Tensor { return x.Triu(0) }, []int{2, 3}, []float64{1, 2, 3, 0, 5, 6}},
		{"triu2", func(x *Tensor) *Tensor { return x.Triu(2) }, []int{2, 3}, []float64{0, 0, 3, 0, 0, 0}},
		{"triu-min", func(x *Tensor) *Tensor { return x.Triu(-1 << 62) }, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"triu-T", func(x *Tensor) *Tensor { return x.MT().Triu(0) }, []int{3, 2}, []float64{1, 4, 0, 5, 0, 0}},
		{"repeat", func(x *Tensor) *Tensor { return x.Repeat(2, 1) }, []int{4, 3}, []float64{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}},
		{"repeat-lead", func(x *Tensor) *Tensor { return x.Repeat(2, 1, 1) }, []int{2, 2, 3}, []float64{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}},
		{"repeat-col", func(x *Tensor) *Tensor { return x.Repeat(1, 2) }, []int{2, 6}, []float64{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}},
		{"repeat0", func(x *Tensor) *Tensor { return x.Repeat(0, 2) }, []int{0, 6}, nil},
		{"tile", func(x *Tensor) *Tensor { return x.Tile(2) }, []int{2, 6}, []float64{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}},
		{"tile-none", func(x *Tensor) *Tensor { return x.Tile() }, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"interleave0", func(x *Tensor) *Tensor { return x.RepeatInterleave(2, 0) }, []int{4, 3},
			[]float64{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}},
		{"interleave-1", func(x *Tensor) *Tensor { return x.RepeatInterleave(2, -1) }, []int{2, 6},
			[]float64{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}},
		{"interleave-T", func(x *Tensor) *Tensor { return x.MT().RepeatInterleave(2, 1) }, []int{3, 4},
			[]float64{1, 1, 4, 4, 2, 2, 5, 5, 3, 3, 6, 6}},
	}
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float32, Float64, Float16, BFloat16, Int32, Int64} {
			base := FromSlice(CPU, x, 2, 3).Cast(dt).To(dev)
			if errors.Is(base.Err(), ErrUnsupported) {
				continue // float64 on wgpu
			}
			for _, c := range cases {
				t.Run(dev.String()+"/"+dt.String()+"/"+c.name, func(t *testing.T) {
					got := c.f(base)
					if err := got.Err(); err != nil {
						t.Fatal(err)
					}
					if got.DType() != dt {
						t.Fatalf("dtype %v, want %v", got.DType(), dt)
					}
					if !slices.Equal(got.Shape(), c.shape) {
						t.Fatalf("shape %v, want %v", got.Shape(), c.shape)
					}
					v, err := got.Cast(Float32).Float32s()
					if err != nil {
						t.Fatal(err)
					}
					for i := range c.want {
						if float64(v[i]) != c.want[i] {
							t.Fatalf("values %v, want %v", v, c.want)
						}
					}
				})
			}
		}
		t.Run(dev.String()+"/bool/tril", func(t *testing.T) {
			b := Ones(dev, Bool, 2, 2, 3).Tril(0)
			if b.DType() != Bool {
				t.Fatalf("dtype %v", b.DType())
			}
			v, err := b.Cast(Float32).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if want := []float32{1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0}; !slices.Equal(v, want) {
				t.Fatalf("values %v, want %v", v, want)
			}
		})
	}
}

// TestTriangleAndRepeatErrors checks the refusals and that a failed, nil or
// released x gives a failed result.
func TestTriangleAndRepeatErrors(t *testing.T) {
	x := Ones(CPU, Float32, 2, 3)
	rel := Ones(CPU, Float32, 2, 3)
	rel.Release()
	cases := []struct {
		name string
		got  *Tensor
		kind error
		text string
	}{
		{"tril/1d", Ones(CPU, Float32, 3).Tril(0), ErrShape, "lathe: tril:"},
		{"triu/0d", Scalar(CPU, float32(1)).Triu(0), ErrShape, "lathe: triu:"},
		{"repeat/few", x.Repeat(2), ErrValue, "lathe: repeat:"},
		{"repeat/neg", x.Repeat(2, -1), ErrValue, "count -1"},
		{"tile/neg", x.Tile(-1), ErrValue, "lathe: tile:"},
		{"repeat/huge", x.Repeat(1<<62, 1<<62), ErrShape, "lathe: repeat:"},
		{"interleave/neg", x.RepeatInterleave(-1, 0), ErrValue, "lathe: repeat_interleave:"},
		{"interleave/dim", x.RepeatInterleave(2, 2), ErrIndex, "lathe: repeat_interleave:"},
		{"interleave/0d", Scalar(CPU, float32(1)).RepeatInterleave(2, 0), ErrIndex, "0-d"},
		{"interleave/huge", x.RepeatInterleave(1<<62, 0), ErrShape, "lathe: repeat_interleave:"},
		{"tril/nil", (*Tensor)(nil).Tril(0), ErrValue, ""},
		{"repeat/released", rel.Repeat(1, 1), ErrReleased, ""},
		{"tile/failed", Failed(errors.New("boom")).Tile(2), nil, "boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.got.Err()
			if err == nil {
				t.Fatal("no error")
			}
			if c.kind != nil && !errors.Is(err, c.kind) {
				t.Errorf("error %v is not %v", err, c.kind)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %q does not say %q", err, c.text)
			}
		})
	}
}

// TestEinsumReleaseKeepsOperand: the result of an einsum that changes
// nothing is a view, so releasing it leaves the operand usable.
func TestEinsumReleaseKeepsOperand(t *testing.T) {
	x := Ones(CPU, Float32, 2, 3)
	y := Einsum("ij->ij", x)
	y.Release()
	if _, err := x.Float32s(); err != nil {
		t.Fatal(err)
	}
}

// TestTriangleLeavesNothing checks that Tril and Triu leave no device
// memory to the collector: their masks' aranges were made outside the
// body's intermediates and never released, so that with the collector
// off each call on wgpu kept two small buffers for good.
func TestTriangleLeavesNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := FromSlice(CPU, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 3, 3).To(dev).RequireGrad()
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"tril": func(x *Tensor) *Tensor { return x.Tril(-1) }, "triu": func(x *Tensor) *Tensor { return x.Triu(0) },
		} {
			warmStepsTakeNothing(t, dev, name, x, f, false)
		}
	}
}
