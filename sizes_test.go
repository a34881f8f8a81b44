package lathe

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestHostileSizes: sizes near and past what an int counts, and sizes that
// count but whose bytes no device holds, are errors of the right kind on
// every device, never a panic, a hang, a wrong count or Go's fatal out of
// memory; and none of them allocates what it cannot keep, so the test
// stays fast on a small machine. A nil kind means the call succeeds.
func TestHostileSizes(t *testing.T) {
	const huge = 1 << 40
	expanded := func(dev Device, shape ...int) *Tensor {
		ones := make([]int, len(shape))
		for i := range ones {
			ones[i] = 1
		}
		return Ones(dev, Float32, ones...).Expand(shape...)
	}
	cases := []struct {
		name string
		kind error // nil: no error
		run  func(dev Device) *Tensor
	}{
		// Views (defect 3): no view reaches past its storage.
		{"narrow/maxint", ErrIndex, func(dev Device) *Tensor { return Ones(dev, Float32, 4).Narrow(0, 1, math.MaxInt) }},
		{"narrow/minint", ErrIndex, func(dev Device) *Tensor { return Ones(dev, Float32, 4).Narrow(0, math.MinInt, 1) }},
		{"narrow/negative_length", ErrIndex, func(dev Device) *Tensor { return Ones(dev, Float32, 4).Narrow(0, 1, -1) }},
		{"slice/stop_past_end", nil, func(dev Device) *Tensor { return Arange(dev, Float32, 0, 4, 1).Slice(0, 0, 11, 1) }},
		{"slice/maxint_step", nil, func(dev Device) *Tensor { return Ones(dev, Float32, 4, 3).Slice(0, 1, math.MaxInt, math.MaxInt) }},
		{"slice/minint_start", nil, func(dev Device) *Tensor { return Ones(dev, Float32, 4).Slice(0, math.MinInt, math.MaxInt, 1) }},
		{"expand/overflow", ErrShape, func(dev Device) *Tensor { return expanded(dev, 1<<32, 1<<32) }},
		{"expand/negative", ErrShape, func(dev Device) *Tensor { return Ones(dev, Float32, 1).Expand(-2) }},
		{"view/overflow_of_empty", ErrShape, func(dev Device) *Tensor { return Zeros(dev, Float32, 0).View(1<<32, 1<<32) }},
		{"reshape/inferred_overflow", ErrShape, func(dev Device) *Tensor { return Zeros(dev, Float32, 0).Reshape(-1, 1<<32, 1<<32) }},
		{"unsqueeze/expanded", nil, func(dev Device) *Tensor {
			return expanded(dev, 1<<31, 1<<31).Unsqueeze(1).Narrow(0, 1<<30, 2).Narrow(2, 1<<30, 2)
		}},

		// Counts (defect 4): a product of sizes that wraps is ErrShape.
		{"zeros/overflow", ErrShape, func(dev Device) *Tensor { return Zeros(dev, Float32, huge, huge) }},
		{"zeros/wraps_to_zero", ErrShape, func(dev Device) *Tensor { return Zeros(dev, Float32, 1<<32, 1<<32) }},
		{"zeros/empty_of_huge", nil, func(dev Device) *Tensor { return Zeros(dev, Float32, 1<<32, 1<<32, 0) }},
		{"ones/negative", ErrShape, func(dev Device) *Tensor { return Ones(dev, Float32, 2, -3) }},
		{"rand/overflow", ErrShape, func(dev Device) *Tensor { return Rand(dev, Float32, huge, huge) }},
		{"from_slice/overflow", ErrShape, func(dev Device) *Tensor { return FromSlice(dev, []float32{}, 0, -1, 1<<32, 1<<32) }},
		{"sum/expanded_overflow", ErrShape, func(dev Device) *Tensor { return expanded(dev, 1<<32, 1<<32).Sum() }},
		{"mean/expanded_overflow", ErrShape, func(dev Device) *Tensor { return expanded(dev, 1<<32, 1<<32).Mean() }},
		{"eye/overflow", ErrShape, func(dev Device) *Tensor { return Eye(dev, Float32, 1<<33) }},
		{"arange/1e300", ErrShape, func(dev Device) *Tensor { return Arange(dev, Float32, 0, 1e300, 1) }},
		{"arange/inf_span", ErrShape, func(dev Device) *Tensor { return Arange(dev, Float32, -1e308, 1e308, 1) }},
		{"arange/nan_stop", ErrValue, func(dev Device) *Tensor { return Arange(dev, Float32, 0, math.NaN(), 1) }}, // not an element count
		{"arange/inf_step", ErrValue, func(dev Device) *Tensor { return Arange(dev, Float32, 0, 1, math.Inf(1)) }},
		{"matmul/outer_overflow", ErrShape, func(dev Device) *Tensor {
			return expanded(dev, 1<<32, 1).MatMul(expanded(dev, 1, 1<<32))
		}},
		{"add/broadcast_overflow", ErrShape, func(dev Device) *Tensor { return expanded(dev, 1<<32, 1).Add(expanded(dev, 1, 1<<32)) }},
		{"concat/overflow", ErrShape, func(dev Device) *Tensor {
			return Concat([]*Tensor{expanded(dev, 1<<62), expanded(dev, 1<<62)}, 0)
		}},
		{"concat/wraps_to_zero", ErrShape, func(dev Device) *Tensor {
			e := expanded(dev, 1<<62)
			return Concat([]*Tensor{e, e, e, e}, 0)
		}},
		{"pad/maxint", ErrShape, func(dev Device) *Tensor { return Ones(dev, Float32, 2).Pad([]int{math.MaxInt, 1}, 0) }},
		{"pad/wraps_to_zero", ErrShape, func(dev Device) *Tensor { return Ones(dev, Float32, 2).Pad([]int{math.MaxInt, math.MaxInt}, 0) }},
		{"pad/minint_to_empty", nil, func(dev Device) *Tensor { return expanded(dev, 1<<62).Pad([]int{math.MinInt, 1 << 62}, 0) }},
		{"pad/minint_to_one", nil, func(dev Device) *Tensor { return expanded(dev, 1<<62).Pad([]int{math.MinInt, 1<<62 + 1}, 0) }},
		{"pad/minint", ErrShape, func(dev Device) *Tensor { return Ones(dev, Float32, 2).Pad([]int{math.MinInt, 0}, 0) }},
		{"one_hot/maxint_classes", ErrShape, func(dev Device) *Tensor { return FromSlice(dev, []int32{1, 2}).OneHot(math.MaxInt) }},
		{"conv2d/padding_1<<61", ErrShape, func(dev Device) *Tensor {
			return Ones(dev, Float32, 1, 1, 2, 2).Conv2d(Ones(dev, Float32, 1, 1, 1, 1), nil, Padding(1<<61))
		}},
		{"conv2d/padding_1<<62", ErrValue, func(dev Device) *Tensor {
			return Ones(dev, Float32, 1, 1, 2, 2).Conv2d(Ones(dev, Float32, 1, 1, 1, 1), nil, Padding(1<<62))
		}},
		{"conv2d/dilation_maxint", ErrValue, func(dev Device) *Tensor {
			return Ones(dev, Float32, 1, 1, 4, 4).Conv2d(Ones(dev, Float32, 1, 1, 2, 2), nil, Dilation(math.MaxInt))
		}},
		{"conv_transpose2d/stride_1<<40", ErrShape, func(dev Device) *Tensor {
			return Ones(dev, Float32, 1, 1, 2, 2).ConvTranspose2d(Ones(dev, Float32, 1, 1, 1, 1), nil, Stride(huge))
		}},
		{"conv_transpose2d/stride_1<<62", ErrShape, func(dev Device) *Tensor {
			return Ones(dev, Float32, 1, 1, 3, 3).ConvTranspose2d(Ones(dev, Float32, 1, 1, 1, 1), nil, Stride(1<<62))
		}},
		{"max_pool1d/ceil_huge_stride", nil, func(dev Device) *Tensor {
			return Ones(dev, Float32, 1, 1, 5).MaxPool1d(2, Stride(math.MaxInt), CeilMode())
		}},
		{"unfold/padding_1<<61", ErrShape, func(dev Device) *Tensor {
			return Ones(dev, Float32, 1, 1, 2, 2).Unfold([]int{1}, Padding(1<<61))
		}},
		{"pixel_shuffle/1<<32", ErrValue, func(dev Device) *Tensor { return Ones(dev, Float32, 1, 4, 2, 2).PixelShuffle(1 << 32) }},
		{"pixel_unshuffle/1<<32", ErrValue, func(dev Device) *Tensor { return Ones(dev, Float32, 1, 1, 2, 2).PixelUnshuffle(1 << 32) }},

		// Bytes (defect 5): a count that fits, of more bytes than the
		// device holds, is ErrOutOfMemory before anything is made.
		{"zeros/1e6x1e6", ErrOutOfMemory, func(dev Device) *Tensor { return Zeros(dev, Float32, 1e6, 1e6) }},
		{"full/maxint", ErrOutOfMemory, func(dev Device) *Tensor { return Full(dev, Int32, 7, math.MaxInt) }},
		{"rand/1e6x1e6", ErrOutOfMemory, func(dev Device) *Tensor { return Rand(dev, Float32, 1e6, 1e6) }},
		{"randn/maxint", ErrOutOfMemory, func(dev Device) *Tensor { return RandN(dev, Float32, math.MaxInt) }},
		{"eye/3e9", ErrOutOfMemory, func(dev Device) *Tensor { return Eye(dev, Float32, 3e9) }},
		{"arange/5e18", ErrOutOfMemory, func(dev Device) *Tensor { return Arange(dev, Float32, 0, 5e18, 1) }},
		{"contiguous/expanded_1e6x1e6", ErrOutOfMemory, func(dev Device) *Tensor { return expanded(dev, 1e6, 1e6).Contiguous() }},
		{"matmul/outer_1e6", ErrOutOfMemory, func(dev Device) *Tensor { return expanded(dev, 1e6, 1).MatMul(expanded(dev, 1, 1e6)) }},
		{"one_hot/1<<40_classes", ErrOutOfMemory, func(dev Device) *Tensor { return FromSlice(dev, []int32{1, 2}).OneHot(huge) }},
		{"conv_transpose2d/stride_1<<20", ErrOutOfMemory, func(dev Device) *Tensor {
			return Ones(dev, Float32, 1, 1, 2, 2).ConvTranspose2d(Ones(dev, Float32, 1, 1, 1, 1), nil, Stride(1<<20))
		}},
		{"pad/1<<40", ErrOutOfMemory, func(dev Device) *Tensor { return Ones(dev, Float32, 2).Pad([]int{huge, 0}, 0) }},
		{"interpolate/1<<31", ErrOutOfMemory, func(dev Device) *Tensor {
			return Ones(dev, Float32, 1, 1, 2, 2).Interpolate(Size(1<<31, 1<<31))
		}},
		{"adaptive_avg_pool2d/1<<31", ErrOutOfMemory, func(dev Device) *Tensor { return Ones(dev, Float32, 1, 1, 2, 2).AdaptiveAvgPool2d(1 << 31) }},
		{"max_pool1d/expanded_1<<40", ErrOutOfMemory, func(dev Device) *Tensor {
			return expanded(dev, 1, 1, huge).MaxPool1d(2, Padding(1)) // no loop over 2⁴⁰ windows first
		}},
		{"concat/expanded", ErrOutOfMemory, func(dev Device) *Tensor {
			return Concat([]*Tensor{expanded(dev, 1<<61), expanded(dev, 1<<61), expanded(dev, 1<<61)}, 0)
		}},
	}
	for _, dev := range Devices() {
		for _, c := range cases {
			t.Run(dev.String()+"/"+c.name, func(t *testing.T) {
				y := c.run(dev)
				err := y.Err()
				if err == nil {
					_, err = y.Cast(Float32).Float32s() // the result must also read back
				}
				switch {
				case c.kind == nil && err != nil:
					t.Fatalf("got %v, want no error", err)
				case c.kind != nil && !errors.Is(err, c.kind):
					t.Fatalf("got %v (shape %v), want a %v", err, y.Shape(), c.kind)
				case err != nil && (!strings.HasPrefix(err.Error(), "lathe: ") || !strings.Contains(err.Error(), "[called at sizes_test.go:")):
					t.Fatalf("error %q is not a lathe error located at the call", err)
				}
				if msg := fmt.Sprint(err); errors.Is(err, ErrOutOfMemory) && dev == CPU &&
					(!strings.Contains(msg, "ask") || !strings.Contains(msg, " free") && !strings.Contains(msg, " available")) {
					t.Errorf("error %q does not say what was asked and what is free", err)
				}
			})
		}
	}
}

// TestViewsStayInStorage: what the hostile views above give back is the
// data they name, never another tensor's.
func TestViewsStayInStorage(t *testing.T) {
	for _, dev := range Devices() {
		x := Arange(dev, Float32, 0, 4, 1)
		other := Arange(dev, Float32, 100, 200, 1) // released memory a stray view could read
		other.Release()
		for name, v := range map[string]*Tensor{
			"slice[0:11]":       x.Slice(0, 0, 11, 1),
			"slice[1::maxint]":  x.Slice(0, 1, math.MaxInt, math.MaxInt),
			"slice[minint:]":    x.Slice(0, math.MinInt, math.MaxInt, 1),
			"narrow(1,3)":       x.Narrow(0, 1, 3),
			"slice[4:]":         x.Slice(0, 4, math.MaxInt, 1),
			"narrow(4,0)":       x.Narrow(0, 4, 0),
			"unsqueeze+slice[]": x.Unsqueeze(0).Slice(1, 3, math.MaxInt, 5),
		} {
			want := map[string][]float32{
				"slice[0:11]": {0, 1, 2, 3}, "slice[1::maxint]": {1}, "slice[minint:]": {0, 1, 2, 3},
				"narrow(1,3)": {1, 2, 3}, "slice[4:]": {}, "narrow(4,0)": {}, "unsqueeze+slice[]": {3},
			}[name]
			got, err := v.Float32s()
			if err != nil || len(got) != len(want) {
				t.Errorf("%v/%s: %v, %v; want %v", dev, name, got, err, want)
				continue
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%v/%s: %v, want %v", dev, name, got, want)
					break
				}
			}
		}
	}
}

