//go:build cgo

package wgpu_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// The 16-bit floats through the elementwise kernels, which read and write
// them in their words (ops_elementwise.go), at the public API: the ops
// whose float32 result is exact or correctly rounded on both devices, so
// that rounding it once gives one answer, must give the cpu's bits, with
// the scalar forms, views at odd element offsets, transposes and
// broadcasts. elementwise_packed_internal_test.go compares every op of the
// family with dispatch.ViaCompute's bits on wgpu:0 itself.

// halfSpecials are bits of the 16-bit float f whose results go wrong where
// a case of the conversions does: ±0, subnormals, the least normal, the
// largest finite (whose double overflows, and 65504 + 16, float16's tie
// at 65520), ±Inf, NaNs with payloads, then values around 1 and a grid.
func halfSpecials(dt lathe.DType, narrow func(float32) uint16) []uint16 {
	s := []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x8003}
	for _, v := range []float32{
		6.1035156e-05, -6.1035156e-05, 65504, -65504, 16, 32768, 3.3895314e38, -3.3895314e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), 1, -1, 1.0009766, 0.33325195, 0.5, -2.5, 3.5, 1e-3,
	} {
		s = append(s, narrow(v))
	}
	if dt == lathe.Float16 {
		s = append(s, 0x03ff, 0x83ff, 0x7e00, 0xfe01, 0x7c01, 0x7bfe)
	} else {
		s = append(s, 0x007f, 0x807f, 0x7fc0, 0xffc1, 0x7f81, 0x7f7e)
	}
	for v := float32(-6); v <= 6; v += 0.35 {
		s = append(s, narrow(v))
	}
	return s
}

// TestElementwiseHalfMatchesCPU: the exact elementwise ops in float16 and
// bfloat16 give the cpu's bits on wgpu:0, in one call each way over the
// same host bits (a NaN may carry another payload: which of two NaNs an
// op keeps is each device's own).
func TestElementwiseHalfMatchesCPU(t *testing.T) {
	dev := narrowDevice(t)
	type fn = func(x, y *lathe.Tensor) *lathe.Tensor
	cases := []struct {
		name string
		f    fn
	}{
		// Every pair of specials: x as a row [1,n] at element 1 of its
		// buffer, y as a column [n,1].
		{"add", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Add(col(y)) }},
		{"sub", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Sub(col(y)) }},
		{"mul", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Mul(col(y)) }},
		{"div", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Div(col(y)) }},
		{"maximum", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Maximum(col(y)) }},
		{"minimum", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Minimum(col(y)) }},
		{"lt", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Lt(col(y)) }},
		{"eq", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Eq(col(y)) }},
		{"ne", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Ne(col(y)) }},
		{"ge", func(x, y *lathe.Tensor) *lathe.Tensor { return row(x).Ge(col(y)) }},
		{"where", func(x, y *lathe.Tensor) *lathe.Tensor { return lathe.Where(row(x).Gt(col(y)), row(x), col(y)) }},
		// Views: odd offsets and lengths, a transpose, a step.
		{"neg/odd_offset", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.Narrow(0, 1, x.Shape()[0]-2).Neg() }},
		{"abs/step", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.Slice(0, 1, x.Shape()[0], 2).Abs() }},
		{"relu/transposed", func(x, _ *lathe.Tensor) *lathe.Tensor { return square(x).MT().ReLU() }},
		{"floor", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.Floor() }},
		{"ceil", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.Ceil() }},
		{"round", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.Round() }},
		{"square", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.Square() }},
		{"clamp", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.Clamp(-2.3, 1e30) }},
		{"add/transposed", func(x, y *lathe.Tensor) *lathe.Tensor { return square(x).MT().Add(square(y)) }},
		{"mul/one", func(x, y *lathe.Tensor) *lathe.Tensor { return x.Narrow(0, 3, 1).Mul(y.Narrow(0, 0, 1)) }},
		{"add/empty", func(x, y *lathe.Tensor) *lathe.Tensor { return x.Narrow(0, 1, 0).Add(y.Narrow(0, 2, 0)) }},
		// The scalar forms: a 0-d argument of x's dtype, the scalar
		// rounded to it first.
		{"add_scalar", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.AddScalar(0.1) }},
		{"mul_scalar", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.MulScalar(3) }},
		{"div_scalar", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.DivScalar(-7) }},
		{"maximum_scalar", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.MaximumScalar(-1.5) }},
		{"lt_scalar", func(x, _ *lathe.Tensor) *lathe.Tensor { return x.LtScalar(0.5) }},
	}
	for _, f := range halfFormats {
		bits := halfSpecials(f.dt, f.narrow)
		// An odd length (odd and even results below), 1 element past
		// the row's start.
		if len(bits)%2 == 0 {
			bits = bits[:len(bits)-1]
		}
		ys := slices.Clone(bits)
		slices.Reverse(ys)
		onCPU := func(b []uint16) *lathe.Tensor { return lathe.FromHalfBits(lathe.CPU, f.dt, b) }
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", c.name, f.dt), func(t *testing.T) {
				want := c.f(onCPU(bits), onCPU(ys))
				got := c.f(onCPU(bits).To(dev), onCPU(ys).To(dev))
				if !slices.Equal(got.Shape(), want.Shape()) {
					t.Fatalf("shape %v, want %v", got.Shape(), want.Shape())
				}
				if want.DType() == lathe.Bool {
					g, err := got.Bools()
					if err != nil {
						t.Fatal(err)
					}
					w, err := want.Bools()
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(g, w) {
						t.Errorf("got %v\nwant the cpu's %v", g, w)
					}
					return
				}
				g, err := got.HalfBits()
				if err != nil {
					t.Fatal(err)
				}
				w, err := want.HalfBits()
				if err != nil {
					t.Fatal(err)
				}
				bad := 0
				for i := range w {
					gv, wv := f.widen(g[i]), f.widen(w[i])
					if g[i] != w[i] && !(gv != gv && wv != wv) {
						if bad++; bad <= 5 {
							t.Errorf("element %d is %#04x (%g), want the cpu's %#04x (%g)", i, g[i], gv, w[i], wv)
						}
					}
				}
				if bad > 0 {
					t.Errorf("%d of %d elements differ", bad, len(w))
				}
			})
		}
	}
}

