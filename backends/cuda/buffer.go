package cuda

// buffer is a cuda tensor's memory: a block of its device's caching
// allocator, which Free hands back (see pool.go for why at once, before
// the stream is done with it). An empty tensor's buffer has no block.
type buffer struct {
	blk  *block
	home *pool
}

// Free returns the block to its pool. dispatch calls it once, when the last
// tensor on the buffer is released, from any goroutine.
func (b *buffer) Free() {
	if b.blk != nil {
		b.home.free(b.blk)
	}
}

// ptr is the device address of the buffer's first byte (0 when empty).
func (b *buffer) ptr() uint64 {
	if b.blk == nil {
		return 0
	}
	return b.blk.ptr
}
