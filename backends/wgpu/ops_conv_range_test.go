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
