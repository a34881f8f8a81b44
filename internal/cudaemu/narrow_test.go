package cudaemu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/internal/half"
)

// narrow.cu's conversions, the cuda backend's dispatch.Converter, against
// internal/half's (the cpu's): widening every 16-bit pattern, rounding
// float32 patterns chosen around each rounding point, and the 8-bit
// integers' wrapping.

func TestNarrowConversions(t *testing.T) {
	h := newHost(t)

	widen := []struct {
		name string
		fn   string
		ref  func(uint16) float32
	}{
		{"f16", "convert_f16_f32", half.Float16ToFloat32},
		{"bf16", "convert_bf16_f32", half.BFloat16ToFloat32},
	}
	for _, c := range widen {
		t.Run(c.name+"/widen-every-pattern", func(t *testing.T) {
			bits := make([]uint16, 1<<16)
			for i := range bits {
				bits[i] = uint16(i)
			}
			out := zeros[uint32](h, len(bits))
			h.launch(c.fn, 8, 64, out, put(h, bits...), int64(len(bits)))
			bad := 0
			for i, g := range get[uint32](out, len(bits)) {
				if want := math.Float32bits(c.ref(bits[i])); g != want && bad < 5 {
					t.Errorf("%s(%#04x) = %#08x, want %#08x", c.fn, bits[i], g, want)
					bad++
				}
			}
		})
	}

	patterns := roundingPatterns()
	round := []struct {
		name string
		fn   string
		ref  func(float32) uint16
	}{
		{"f16", "convert_f32_f16", half.Float16FromFloat32},
		{"bf16", "convert_f32_bf16", half.BFloat16FromFloat32},
	}
	for _, c := range round {
		t.Run(c.name+"/round-to-nearest-even", func(t *testing.T) {
			out := zeros[uint16](h, len(patterns))
			h.launch(c.fn, 8, 64, out, put(h, patterns...), int64(len(patterns)))
			bad := 0
			for i, g := range get[uint16](out, len(patterns)) {
				if want := c.ref(math.Float32frombits(patterns[i])); g != want && bad < 5 {
					t.Errorf("%s(%#08x) = %#04x, want %#04x", c.fn, patterns[i], g, want)
					bad++
				}
			}
			t.Logf("%d float32 patterns", len(patterns))
		})
	}

	t.Run("i8,u8/widen-every-byte", func(t *testing.T) {
		b := make([]uint8, 256)
		for i := range b {
			b[i] = uint8(i)
		}
		p := put(h, b...)
		i8, u8 := zeros[int32](h, 256), zeros[int32](h, 256)
		h.launch("convert_i8_i32", 1, 32, i8, p, int64(256))
		h.launch("convert_u8_i32", 1, 32, u8, p, int64(256))
		gi, gu := get[int32](i8, 256), get[int32](u8, 256)
		for i := range 256 {
			if gi[i] != int32(int8(i)) || gu[i] != int32(i) {
				t.Fatalf("byte %#02x widens to %d (int8), %d (uint8)", i, gi[i], gu[i])
			}
		}
	})

	t.Run("i8,u8/keep-the-low-8-bits", func(t *testing.T) {
		x := []int32{0, 1, 127, 128, 255, 256, 300, -1, -128, -129, -256, math.MaxInt32, math.MinInt32, 0x12345678}
		p := put(h, x...)
		i8, u8 := zeros[int8](h, len(x)), zeros[uint8](h, len(x))
		h.launch("convert_i32_i8", 1, 32, i8, p, int64(len(x)))
		h.launch("convert_i32_u8", 1, 32, u8, p, int64(len(x)))
		gi, gu := get[int8](i8, len(x)), get[uint8](u8, len(x))
		for i, v := range x {
			if gi[i] != int8(v) || gu[i] != uint8(v) {
				t.Errorf("%d narrows to %d (int8), %d (uint8), want %d, %d", v, gi[i], gu[i], int8(v), uint8(v))
			}
		}
	})

	t.Run("empty-and-grid-smaller-than-n", func(t *testing.T) {
		out := zeros[uint16](h, 3)
		h.launch("convert_f32_f16", 1, 32, out, put(h, math.Float32bits(1)), int64(0))
		h.launch("convert_f32_f16", 1, 1, out, put(h, math.Float32bits(1), math.Float32bits(-2), math.Float32bits(65504)), int64(3))
		if got := get[uint16](out, 3); got[0] != 0x3c00 || got[1] != 0xc000 || got[2] != 0x7bff {
			t.Errorf("1, -2, 65504 as float16 = %#04x, want [0x3c00 0xc000 0x7bff]", got)
		}
	})
}

// roundingPatterns are float32 bit patterns that reach every rounding rule
// of both 16-bit floats: every top 16 bits (each sign, exponent and top 7
// significand bits: float16's normals, subnormals, overflow, Inf, NaN
// payloads, ±0) with low 16 bits at the ties and their neighbours for
// float16's cut at bit 13, bfloat16's at bit 16 and the float16
// subnormals' at bits 13 to 15, and random ones.
func roundingPatterns() []uint32 {
	lows := []uint32{0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001, 0x3000, 0x4000, 0x5fff, 0x6000,
		0x7fff, 0x8000, 0x8001, 0xa000, 0xc000, 0xe000, 0xefff, 0xf000, 0xffff}
	rng := rand.New(rand.NewPCG(3, 4))
	var out []uint32
	for hi := range uint32(1 << 16) {
		for _, lo := range lows {
			out = append(out, hi<<16|lo)
		}
		out = append(out, hi<<16|rng.Uint32()&0xffff)
	}
	return out
}
