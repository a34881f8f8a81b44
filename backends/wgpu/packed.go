//go:build cgo

package wgpu

import (
	"unsafe"

	"github.com/lathe-ml/lathe/internal/half"
)

// narrowElem is a narrow dtype's host element type, as Upload takes and
// Read gives it.
type narrowElem interface {
	half.Float16 | half.BFloat16 | int8 | uint8
}

// packWords is v's elements packed in u32 words, element e at byte
// e·size of the words: the host's little-endian bytes, which is how
// convert.wgsl finds element e in word e/(4/size). The last word's spare
// bytes are zero.
func packWords[T narrowElem](v []T) []uint32 {
	size := int(unsafe.Sizeof(*new(T)))
	words := make([]uint32, (len(v)*size+3)/4)
	copy(wordBytes(words), unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*size))
	return words
}

// readPacked reads n elements of a narrow dtype from element offset of b:
// the whole words that hold them, since a copy from a buffer starts and
// ends on a word, and then the elements' bytes out of those words, so an
// offset or an end mid-word is fine.
func readPacked[T narrowElem](d *device, b *buffer, offset, n int) (any, error) {
	size := int(unsafe.Sizeof(*new(T)))
	out := make([]T, n)
	if n > 0 {
		first := offset * size / 4
		words := make([]uint32, ((offset+n)*size+3)/4-first)
		if err := d.read(b, uint64(first)*4, words); err != nil {
			return nil, err
		}
		from := wordBytes(words)[offset*size-first*4:]
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), n*size), from)
	}
	if err := d.drainChecks(); err != nil {
		return nil, err
	}
	return out, nil
}

// wordBytes is the memory of words as bytes.
func wordBytes(words []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), 4*len(words))
}