// TestFullFillsOnDevice: Zeros, Ones and Full fill on the device past
// 64 KiB, from one uploaded element, and on the host below, with every
// dtype the device has, and refuse a value the dtype cannot hold as
// before.
func TestFullFillsOnDevice(t *testing.T) {
	repeat := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for _, dev := range Devices() {
		junk := Full(dev, Float32, 9, 300, 100) // memory a reused buffer may hold
		junk.Release()
		for _, c := range []struct {
			x    *Tensor
			want []float64
		}{
			{Zeros(dev, Float32, 300, 100), repeat(0, 30000)},
			{Full(dev, Int32, -3, 100, 3, 100), repeat(-3, 30000)},
			{Full(dev, Bool, 1, 100000), repeat(1, 100000)},
			{Zeros(dev, Float32, 4, 5), make([]float64, 20)},
			{Ones(dev, Int32, 2, 1, 2), []float64{1, 1, 1, 1}},
			{Full(dev, Int32, -7, 3), []float64{-7, -7, -7}},
			{Full(dev, Bool, 2, 2), []float64{1, 1}},
			{Full(dev, Float32, 2.5), []float64{2.5}},
			{Full(dev, Float32, 1, 3, 0), nil},
		} {
			got, err := c.x.Cast(Float32).Float32s()
			if err != nil || len(got) != len(c.want) {
				t.Errorf("%v: %v, %v; want %v", dev, got, err, c.want)
				continue
			}
			for i := range got {
				if float64(got[i]) != c.want[i] {
					t.Errorf("%v: %v, want %v", dev, got, c.want)
					break
				}
			}
		}
		if err := Full(dev, Int32, 1.5, 2).Err(); !errors.Is(err, ErrDType) {
			t.Errorf("%v: Full(Int32, 1.5): %v, want an ErrDType", dev, err)
		}
	}
}

