package half

import "math"

// bfloat16 is the top half of a float32: 1 sign bit, the same 8 exponent
// bits and the top 7 significand bits, so it needs no rebiasing and its
// subnormals are float32's.
const bf16Quiet = 0x0040 // bfloat16's quiet-NaN bit

// BFloat16FromFloat32 rounds f to the nearest bfloat16, ties to even, and
// returns its bits. Magnitudes ≥ 0x1.ffp127 become ±Inf; subnormals and -0
// are kept; a NaN becomes a quiet NaN with f's sign and the top 7 bits of
// its significand (the quiet bit then forced on).
func BFloat16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&^(1<<31) > f32Inf {
		// Checked first: the rounding add below could carry a NaN whose
		// payload lies in the low 16 bits into the exponent (0x7fffffff
		// would become 0x8000, -0) or leave 0x7f80, Inf.
		return uint16(b>>16) | bf16Quiet
	}
	// Round the 16 dropped bits to nearest even: add just under half an ulp,
	// plus one if the kept part is odd. A carry moves into the next binade,
	// and from the largest finite bfloat16 into Inf, which is right.
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BFloat16ToFloat32 returns the float32 whose value is that of the bfloat16
// with bits h; every bfloat16 is exactly a float32. A NaN comes out quiet,
// with h's sign and significand.
func BFloat16ToFloat32(h uint16) float32 {
	b := uint32(h) << 16
	if b&^(1<<31) > f32Inf {
		b |= f32Quiet
	}
	return math.Float32frombits(b)
}
