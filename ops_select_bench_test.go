package lathe_test

import (
	"testing"

	"github.com/lathe-ml/lathe"
)

// The selection ops on the cpu and wgpu:0, each result read back so that
// the device's work is timed: Index of 4096 random rows of a [8192, 256]
// float32 tensor (an embedding-style gather), IndexPut adding 4096 rows
// into it (accumulate, with repeats), MaskedSelect of a [1024, 1024]
// tensor by a half-true mask, and Unique of a million int64s in [0, 1000).
// SetBytes is the data moved or scanned.

func benchRows(dev lathe.Device, n, limit int) *lathe.Tensor {
	return lathe.Rand(dev, lathe.Float32, n).MulScalar(float64(limit)).Floor().Cast(lathe.Int64)
}

func benchRead(b *testing.B, t *lathe.Tensor) {
	b.Helper()
	if err := t.Err(); err != nil {
		b.Fatal(err)
	}
	if _, err := t.Narrow(0, 0, 1).Contiguous().Float32s(); err != nil {
		if _, err := t.Narrow(0, 0, 1).Contiguous().Int64s(); err != nil {
			b.Fatal(err)
		}
	}
	t.Release()
}

func BenchmarkIndex(b *testing.B) {
	for _, name := range []string{"cpu", "wgpu:0"} {
		b.Run(name+"/rows4096of[8192,256]", func(b *testing.B) {
			dev := benchDevice(b, name)
			x, idx := lathe.RandN(dev, lathe.Float32, 8192, 256), benchRows(dev, 4096, 8192)
			b.SetBytes(4 * 4096 * 256)
			for b.Loop() {
				benchRead(b, x.Index(idx))
			}
		})
	}
}

func BenchmarkIndexPut(b *testing.B) {
	for _, name := range []string{"cpu", "wgpu:0"} {
		b.Run(name+"/accumulate4096into[8192,256]", func(b *testing.B) {
			dev := benchDevice(b, name)
			x, idx := lathe.RandN(dev, lathe.Float32, 8192, 256), benchRows(dev, 4096, 8192)
			v := lathe.RandN(dev, lathe.Float32, 4096, 256)
			b.SetBytes(4 * (8192 + 4096) * 256)
			for b.Loop() {
				benchRead(b, x.IndexPut([]*lathe.Tensor{idx}, v, true))
			}
		})
	}
}

func BenchmarkMaskedSelect(b *testing.B) {
	for _, name := range []string{"cpu", "wgpu:0"} {
		b.Run(name+"/half[1024,1024]", func(b *testing.B) {
			dev := benchDevice(b, name)
			x := lathe.RandN(dev, lathe.Float32, 1024, 1024)
			mask := x.GtScalar(0)
			b.SetBytes(4 * 1024 * 1024)
			for b.Loop() {
				benchRead(b, x.MaskedSelect(mask))
			}
		})
	}
}

func BenchmarkUnique(b *testing.B) {
	for _, name := range []string{"cpu", "wgpu:0"} {
		b.Run(name+"/1e6of1000", func(b *testing.B) {
			dev := benchDevice(b, name)
			x := benchRows(dev, 1<<20, 1000)
			b.SetBytes(8 << 20)
			for b.Loop() {
				v, inv, _ := x.Unique(true, true, false)
				inv.Release()
				benchRead(b, v)
			}
		})
	}
}