// TestKernelTemporaries: a cpu kernel's own copy of an expanded input (to
// contiguous rows for BLAS, for interpolation, for im2col, for indexing) can be far
// larger than any tensor; the pool's refusal is
// the op's ErrOutOfMemory, where the copy was made outside the pool, and
// Go's fatal out of memory followed.
func TestKernelTemporaries(t *testing.T) {
	const n = 1 << 18 // an expanded n×n float32 is 256 GiB
	expanded := func(shape ...int) *Tensor {
		ones := make([]int, len(shape))
		for i := range ones {
			ones[i] = 1
		}
		return Ones(CPU, Float32, ones...).Expand(shape...)
	}
	for name, y := range map[string]*Tensor{
		"interpolate":  expanded(1, 1, n*n).Interpolate(Size(2)),
		"matmul":       expanded(n, n).MatMul(Ones(CPU, Float32, n, 1)),
		"conv1d":       expanded(1, n, n).Conv1d(Ones(CPU, Float32, 1, n, 1), nil),
		"index_select": expanded(n, n).IndexSelect(0, FromSlice(CPU, []int32{0})),
	} {
		if err := y.Err(); !errors.Is(err, ErrOutOfMemory) {
			t.Errorf("%s: %v, want an ErrOutOfMemory", name, err)
		}
	}
	// The pool and the ops are fine afterwards.
	if v, err := Ones(CPU, Float32, 2, 3).Sum().Item(); err != nil || v != 6 {
		t.Errorf("a sum after the refusals: %v, %v", v, err)
	}
}

