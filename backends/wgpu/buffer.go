//go:build cgo

package wgpu

import (
	"sync/atomic"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
)

// buffer is a tensor's storage on wgpu:0: a Dawn buffer of at least the
// tensor's bytes, a block of the device's pool (lathe's one caching
// allocator, package alloc).
type buffer struct {
	buf   gpuBuffer
	class uint64 // the buffer's real size in bytes
	bytes uint64 // the bytes the tensor asked for
	blk   alloc.Block[gpuBuffer]
	pool  *alloc.Pool[gpuBuffer]
	freed atomic.Bool
}

// Free gives the buffer back to its pool at once, without the device's
// lock: the ops already recorded that use it still run first, since the
// pool hands it out again only to ops recorded after them, on the same
// queue, and destroys it only after the queue has drained.
func (b *buffer) Free() {
	if b.freed.CompareAndSwap(false, true) {
		b.pool.Free(b.blk)
	}
}

// The pools' numbers: classes of 256 bytes (the storage offset alignment)
// up to 64 KiB, then steps of an eighth; up to 1 GiB of tensor buffers and
// 256 MiB of read-back buffers cached. The pressure threshold is alloc's
// default: a sixteenth of the machine's memory on a software adapter
// (lavapipe's buffers are host memory), and 1 GiB on a GPU, whose memory
// WebGPU does not report.
var classes = alloc.Classes{Align: 256, Small: 64 << 10}

const (
	cacheLimit   = 1 << 30
	stagingLimit = 256 << 20
)

func newPools(d *device) {
	d.cache = alloc.NewCap(cacheLimit)
	d.pool = alloc.New[gpuBuffer](memory{d, usageStorage | usageCopySrc | usageCopyDst},
		alloc.Config{Device: "wgpu:0", Classes: classes, Cap: d.cache})
	// Read-back buffers are always freed, never dropped: no collection.
	d.staging = alloc.New[gpuBuffer](memory{d, usageMapRead | usageCopyDst},
		alloc.Config{Device: "wgpu:0", Classes: classes, Cap: alloc.NewCap(stagingLimit), Pressure: -1})
}

// memory is a pool's view of wgpu:0 (alloc.Memory): Dawn buffers of one
// usage. Each call takes the device's lock, which the backend never holds
// while it calls a pool.
type memory struct {
	d     *device
	usage bufferUsage
}

// Alloc makes a Dawn buffer. On a software adapter it first checks the
// machine's available memory, since lavapipe crashes where a GPU's driver
// would report out of memory; an eighth of the machine stays for everything
// else. (Buffers under 1 MiB go unchecked: reading /proc/meminfo takes tens
// of microseconds, and the pool's collections bound what dropped tensors
// hold.)
func (m memory) Alloc(size int64) (gpuBuffer, error) {
	d := m.d
	if d.c.software() && size >= 1<<20 {
		if avail, total := alloc.HostMemory(); total > 0 && size+total/8 > avail {
			return nil, &dispatch.Error{Kind: dispatch.ErrOutOfMemory,
				Detail: "wgpu:0 (a software adapter) leaves the machine's last eighth of memory free: a buffer of " +
					byteSize(uint64(size)) + " does not fit in the " + byteSize(uint64(avail)) + " available of " + byteSize(uint64(total))}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// An error pending from earlier work is theirs, for the next flush to
	// report; one that appears now is this buffer's.
	pending := d.c.errorPending()
	b := d.c.newBuffer(uint64(size), m.usage)
	if !pending {
		if err := d.takeError("alloc"); err != nil {
			if b != nil {
				freeBuffer(b)
			}
			return nil, err
		}
	}
	if b == nil {
		return nil, &dispatch.Error{Kind: dispatch.ErrOutOfMemory, Detail: "Dawn made no buffer of " + byteSize(uint64(size))}
	}
	return b, nil
}

func (m memory) Free(b gpuBuffer) error {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	freeBuffer(b)
	return nil
}

// Drain submits what is recorded and waits for the queue. An error Dawn
// reports for the work stays pending, for the next flush to report with
// the names of the ops.
func (m memory) Drain() error {
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.c.wait(); err != nil {
		return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: "waiting for wgpu:0: " + err.Error()}
	}
	return nil
}

// Info is the machine's memory on a software adapter; WebGPU reports none
// for a GPU.
func (m memory) Info() (free, total int64, err error) {
	if m.d.c.software() {
		free, total = alloc.HostMemory()
	}
	return free, total, nil
}

// MemoryStats reports wgpu:0's pool of tensor buffers.
func (backend) MemoryStats(dispatch.Device) (dispatch.MemoryStats, error) {
	d, err := open()
	if err != nil {
		return dispatch.MemoryStats{}, err
	}
	return d.pool.Stats(), nil
}

// EmptyCache destroys the buffers wgpu:0 keeps for reuse (PyTorch's
// torch.cuda.empty_cache), after the work that may still use them.
func (backend) EmptyCache(dispatch.Device) error {
	d, err := open()
	if err != nil {
		return err
	}
	if err := d.pool.EmptyCache(); err != nil {
		return err
	}
	return d.staging.EmptyCache()
}
