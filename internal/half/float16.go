package half

import (
	"math"
	"math/bits"
)

// float16 (IEEE 754 binary16): 1 sign bit, 5 exponent bits (bias 15) and 10
// significand bits. float32 has 8 exponent bits (bias 127) and 23 significand
// bits, so a normal float16 is a float32 with its exponent rebiased by
// 127-15 = 112 and its significand's low 13 bits zero.
const (
	f16ExpShift = 13        // float32 significand bits a float16 lacks
	f16Rebias   = 112 << 23 // (127 - 15) in float32's exponent field
	f16Quiet    = 0x0200    // float16's quiet-NaN bit
	f32Quiet    = 0x00400000
	f32Inf      = 0x7f800000
	f16Inf      = 0x7c00
)

// Float16FromFloat32 rounds f to the nearest float16, ties to even, and
// returns its bits. Magnitudes ≥ 65520 become ±Inf; magnitudes below 2^-14
// become subnormal float16s (≤ 2^-25 rounds to ±0); -0 stays -0; a NaN
// becomes a quiet NaN with f's sign and the top 10 bits of its significand
// (the quiet bit then forced on).
func Float16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	b &^= 1 << 31
	switch {
	case b > f32Inf: // NaN
		return sign | f16Inf | f16Quiet | uint16(b>>f16ExpShift)&0x03ff
	case b >= 0x477ff000: // ≥ 65520, the midpoint of 65504 and 2^16, or Inf
		return sign | f16Inf
	case b >= 0x38800000: // ≥ 2^-14: a normal float16
		b -= f16Rebias
		// Round the 13 dropped bits to nearest even: adding just under half
		// an ulp, plus one more if the kept part is odd, carries into the
		// kept part exactly when it should. A carry out of the significand
		// moves into the next binade, which is right; b < 0x477ff000 keeps
		// the result at or below 65504 (0x7bff).
		b += 0x0fff + (b>>f16ExpShift)&1
		return sign | uint16(b>>f16ExpShift)
	case b <= 0x33000000: // ≤ 2^-25, half the smallest subnormal: ties to 0
		return sign
	}
	// A float16 subnormal: m·2^-24 for m < 1024. f is s·2^(e-150) with its
	// 24-bit significand s and biased exponent e in [102, 112], so
	// m = s·2^(e-126), a right shift by 126-e in [14, 24], rounded to
	// nearest even. m may round up to 1024, which is the bits of 2^-14, the
	// smallest normal.
	e := b >> 23
	s := b&0x007fffff | 0x00800000
	shift := 126 - e
	m := s >> shift
	rest := s & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rest > half || rest == half && m&1 == 1 {
		m++
	}
	return sign | uint16(m)
}

// Float16ToFloat32 returns the float32 whose value is that of the float16
// with bits h; every float16 is exactly a float32. A NaN comes out quiet,
// with h's sign and significand.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	sig := uint32(h & 0x03ff)
	switch {
	case exp == 0x1f && sig == 0:
		return math.Float32frombits(sign | f32Inf)
	case exp == 0x1f:
		return math.Float32frombits(sign | f32Inf | f32Quiet | sig<<f16ExpShift)
	case exp == 0 && sig == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		// A subnormal, sig·2^-24: normalise it. Its leading 1 at bit p
		// (0..9) makes the value 2^(p-24)·1.rest, float32 exponent
		// p - 24 + 127, and the bits below p the significand's top bits.
		p := uint32(bits.Len32(sig)) - 1
		return math.Float32frombits(sign | (p+103)<<23 | (sig<<(23-p))&0x007fffff)
	}
	return math.Float32frombits(sign | ((exp<<10|sig)<<f16ExpShift + f16Rebias))
}
