package alloc

import "math/bits"

// Classes is the size-class rule, one for every backend with its own
// numbers: a request of at most Small bytes rounds up to a multiple of
// Align; a larger one rounds up to a multiple of Large where a backend sets
// it, else to a step of an eighth of the power of two at or below it
// (72 KiB, 80 KiB, ... 128 KiB, 144 KiB, ...). Small tensors are many and
// close in size, so fine classes reuse them well; a large block then wastes
// at most an eighth of itself, and a training step's sizes come back to the
// same classes.
//
// A cached large block at most an eighth larger than a request's class
// also serves it (the smallest such: best fit), so a batch of slightly
// varying size reuses memory without holding much more than it asked for.
type Classes struct {
	// Align is the granularity of small requests, a power of two: the
	// device's alignment of a buffer (cuda 512 B, wgpu 256 B, the cpu a
	// 64-byte cache line).
	Align int64
	// Small is the largest request rounded to Align.
	Small int64
	// Large, when not 0, is the step of every larger request (cuda: 2 MiB,
	// the driver's page for large allocations, as PyTorch rounds them).
	Large int64
}

// Class is the size of the block that serves a request of n bytes.
func (c Classes) Class(n int64) int64 {
	switch {
	case n <= c.Small:
		return max(c.Align, roundUp(n, c.Align))
	case c.Large > 0:
		return roundUp(n, c.Large)
	}
	step := int64(1) << max(bits.Len64(uint64(n-1))-4, 0)
	return roundUp(n, max(step, c.Align))
}

// larger is the class after a large class, or 0 once it is more than an
// eighth above want's class (or class is small): the classes whose cached
// blocks may serve a request of class want, smallest first.
func (c Classes) larger(class, want int64) int64 {
	if class <= c.Small {
		return 0
	}
	if n := c.Class(class + 1); n-want <= want/8 {
		return n
	}
	return 0
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }
