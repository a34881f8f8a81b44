package wgpu

import "testing"

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct{ n, want uint64 }{
		{0, 256}, {1, 256}, {256, 256}, {257, 512}, {64 << 10, 64 << 10},
		{64<<10 + 1, 64<<10 + 8<<10}, {100000, 106496}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 128<<10},
	} {
		got := sizeClass(tc.n)
		if got != tc.want {
			t.Errorf("sizeClass(%d) = %d, want %d", tc.n, got, tc.want)
		}
		if got < tc.n || (tc.n > 64<<10 && float64(got-tc.n) > float64(tc.n)/8) {
			t.Errorf("sizeClass(%d) = %d wastes more than an eighth", tc.n, got)
		}
	}
}
