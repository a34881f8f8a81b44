// Package half converts between float32 and lathe's two 16-bit floating-point
// storage formats, IEEE 754 binary16 (float16, PyTorch's torch.float16) and
// bfloat16 (torch.bfloat16), one value at a time or a slice at a time.
//
// lathe stores a float16 or bfloat16 tensor in 16 bits and does its
// arithmetic in float32, rounding each op's result back, as PyTorch does on
// the CPU: widening is exact, and narrowing rounds to the nearest
// representable value, ties to the one whose last significand bit is 0
// (round to nearest even). So a lathe result matches PyTorch's bit for bit
// wherever PyTorch also computes in float32 and rounds once.
//
// What the conversions keep:
//   - ±0 and ±Inf map to themselves.
//   - Subnormals are produced and read exactly, never flushed to zero, as on
//     PyTorch's CPU (no flush-to-zero mode): a float32 below float16's
//     smallest normal, 2^-14, rounds to a float16 subnormal, a multiple of
//     2^-24; bfloat16's subnormals are float32's truncated, so they need no
//     special case.
//   - A finite float32 that rounds past the largest finite value becomes
//     ±Inf: for float16 that is every magnitude ≥ 65520 (halfway between
//     65504, the largest float16, and 2^16), for bfloat16 every magnitude ≥
//     0x1.ffp127 (halfway between 0x1.fep127 and 2^128).
//   - A NaN stays a NaN in either direction and comes out quiet (the top
//     significand bit set), with its sign and the top significand bits that
//     fit: float32 → 16 bits keeps the top 10 (float16) or 7 (bfloat16),
//     16 bits → float32 keeps them all. This is what x86's F16C
//     instructions do for float16. numpy keeps a signalling NaN signalling,
//     and PyTorch replaces a NaN's payload (and, for bfloat16, its sign)
//     with a canonical NaN; lathe's tests accept either for NaN only.
//
// The package is a leaf: it imports nothing of lathe's, allocates nothing,
// and cannot fail, so the cpu backend, the device backends' host code and
// nn's safetensors reader can all call it.
package half
