//go:build cgo

package wgpu_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestBroadcastPast32Bits: a broadcast view shows more elements than its
// storage holds, and wgpu:0's kernels count elements in 32 bits. A view of
// more than 2^31-1 elements is an ErrUnsupported naming the op and the
// argument, where its count went in cut to 32 bits: the sum of 2^32+8
// expanded ones was 8, the mean 8/(2^32+8), a matmul over an expanded inner
// dim of 2^32+8 summed 8 products, and the sum of an expanded 65537×65537
// matrix 131073. The ops that move elements walk their output and still
// take such a view: negative padding that cuts it down, index_select and
// gather of a few of its rows.
func TestBroadcastPast32Bits(t *testing.T) {
	dev := wgpuOrSkip(t)
	const big = 1<<32 + 8
	ones := func(shape ...int) *lathe.Tensor {
		one := make([]int, len(shape))
		for i := range one {
			one[i] = 1
		}
		return lathe.Ones(dev, lathe.Float32, one...).Expand(shape...)
	}
	for _, c := range []struct {
		op, arg string
		run     func() *lathe.Tensor
	}{
		{"sum", "x", func() *lathe.Tensor { return ones(big).Sum() }},
		{"sum", "x", func() *lathe.Tensor { return ones(1<<16+1, 1<<16+1).Sum() }},
		{"sum", "x", func() *lathe.Tensor { return ones(3, big).Sum(1) }},
		{"sum", "x", func() *lathe.Tensor { return lathe.Ones(dev, lathe.Int64, 1).Expand(1<<31 + 8).Sum() }},
		{"mean", "x", func() *lathe.Tensor { return ones(big).Mean() }},
		{"argmax", "x", func() *lathe.Tensor { return ones(1<<28+1, 16).ArgMax() }},
		{"matmul", "lhs", func() *lathe.Tensor { return ones(1, big).MatMul(ones(big, 1)) }},
	} {
		r := c.run()
		err := r.Err()
		if err == nil {
			got, _ := r.To(lathe.CPU).Cast(lathe.Float64).Float64s()
			t.Errorf("%s gave %v (shape %v), want an error", c.op, got, r.Shape())
			continue
		}
		if !errors.Is(err, lathe.ErrUnsupported) || !strings.Contains(err.Error(), "lathe: "+c.op+": argument \""+c.arg+"\"") ||
			!strings.Contains(err.Error(), "32-bit") {
			t.Errorf("%s: got %v, want an ErrUnsupported naming the op, argument %q and the 32-bit count", c.op, err, c.arg)
		}
	}
	got, err := ones(big).Pad([]int{-(1 << 32), 0}, 0).Float32s()
	if err != nil || len(got) != 8 || got[0] != 1 || got[7] != 1 {
		t.Errorf("pad of an expanded view to its last 8 elements: got %v, %v, want 8 ones", got, err)
	}
	rows := lathe.FromSlice(dev, []float32{1, 2, 3}, 1, 3).Expand(big, 3)
	idx := lathe.FromSlice(dev, []int64{big - 1, 0})
	got, err = rows.IndexSelect(0, idx).Float32s()
	if err != nil || len(got) != 6 || got[0] != 1 || got[5] != 3 {
		t.Errorf("index_select of rows %v of an expanded [%d, 3]: got %v, %v, want [1 2 3 1 2 3]", idx, big, got, err)
	}
	got, err = rows.Gather(1, lathe.FromSlice(dev, []int64{2, 0}, 1, 2)).Float32s()
	if err != nil || len(got) != 2 || got[0] != 3 || got[1] != 1 {
		t.Errorf("gather from an expanded [%d, 3]: got %v, %v, want [3 1]", big, got, err)
	}
}
