package cuda

import (
	"sync/atomic"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
)

// buffer is a cuda tensor's memory: a block of its device's caching
// allocator, which Free hands back at once, before the stream is done with
// it (alloc's doc says why that is safe). An empty tensor's buffer has a
// zero block. closed is its device's flag, set when lathe.Close hands the
// device back.
type buffer struct {
	blk    alloc.Block[uint64]
	home   *alloc.Pool[uint64]
	closed *atomic.Bool
}

// stale is the error of a tensor among ts whose memory a device held that
// lathe.Close has closed, or nil. The driver destroyed that memory with
// the context, and the device opened after Close has another context: a
// kernel given its address would fault, and a fault ends every later call
// on the device, so no kernel or copy is given one.
func stale(ts ...*dispatch.Tensor) error {
	for _, t := range ts {
		if t == nil || t.Storage == nil {
			continue
		}
		if b, ok := t.Storage.Buffer.(*buffer); ok && b.closed != nil && b.closed.Load() {
			return closedError(t.Device)
		}
	}
	return nil
}

func closedError(dev dispatch.Device) error {
	return &dispatch.Error{Kind: dispatch.ErrReleased, Detail: "was made on " + dev.String() + " before lathe.Close closed it, and its memory went with the device",
		Fix: "make the tensor again after Close, or call Close only at the end"}
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
