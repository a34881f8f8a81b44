package dispatch

import (
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