// row is x[1:] as a row [1, n-1], starting mid-word; col is x[:n-1] as a
// column. square is x's first k² elements as [k, k] for the largest k.
func row(x *lathe.Tensor) *lathe.Tensor {
	n := x.Shape()[0] - 1
	return x.Narrow(0, 1, n).Reshape(1, n)
}

func col(x *lathe.Tensor) *lathe.Tensor {
	n := x.Shape()[0] - 1
	return x.Narrow(0, 0, n).Reshape(n, 1)
}

func square(x *lathe.Tensor) *lathe.Tensor {
	k := int(math.Sqrt(float64(x.Shape()[0])))
	return x.Narrow(0, 0, k*k).Reshape(k, k)
}

// BenchmarkAddHalfSynced is an add of two 1M-element tensors on wgpu:0,
// waited for each time, in the 16-bit floats and in float32 beside them:
// the device's execution is most of it, so a result is what the shader's
// reads, conversions and writes cost. GB/s counts the bytes of the two
// arguments and the result.
func BenchmarkAddHalfSynced(b *testing.B) {
	const n = 1 << 20
	dev := lathe.WGPU(0)
	for _, dt := range []lathe.DType{lathe.Float16, lathe.BFloat16, lathe.Float32} {
		b.Run(dt.String(), func(b *testing.B) {
			x := lathe.RandN(dev, lathe.Float32, n).Cast(dt)
			y := lathe.RandN(dev, lathe.Float32, n).Cast(dt)
			if err := lathe.Synchronize(dev); err != nil || x.Err() != nil {
				testenv.SkipDevice(b, "wgpu:0", "wgpu:0 is unavailable: %v", err)
			}
			for b.Loop() {
				z := x.Add(y)
				if err := lathe.Synchronize(dev); err != nil {
					b.Fatal(err)
				}
				z.Release()
			}
			b.ReportMetric(float64(3*n*dt.Size())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
