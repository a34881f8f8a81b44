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
