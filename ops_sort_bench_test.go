package lathe_test

import (
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// Sort of a [64, 50000] float32 tensor along its rows and TopK(50) of an
// [8, 50000] one (a sampler's vocabulary-sized logits), on the cpu and
// wgpu:0, each read back so that the device's work is timed. SetBytes is
// the input's size, so ns/op and MB/s compare across devices.

func benchDevice(b *testing.B, name string) lathe.Device {
	b.Helper()
	dev, err := lathe.ParseDevice(name)
	if err == nil {
		err = lathe.Zeros(dev, lathe.Float32, 1).Err()
	}
	if err != nil {
		testenv.SkipDevice(b, name, "%s is unavailable: %v", name, err)
	}
	return dev
}

func BenchmarkSort(b *testing.B) {
	for _, name := range []string{"cpu", "wgpu:0"} {
		b.Run(name+"/[64,50000]", func(b *testing.B) {
			dev := benchDevice(b, name)
			x := lathe.RandN(dev, lathe.Float32, 64, 50000)
			b.SetBytes(4 * 64 * 50000)
			for b.Loop() {
				v, i := x.Sort(-1, true)
				if _, err := i.Int64s(); err != nil {
					b.Fatal(err)
				}
				v.Release()
				i.Release()
			}
		})
	}
}

func BenchmarkTopK(b *testing.B) {
	for _, name := range []string{"cpu", "wgpu:0"} {
		b.Run(name+"/k50/[8,50000]", func(b *testing.B) {
			dev := benchDevice(b, name)
			x := lathe.RandN(dev, lathe.Float32, 8, 50000)
			b.SetBytes(4 * 8 * 50000)
			for b.Loop() {
				v, i := x.TopK(50, -1, true)
				if _, err := i.Int64s(); err != nil {
					b.Fatal(err)
				}
				v.Release()
				i.Release()
			}
		})
	}
}
