package wgpu_test

import (
	"testing"

	"github.com/lathe-ml/lathe"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// BenchmarkDispatch is the cost of one small op on wgpu:0 (recorded, then
// submitted in batches), without read-back: lathe's own overhead plus
// Dawn's encoding, on whatever adapter opens (lavapipe in CI).
func BenchmarkDispatch(b *testing.B) {
	dev := lathe.WGPU(0)
	x := lathe.FromSlice(dev, []float32{1, 2, 3, 4}, 2, 2).Transpose(0, 1)
	if err := x.Err(); err != nil {
		testenv.SkipDevice(b, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		y := x.Contiguous()
		y.Release()
	}
	if err := lathe.Synchronize(dev); err != nil {
		b.Fatal(err)
	}
}
