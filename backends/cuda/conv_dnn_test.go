package cuda

import (
	"math"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// TestNewDNNCase: a convolution's shapes and window as cuDNN's
// descriptors hold them, a 1-d one with a spatial dim of 1 in front (the
// fake driver's tests run them); and the cases the descriptors cannot hold,
// which take the im2col path.
func TestNewDNNCase(t *testing.T) {
	win := func(k, s, p, d []int) layout.Window {
		return layout.Window{Kernel: k, Stride: s, Padding: p, Dilation: d}
	}
	c, ok := newDNNCase(dnnData, dispatch.Float16, []int{2, 6, 9}, []int{4, 3, 3}, []int{2, 4, 4}, win([]int{3}, []int{2}, []int{1}, []int{2}), 2)
	want := dnnCase{dir: dnnData, dtype: dispatch.Float16, rank: 4, groups: 2,
		x: [5]int{2, 6, 1, 9}, w: [5]int{4, 3, 1, 3}, y: [5]int{2, 4, 1, 4},
		pad: [3]int{0, 1}, stride: [3]int{1, 2}, dilation: [3]int{1, 2}}
	if !ok || c != want {
		t.Errorf("1-d: %+v %v, want %+v", c, ok, want)
	}
	c, ok = newDNNCase(dnnForward, dispatch.Float32, []int{1, 2, 3, 4, 5}, []int{7, 2, 1, 2, 3}, []int{1, 7, 3, 3, 3}, win([]int{1, 2, 3}, []int{1, 1, 1}, []int{0, 0, 0}, []int{1, 1, 1}), 1)
	if !ok || c.rank != 5 || c.x != [5]int{1, 2, 3, 4, 5} || c.w != [5]int{7, 2, 1, 2, 3} || c.stride != [3]int{1, 1, 1} {
		t.Errorf("3-d: %+v %v", c, ok)
	}
	big := math.MaxInt32 + 1
	refused := []struct {
		name    string
		x, w, y []int
		win     layout.Window
	}{
		{"4 spatial dims", []int{1, 1, 2, 2, 2, 2}, []int{1, 1, 1, 1, 1, 1}, []int{1, 1, 2, 2, 2, 2}, win([]int{1, 1, 1, 1}, []int{1, 1, 1, 1}, []int{0, 0, 0, 0}, []int{1, 1, 1, 1})},
		{"a rank that is not the window's", []int{1, 1, 4}, []int{1, 1, 1, 1}, []int{1, 1, 4}, win([]int{1, 1}, []int{1, 1}, []int{0, 0}, []int{1, 1})},
		{"2^31 elements", []int{2, 1, 1 << 30}, []int{1, 1, 1}, []int{2, 1, 1 << 30}, win([]int{1}, []int{1}, []int{0}, []int{1})},
		{"a stride past int32", []int{1, 1, 4}, []int{1, 1, 1}, []int{1, 1, 1}, win([]int{1}, []int{big}, []int{0}, []int{1})},
		{"padding past int32", []int{1, 1, 4}, []int{1, 1, 1}, []int{1, 1, 4}, win([]int{1}, []int{1}, []int{big}, []int{1})},
	}
	for _, r := range refused {
		if c, ok := newDNNCase(dnnForward, dispatch.Float32, r.x, r.w, r.y, r.win, 1); ok {
			t.Errorf("%s: taken as %+v", r.name, c)
		}
	}
}
