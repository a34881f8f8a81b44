package wgpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// The narrow dtypes on wgpu:0: packed storage (packed.go), and the one
// conversion kernel (convert.wgsl) that every kernel is wrapped in,
// checked bit for bit against the cpu's (internal/half).

// narrowDevice is wgpu:0, or the test is skipped.
func narrowDevice(t *testing.T) lathe.Device {
	dev := lathe.WGPU(0)
	if !available(dev) {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable")
	}
	return dev
}

// halfFormats are the 16-bit floats with the cpu's conversions.
var halfFormats = []struct {
	dt     lathe.DType
	widen  func(uint16) float32
	narrow func(float32) uint16
}{
	{lathe.Float16, half.Float16ToFloat32, half.Float16FromFloat32},
	{lathe.BFloat16, half.BFloat16ToFloat32, half.BFloat16FromFloat32},
}

// TestNarrowWidenEveryPattern: each of the 65,536 float16 and bfloat16 bit
// patterns survives the trip to wgpu:0 and back bit for bit (storage), and
// widens there to the cpu's float32 bits: subnormals, ±0, ±Inf, NaN
// payloads quieted as the cpu quiets them; and a copy gives each pattern
// back, a signaling NaN quieted.
func TestNarrowWidenEveryPattern(t *testing.T) {
	dev := narrowDevice(t)
	bits := make([]uint16, 1<<16)
	for i := range bits {
		bits[i] = uint16(i)
	}
	for _, f := range halfFormats {
		t.Run(f.dt.String(), func(t *testing.T) {
			x := lathe.FromHalfBits(lathe.CPU, f.dt, bits).To(dev)
			back, err := x.HalfBits()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(back, bits) {
				t.Errorf("the bits read back from wgpu:0 differ from those uploaded")
			}
			got, err := x.Cast(lathe.Float32).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, h := range bits {
				want := math.Float32bits(f.widen(h))
				if g := math.Float32bits(got[i]); g != want {
					if bad++; bad <= 5 {
						t.Errorf("%#04x widens to %#08x, want the cpu's %#08x", h, g, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of 65536 patterns differ", bad)
			}
			// A copy (here of a transposed view) carries each element as
			// its bits (dispatch.ViaBits): every pattern comes back as it
			// was, a signalling NaN too.
			moved, err := x.Reshape(256, 256).MT().Contiguous().MT().Contiguous().Reshape(-1).HalfBits()
			if err != nil {
				t.Fatal(err)
			}
			bad = 0
			for i, h := range bits {
				if moved[i] != h {
					if bad++; bad <= 5 {
						t.Errorf("%#04x copied is %#04x", h, moved[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of 65536 patterns changed in a copy", bad)
			}
		})
	}
}

// roundingPatterns are float32 bit patterns where rounding to a 16-bit
// float goes wrong if any case is off: every sign and exponent with the
// dropped bits at and around the half-way point of both formats (ties to
// even both ways), the edges of float16's range (65504, 65520, its
// subnormals and 2^-25), ±0, ±Inf, NaNs with payloads in the kept and the
// dropped bits, then random patterns.
func roundingPatterns() []uint32 {
	var out []uint32
	lows := []uint32{0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0xffff, 0x18000, 0x17fff}
	for sign := uint32(0); sign < 2; sign++ {
		for exp := uint32(0); exp < 256; exp++ {
			for _, hi := range []uint32{0, 1 << 16, 1<<13 | 1<<16, 0x7f0000, 0x7e0000, 0x3ff << 13} {
				for _, lo := range lows {
					out = append(out, sign<<31|exp<<23|(hi|lo)&0x7fffff)
				}
			}
		}
	}
	for _, f := range []float32{65504, 65519, 65519.996, 65520, 65536, 6.1035156e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 1e-45, 3.4028235e38} {
		b := math.Float32bits(f)
		out = append(out, b, b-1, b+1, b|1<<31)
	}
	out = append(out, 0x7fc00000, 0x7f800001, 0x7fffffff, 0xffc00001, 0x7f802000, 0x7fa00000, 0xff800000, 0x7f800000)
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 18 {
		out = append(out, r.Uint32())
	}
	return out
}

// TestNarrowRoundMatchesCPU: float32 → float16 and bfloat16 on wgpu:0
// rounds each of roundingPatterns to the cpu's bits (ties to even,
// subnormals, overflow to Inf, NaN kept a quiet NaN with its payload's
// top bits).
func TestNarrowRoundMatchesCPU(t *testing.T) {
	dev := narrowDevice(t)
	pats := roundingPatterns()
	vals := make([]float32, len(pats))
	for i, b := range pats {
		vals[i] = math.Float32frombits(b)
	}
	x := lathe.FromSlice(lathe.CPU, vals).To(dev)
	for _, f := range halfFormats {
		t.Run(f.dt.String(), func(t *testing.T) {
			got, err := x.Cast(f.dt).HalfBits()
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, v := range vals {
				if want := f.narrow(v); got[i] != want {
					if bad++; bad <= 5 {
						t.Errorf("%#08x rounds to %#04x, want the cpu's %#04x", pats[i], got[i], want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d patterns differ", bad, len(vals))
			}
		})
	}
	t.Logf("%d float32 patterns", len(vals))
}

// TestNarrowIntegersWrap: int32 → int8 and uint8 keeps the low 8 bits,
// arithmetic wraps as PyTorch's, and both widen back sign- or
// zero-extended, the same on wgpu:0 as on the cpu.
func TestNarrowIntegersWrap(t *testing.T) {
	dev := narrowDevice(t)
	var vals []int32
	for v := int32(-300); v <= 300; v++ {
		vals = append(vals, v)
	}
	vals = append(vals, math.MaxInt32, math.MinInt32, 1<<16+5, -1<<16-5)
	floats := []float32{300.7, -1, -128.9, 255.5, 1e10, float32(math.NaN()), float32(math.Inf(-1)), -0.5}
	for _, dt := range []lathe.DType{lathe.Int8, lathe.Uint8} {
		t.Run(dt.String(), func(t *testing.T) {
			for _, c := range []struct {
				name string
				run  func(dev lathe.Device) *lathe.Tensor
			}{
				{"cast_i32", func(dev lathe.Device) *lathe.Tensor { return lathe.FromSlice(dev, vals).Cast(dt) }},
				{"cast_f32", func(dev lathe.Device) *lathe.Tensor { return lathe.FromSlice(dev, floats).Cast(dt) }},
				{"add", func(dev lathe.Device) *lathe.Tensor {
					x := lathe.FromSlice(dev, vals).Cast(dt)
					return x.Add(x.Flip(0))
				}},
				{"mul", func(dev lathe.Device) *lathe.Tensor {
					x := lathe.FromSlice(dev, vals).Cast(dt)
					return x.Mul(x)
				}},
				{"widen", func(dev lathe.Device) *lathe.Tensor { return lathe.FromSlice(dev, vals).Cast(dt).Cast(lathe.Int32) }},
			} {
				t.Run(c.name, func(t *testing.T) {
					want, err := c.run(lathe.CPU).Cast(lathe.Int32).Int32s()
					if err != nil {
						t.Fatal(err)
					}
					got, err := c.run(dev).Cast(lathe.Int32).Int32s()
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Errorf("got %v\nwant the cpu's %v", got, want)
					}
				})
			}
		})
	}
}

// TestNarrowViewsMidWord: views whose elements start, end and step
// mid-word (odd offsets and lengths, transposes, steps), read back and
// through kernels, agree with the cpu's bit for bit.
func TestNarrowViewsMidWord(t *testing.T) {
	dev := narrowDevice(t)
	for _, dt := range []lathe.DType{lathe.Float16, lathe.BFloat16, lathe.Int8, lathe.Uint8} {
		for _, n := range []int{1, 2, 3, 5, 7, 9, 13} {
			vals := make([]float32, n*3)
			for i := range vals {
				vals[i] = float32(i%11) - 5.25
			}
			base := lathe.FromSlice(lathe.CPU, vals, 3, n).Cast(dt)
			views := []struct {
				name string
				view func(*lathe.Tensor) *lathe.Tensor
			}{
				{"whole", func(x *lathe.Tensor) *lathe.Tensor { return x }},
				{"row1", func(x *lathe.Tensor) *lathe.Tensor { return x.Narrow(0, 1, 1) }},
				{"cols1..", func(x *lathe.Tensor) *lathe.Tensor { return x.Narrow(1, 1, n-1) }},
				{"step2", func(x *lathe.Tensor) *lathe.Tensor { return x.Slice(1, 0, n, 2) }},
				{"transposed", func(x *lathe.Tensor) *lathe.Tensor { return x.MT() }},
			}
			for _, v := range views {
				t.Run(fmt.Sprintf("%s/[3,%d]/%s", dt, n, v.name), func(t *testing.T) {
					w := v.view(base.To(dev))
					c := v.view(base)
					for _, op := range []struct {
						name string
						run  func(*lathe.Tensor) *lathe.Tensor
					}{
						{"read", func(x *lathe.Tensor) *lathe.Tensor { return x }},
						{"contiguous", (*lathe.Tensor).Contiguous},
						{"neg", (*lathe.Tensor).Neg},
						{"add_self", func(x *lathe.Tensor) *lathe.Tensor { return x.Add(x) }},
						{"sum", func(x *lathe.Tensor) *lathe.Tensor { return x.Sum() }},
					} {
						got, err := op.run(w).Cast(lathe.Float32).Float32s()
						if err != nil {
							t.Fatalf("%s: %v", op.name, err)
						}
						want, err := op.run(c).Cast(lathe.Float32).Float32s()
						if err != nil {
							t.Fatalf("%s on the cpu: %v", op.name, err)
						}
						if !slices.Equal(got, want) {
							t.Errorf("%s: %v, want the cpu's %v", op.name, got, want)
						}
					}
				})
			}
		}
	}
}

// TestNarrowConcurrent runs narrow-dtype ops from many goroutines at once
// on wgpu:0 (conversions, temporaries and packed writes interleaved in one
// queue) and wants each goroutine's own cpu result.
func TestNarrowConcurrent(t *testing.T) {
	dev := narrowDevice(t)
	dts := []lathe.DType{lathe.Float16, lathe.BFloat16, lathe.Int8, lathe.Uint8}
	run := func(d lathe.Device, g int) ([]float32, error) {
		dt := dts[g%len(dts)]
		vals := make([]float32, 37+g)
		for i := range vals {
			vals[i] = float32((i*7+g)%23) - 11.5
		}
		x := lathe.FromSlice(d, vals).Cast(dt)
		y := x.Narrow(0, 1, len(vals)-2).Mul(x.Narrow(0, 0, len(vals)-2)).Add(x.Narrow(0, 2, len(vals)-2))
		return y.Cast(lathe.Float32).Float32s()
	}
	const goroutines = 16
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			want, err := run(lathe.CPU, g)
			if err == nil {
				var got []float32
				if got, err = run(dev, g); err == nil && !slices.Equal(got, want) {
					err = fmt.Errorf("goroutine %d (%s): %v, want the cpu's %v", g, dts[g%len(dts)], got, want)
				}
			}
			errs <- err
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