// TestHugeWindowSteps: a stride near MaxInt behaves as any stride past the
// input does (the same windows), on every device; the cpu's im2col
// computed ceil(a/s) as (a+s-1)/s, which overflowed and sliced out of
// range.
func TestHugeWindowSteps(t *testing.T) {
	for _, dev := range Devices() {
		x := Arange(dev, Float32, 0, 24, 1).Reshape(1, 1, 24)
		w := FromSlice(CPU, []float32{1, 10}, 1, 1, 2).To(dev)
		for name, f := range map[string]func(s int) *Tensor{
			"conv1d":                  func(s int) *Tensor { return x.Conv1d(w, nil, Stride(s)) },
			"conv1d/padding+dilation": func(s int) *Tensor { return x.Conv1d(w, nil, Stride(s), Padding(3), Dilation(2)) },
			"max_pool1d/padding+ceil": func(s int) *Tensor { return x.MaxPool1d(3, Stride(s), Padding(1), CeilMode()) },
			"avg_pool1d/padding":      func(s int) *Tensor { return x.AvgPool1d(3, Stride(s), Padding(1)) },
			"unfold/padding":          func(s int) *Tensor { return x.Reshape(1, 1, 4, 6).Unfold([]int{2}, Stride(s), Padding(1)) },
		} {
			want, err := f(100).Float32s()
			if err != nil {
				t.Fatalf("%v/%s: %v", dev, name, err)
			}
			got, err := f(math.MaxInt).Float32s()
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v/%s: stride MaxInt gives %v, %v; stride 100 gives %v", dev, name, got, err, want)
			}
		}
	}
}

// TestShapeErrorsSayTheFix: a constructor's bad shape names the fix that
// applies to it. Zeros(-1) said "one size may be -1 to be inferred", which
// only a shape with data to infer from takes, and FromSlice of a shape that
// cannot hold the data (with a -1) gave no fix at all.
func TestShapeErrorsSayTheFix(t *testing.T) {
	six := []float32{1, 2, 3, 4, 5, 6}
	for _, c := range []struct {
		name string
		out  *Tensor
		bad  string // a fix that does not apply, or ""
	}{
		{"zeros/-1", Zeros(CPU, Float32, 2, -1), "inferred"},
		{"randn/-1", RandN(CPU, Float32, -1), "inferred"},
		{"from_slice/-1,0", FromSlice(CPU, six, -1, 0), ""},
		{"from_slice/4,-1", FromSlice(CPU, six, 4, -1), ""},
		{"from_slice/-2", FromSlice(CPU, six, -2, -3), ""},
	} {
		err := c.out.Err()
		var e *Error
		switch {
		case !errors.Is(err, ErrShape) || !errors.As(err, &e):
			t.Errorf("%s: %v, want an ErrShape", c.name, err)
		case e.Fix == "":
			t.Errorf("%s: %v has no fix", c.name, err)
		case c.bad != "" && strings.Contains(e.Fix, c.bad):
			t.Errorf("%s: %v: the fix mentions %q, which this call does not take", c.name, err, c.bad)
		}
	}
}
