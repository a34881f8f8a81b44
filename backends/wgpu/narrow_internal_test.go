//go:build cgo

package wgpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestConvertMidWord calls convert with every start and length over a few
// words of packed storage: narrowing writes exactly the elements in range
// (converted) and leaves every other element of a word it touches as it
// was, and widening reads from any element offset.
func TestConvertMidWord(t *testing.T) {
	if _, err := open(); err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	dev := dispatch.Device{Kind: kind}
	const total = 13 // not a whole number of words for any narrow dtype
	for _, c := range []struct {
		dt      dispatch.DType
		compute dispatch.DType
		// sentinel is the host data of total narrow elements that are
		// never a conversion's result; wide is total wide values, whose
		// narrow forms are want(i).
		sentinel any
		wide     any
		want     func(i int) uint32
		got      func(data any, i int) uint32
		widen    func(narrow uint32) uint32 // the cpu's widening, as bits
	}{
		{dispatch.Float16, dispatch.Float32, repeated(total, half.Float16(0x7c05)), f32s(total),
			func(i int) uint32 { return uint32(half.Float16FromFloat32(float32(i) + 0.5)) },
			func(data any, i int) uint32 { return uint32(data.([]half.Float16)[i]) },
			func(h uint32) uint32 { return math.Float32bits(half.Float16ToFloat32(uint16(h))) }},
		{dispatch.BFloat16, dispatch.Float32, repeated(total, half.BFloat16(0x7f85)), f32s(total),
			func(i int) uint32 { return uint32(half.BFloat16FromFloat32(float32(i) + 0.5)) },
			func(data any, i int) uint32 { return uint32(data.([]half.BFloat16)[i]) },
			func(h uint32) uint32 { return math.Float32bits(half.BFloat16ToFloat32(uint16(h))) }},
		{dispatch.Int8, dispatch.Int32, repeated(total, int8(-77)), i32s(total),
			func(i int) uint32 { return uint32(uint8(int8(i*40 - 200))) },
			func(data any, i int) uint32 { return uint32(uint8(data.([]int8)[i])) },
			func(v uint32) uint32 { return uint32(int32(int8(v))) }},
		{dispatch.Uint8, dispatch.Int32, repeated(total, uint8(177)), i32s(total),
			func(i int) uint32 { return uint32(uint8(i*40 - 200)) },
			func(data any, i int) uint32 { return uint32(data.([]uint8)[i]) },
			func(v uint32) uint32 { return v }},
	} {
		sentinel := c.got(c.sentinel, 0)
		src, err := backend{}.Upload(dev, c.wide)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Free()
		for off := range 6 {
			for n := range total - off + 1 {
				t.Run(fmt.Sprintf("%s/narrow/off%d/n%d", c.dt, off, n), func(t *testing.T) {
					dst, err := backend{}.Upload(dev, c.sentinel)
					if err != nil {
						t.Fatal(err)
					}
					defer dst.Free()
					// Elements off .. off+n-1 of dst get wide elements
					// off .. off+n-1.
					if err := convert(dev, dst, c.dt, off, src, c.compute, off, n); err != nil {
						t.Fatal(err)
					}
					data, err := backend{}.Read(dev, dst, c.dt, 0, total)
					if err != nil {
						t.Fatal(err)
					}
					for i := range total {
						want := sentinel
						if i >= off && i < off+n {
							want = c.want(i)
						}
						if got := c.got(data, i); got != want {
							t.Errorf("element %d is %#x, want %#x", i, got, want)
						}
					}
				})
			}
		}
		t.Run(fmt.Sprintf("%s/widen", c.dt), func(t *testing.T) {
			narrow, err := backend{}.Alloc(dev, c.dt, total)
			if err != nil {
				t.Fatal(err)
			}
			defer narrow.Free()
			if err := convert(dev, narrow, c.dt, 0, src, c.compute, 0, total); err != nil {
				t.Fatal(err)
			}
			wide, err := backend{}.Alloc(dev, c.compute, total)
			if err != nil {
				t.Fatal(err)
			}
			defer wide.Free()
			for off := range 6 {
				n := total - off
				if err := convert(dev, wide, c.compute, 0, narrow, c.dt, off, n); err != nil {
					t.Fatal(err)
				}
				data, err := backend{}.Read(dev, wide, c.compute, 0, n)
				if err != nil {
					t.Fatal(err)
				}
				for i := range n {
					if got, want := wideBits(data, i), c.widen(c.want(off+i)); got != want {
						t.Errorf("offset %d: element %d widens to %#x, want %#x", off, i, got, want)
					}
				}
			}
		})
	}
}

// wideBits is element i of float32 or int32 host data, as bits.
func wideBits(data any, i int) uint32 {
	if f, ok := data.([]float32); ok {
		return math.Float32bits(f[i])
	}
	return uint32(data.([]int32)[i])
}

func repeated[T any](n int, v T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// f32s are i + 0.5 for i < n; i32s are i·40 - 200, which wraps in 8 bits.
func f32s(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(i) + 0.5
	}
	return out
}

func i32s(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i*40 - 200)
	}
	return out
}
