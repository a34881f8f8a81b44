package dispatch

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// FormatShape writes a shape as PyTorch does: [2, 3].
func FormatShape(shape []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(s))
	}
	b.WriteByte(']')
	return b.String()
}

// CheckedNumel is the number of elements of shape, with ok false where a
// size is negative or the sizes multiply past what an int holds. A shape
// with a size of 0 has no elements, whatever its other sizes, as in
// PyTorch (an empty [2³², 2³², 0] tensor is a tensor).
func CheckedNumel(shape []int) (n int, ok bool) {
	n, empty, over := 1, false, false
	for _, s := range shape {
		switch {
		case s < 0:
			return 0, false
		case s == 0:
			empty = true
		default:
			hi, lo := bits.Mul64(uint64(n), uint64(s))
			over = over || hi != 0 || lo > math.MaxInt
			n = int(lo)
		}
	}
	switch {
	case empty:
		return 0, true
	case over:
		return 0, false
	}
	return n, true
}

// ShapeError is the ErrShape error of a shape that CheckedNumel refuses:
// a negative size, or more elements than an int holds. arg names the
// argument or attribute that gave the shape, "" for an op's result.
func ShapeError(arg string, shape []int) *Error {
	what := "has shape "
	if arg == "" {
		what = "would give a result of shape "
	}
	for _, s := range shape {
		if s < 0 {
			return &Error{Kind: ErrShape, Arg: arg, Found: FormatShape(shape),
				Detail: what + FormatShape(shape) + ", with a negative size", Fix: "sizes are at least 0"}
		}
	}
	product := 1.0
	for _, s := range shape {
		product *= float64(s)
	}
	return &Error{Kind: ErrShape, Arg: arg, Found: FormatShape(shape),
		Detail: what + FormatShape(shape) + ", whose " + strconv.FormatFloat(product, 'g', 3, 64) +
			" elements are more than an int counts (" + strconv.Itoa(math.MaxInt) + ")",
		Fix: "use smaller sizes"}
}

// CheckedMul is a·b, with ok false where it does not fit an int: for the
// arithmetic of sizes, strides and offsets that user values reach (a
// stride of 2⁶², a pad of MaxInt).
func CheckedMul(a, b int) (int, bool) {
	hi, lo := bits.Mul64(magnitude(a), magnitude(b))
	switch neg := (a < 0) != (b < 0); {
	case hi != 0:
		return 0, false
	case neg && lo <= 1<<63:
		return int(-lo), true // two's complement: 1<<63 is MinInt
	case !neg && lo <= math.MaxInt:
		return int(lo), true
	}
	return 0, false
}

// CheckedAdd is a+b, with ok false where it does not fit an int.
func CheckedAdd(a, b int) (int, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

func magnitude(a int) uint64 {
	if a < 0 {
		return -uint64(a)
	}
	return uint64(a)
}
