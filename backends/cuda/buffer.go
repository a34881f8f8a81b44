package cuda

import "github.com/lathe-ml/lathe/alloc"

// buffer is a cuda tensor's memory: a block of its device's caching
// allocator, which Free hands back at once, before the stream is done with
// it (alloc's doc says why that is safe). An empty tensor's buffer has a
// zero block.
type buffer struct {
	blk  alloc.Block[uint64]
	home *alloc.Pool[uint64]
}

// Free returns the block to its pool. dispatch calls it once, when the last
// tensor on the buffer is released, from any goroutine.
func (b *buffer) Free() { b.home.Free(b.blk) }

// ptr is the device address of the buffer's first byte (0 when empty).
func (b *buffer) ptr() uint64 {
	if b.blk.Size == 0 {
		return 0
	}
	return b.blk.Handle + uint64(b.blk.Offset)
}
