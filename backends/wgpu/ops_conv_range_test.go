package wgpu_test

import (
	"errors"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// TestConvWindowPastI32: a transposed conv with padding and dilation 2^40
// (output size 1: (1-1)·1 - 2·2^40 + 2^40·2 + 1) is refused as
// ErrUnsupported, where conv.wgsl took the attributes as u32 words (0)
// and gave -12 for the cpu's -8 (found by FuzzWindow); the cpu gives
// the answer.
func TestConvWindowPastI32(t *testing.T) {
	openOrSkip(t)
	const big = 1 << 40
	a := ops.ConvParams{Window: layout.Window{Stride: []int{1}, Padding: []int{big}, Dilation: []int{big}}, Groups: 1, InputSize: []int{1}}
	gc, gg := same(t, []int{1, 1, 1}, []float32{2})
	wc, wg := same(t, []int{1, 1, 3}, []float32{1, -4, 3})
	y, err := dispatch.Call(ops.ConvInputBackward, a, gc, wc)
	if err != nil {
		t.Fatalf("cpu: %v", err)
	}
	if v := hostValues[float32](t, y); v[0] != -8 {
		t.Fatalf("cpu: %v, want [-8]", v)
	}
	if _, err := dispatch.Call(ops.ConvInputBackward, a, gg, wg); !errors.Is(err, dispatch.ErrUnsupported) {
		t.Fatalf("wgpu:0: %v, want ErrUnsupported", err)
	}
}

// TestPoolWindowPastI32: max pooling in ceil mode with kernel and stride
// MaxInt over 3 elements is one window of all three (index 1 here) on the
// cpu and ErrUnsupported on wgpu:0, whose pool.wgsl took them as u32
// words and read outside the input (found by FuzzWindow).
func TestPoolWindowPastI32(t *testing.T) {
	openOrSkip(t)
	const big = 1<<63 - 1
	w := layout.Window{Kernel: []int{big}, Stride: []int{big}, Padding: []int{0}, Dilation: []int{1}, CeilMode: true}
	xc, xg := same(t, []int{1, 1, 3}, []float32{1, 2, -3})
	idx, err := dispatch.Call(ops.MaxPoolIndices, w, xc)
	if err != nil {
		t.Fatalf("cpu: %v", err)
	}
	if v := hostValues[int64](t, idx); len(v) != 1 || v[0] != 1 {
		t.Fatalf("cpu: %v, want [1]", v)
	}
	if _, err := dispatch.Call(ops.MaxPoolIndices, w, xg); !errors.Is(err, dispatch.ErrUnsupported) {
		t.Fatalf("wgpu:0: %v, want ErrUnsupported", err)
	}
}
