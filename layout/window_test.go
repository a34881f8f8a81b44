package layout

import (
	"errors"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

func TestWindowOutSize(t *testing.T) {
	// Sizes from torch.nn.functional.max_pool1d / conv1d on a length-n input.
	for _, c := range []struct {
		n, k, s, p, d int
		ceil          bool
		want          int
	}{
		{10, 3, 1, 0, 1, false, 8},
		{10, 3, 2, 1, 1, false, 5},
		{10, 3, 2, 0, 2, false, 3},
		{6, 3, 2, 0, 1, false, 2},
		{6, 3, 2, 0, 1, true, 3},  // the last partial window starts inside
		{5, 2, 2, 1, 1, true, 3},  // a window starting in the right padding is dropped
		{2, 3, 1, 0, 1, false, 0}, // does not fit
		// Ceil mode: a window longer than the padded input counts when it
		// starts inside (torch: max_pool1d(x of 3, 4, ceil_mode=True) is one
		// window, and kernel 10, stride 10 too); stride 1 leaves it out.
		{3, 4, 4, 0, 1, true, 1},
		{3, 10, 10, 0, 1, true, 1},
		{3, 6, 6, 1, 1, true, 1},
		{3, 2, 2, 0, 3, true, 1},  // dilated: span 4
		{3, 4, 1, 0, 1, true, 0},  // the ceiling of -1/1 is -1
		{3, 4, 4, 0, 1, false, 0}, // floor mode: too small
		{3, 2, 1, 0, 4, false, 0}, // span 5
		{2, 3, 2, 0, 2, true, 0},  // span 5, stride 2: the ceiling of -2/2 is -1
		{3, 6, 6, 3, 1, true, 1},  // the only window starts in the left padding
	} {
		w := Window{Kernel: []int{c.k}, Stride: []int{c.s}, Padding: []int{c.p}, Dilation: []int{c.d}, CeilMode: c.ceil}
		if got := w.OutSize(0, c.n); got != c.want {
			t.Errorf("%+v: OutSize = %d, want %d", c, got, c.want)
		}
	}
}

func TestWindowCheck(t *testing.T) {
	ok := Window{Kernel: []int{3, 3}, Stride: []int{1, 1}, Padding: []int{1, 1}, Dilation: []int{1, 1}}
	if err := ok.Check("x", []int{8, 8}, true); err != nil {
		t.Fatal(err)
	}
	long := Window{Kernel: []int{4, 3}, Stride: []int{4, 3}, Padding: []int{0, 1}, Dilation: []int{1, 1}, CeilMode: true}
	if err := long.Check("x", []int{3, 1}, true); err != nil {
		t.Fatalf("a window longer than the input in ceil mode: %v", err)
	}
	for name, c := range map[string]struct {
		w    Window
		in   []int
		kind error
	}{
		"count":   {Window{Kernel: []int{3}, Stride: []int{1, 1}, Padding: []int{0, 0}, Dilation: []int{1, 1}}, []int{8, 8}, dispatch.ErrValue},
		"stride0": {Window{Kernel: []int{3, 3}, Stride: []int{0, 1}, Padding: []int{0, 0}, Dilation: []int{1, 1}}, []int{8, 8}, dispatch.ErrValue},
		"pad":     {Window{Kernel: []int{3, 3}, Stride: []int{1, 1}, Padding: []int{2, 0}, Dilation: []int{1, 1}}, []int{8, 8}, dispatch.ErrValue},
		"small":   {Window{Kernel: []int{3, 3}, Stride: []int{1, 1}, Padding: []int{0, 0}, Dilation: []int{1, 1}}, []int{2, 8}, dispatch.ErrShape},
		"small/ceil/stride1": {Window{Kernel: []int{4}, Stride: []int{1}, Padding: []int{0}, Dilation: []int{1}, CeilMode: true}, []int{3},
			dispatch.ErrShape},
		// torch.nn.functional.avg_pool1d(torch.zeros(1, 1, 0), 2, padding=1)
		// refuses the empty input, whose padding alone has a window.
		"empty/padded":      {Window{Kernel: []int{2}, Stride: []int{2}, Padding: []int{1}, Dilation: []int{1}}, []int{0}, dispatch.ErrShape},
		"empty/padded/ceil": {Window{Kernel: []int{2, 2}, Stride: []int{1, 1}, Padding: []int{1, 1}, Dilation: []int{1, 1}, CeilMode: true}, []int{3, 0}, dispatch.ErrShape},
	} {
		err := c.w.Check("x", c.in, true)
		var e *dispatch.Error
		if !errors.As(err, &e) || !errors.Is(err, c.kind) {
			t.Errorf("%s: got %v, want %v", name, err, c.kind)
		}
	}
}
