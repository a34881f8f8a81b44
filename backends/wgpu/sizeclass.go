package wgpu

import "math/bits"

// sizeClass rounds a buffer's byte size up to the size the pool keeps it
// under: multiples of 256 bytes up to 64 KiB (small tensors are many and
// close in size), then steps of an eighth of the power of two below, so a
// reused buffer wastes at most an eighth of itself and a steady training
// step's sizes come back to the same classes.
func sizeClass(n uint64) uint64 {
	const small = 64 << 10
	if n <= 256 {
		return 256
	}
	if n <= small {
		return (n + 255) &^ 255
	}
	step := uint64(1) << (bits.Len64(n-1) - 4) // 1/8 of the power of two below n
	return (n + step - 1) &^ (step - 1)
}
