package half

// The slice converters convert n = min(len(dst), len(src)) elements, the
// first n of src into the first n of dst, and return n, as the built-in copy
// does: they cannot fail, and a caller that needs all of src converted
// checks that n == len(src) (or sizes dst so). dst and src are different
// types, so they cannot overlap.

// Float16sToFloat32s widens float16s (bits, as Float16ToFloat32 takes them)
// to float32s and returns how many it converted.
func Float16sToFloat32s(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n] // one bounds check here, none in the loop
	for i, h := range src {
		dst[i] = Float16ToFloat32(h)
	}
	return n
}

// Float32sToFloat16s rounds float32s to float16s (bits, as
// Float16FromFloat32 gives them) and returns how many it converted.
func Float32sToFloat16s(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, f := range src {
		dst[i] = Float16FromFloat32(f)
	}
	return n
}

// BFloat16sToFloat32s widens bfloat16s (bits, as BFloat16ToFloat32 takes
// them) to float32s and returns how many it converted.
func BFloat16sToFloat32s(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, h := range src {
		dst[i] = BFloat16ToFloat32(h)
	}
	return n
}

// Float32sToBFloat16s rounds float32s to bfloat16s (bits, as
// BFloat16FromFloat32 gives them) and returns how many it converted.
func Float32sToBFloat16s(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, f := range src {
		dst[i] = BFloat16FromFloat32(f)
	}
	return n
}

// Float16 and BFloat16 are one element of each format as its 16 bits: the
// Go types of host data of lathe's float16 and bfloat16 tensors (what a
// backend's Upload takes and Read gives, and the cpu backend stores), two
// types so that a slice of either says which format it holds.
type (
	Float16  uint16
	BFloat16 uint16
)

// Float32 widens h exactly.
func (h Float16) Float32() float32 { return Float16ToFloat32(uint16(h)) }

// Float32 widens h exactly.
func (h BFloat16) Float32() float32 { return BFloat16ToFloat32(uint16(h)) }
