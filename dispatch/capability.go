package dispatch

// The optional interfaces a Backend may implement, for what only some
// backends can do, as database/sql/driver's Pinger or SessionResetter are.
// The root package asks for the interface and exposes each once
// (lathe.EmptyCache, lathe.MemoryStats, lathe.SetAllowTF32, ...); a backend
// without it gives ErrUnsupported, or nothing where there is nothing to do.

// MemoryManager is a backend with a caching allocator.
type MemoryManager interface {
	// EmptyCache gives the memory that dev's pool keeps for reuse, and no
	// tensor uses, back to the system once the work queued on dev is done
	// (PyTorch's torch.cuda.empty_cache).
	EmptyCache(dev Device) error
	// MemoryStats returns dev's allocator figures.
	MemoryStats(dev Device) (MemoryStats, error)
}

// MemoryStats are a device's allocator figures, in bytes and counts, over
// lathe's own pool (other programs' use shows only in Free and Total).
type MemoryStats struct {
	// Allocated is the memory in blocks that tensors hold now (each
	// block's size class, so at least the bytes asked for); PeakAllocated
	// is its highest value. On the cpu, a tensor nobody releases comes
	// off when the garbage collector finds it unreachable, and buffers
	// under 16 KiB are left out: the collector reclaims them with no
	// cleanup, to keep small ops cheap, so none would ever come off.
	Allocated, PeakAllocated int64
	// Cached is the memory in free blocks kept for reuse. On a device with
	// queued work it may pass the pool's cap until the next allocation that
	// needs new memory, which gives the excess back once the work is done.
	Cached int64
	// Reserved is the memory lathe holds from the system, in use or
	// cached; PeakReserved is its highest value.
	Reserved, PeakReserved int64
	// Segments is how many system allocations make up Reserved.
	Segments int
	// Allocs counts blocks handed out; CacheHits those that needed no new
	// system allocation.
	Allocs, CacheHits int64
	// OOMRetries counts the times a full device made the pool give its
	// cache back and try again.
	OOMRetries int64
	// Collections counts the times the pool ran the garbage collector for
	// the cleanups of tensors nobody released: under pressure (on the cpu,
	// beside the caller), or on a full device.
	Collections int64
	// Free and Total are the device's memory as its driver sees it (the
	// machine's, for the cpu); 0 where the backend cannot tell.
	Free, Total int64
}

// SoftwareReporter is a backend whose devices may be emulated on the CPU
// (lavapipe's Vulkan): there its speed is a correctness check only, so
// benchmarks say so rather than quote a rate, and DefaultDevice passes it
// over.
type SoftwareReporter interface {
	Software(index int) bool
}

// NumericOptions are the switches that trade precision for speed, set once
// for every device (lathe.SetAllowTF32).
type NumericOptions struct {
	// AllowTF32 lets float32 matmul and convolution use TensorFloat-32
	// (10-bit mantissa products) where the device has it, as
	// torch.backends.cuda.matmul.allow_tf32. Off by default.
	AllowTF32 bool
}

// NumericTuner is a backend that honours NumericOptions.
type NumericTuner interface {
	SetNumericOptions(NumericOptions)
}

// Closer is a backend that holds driver state a process can hand back
// before it exits (contexts, pinned memory, library handles), so that a
// memory checker's leak report sees only what tensors still hold.
// lathe.Close calls it on every registered backend.
type Closer interface {
	Close() error
}

// Holder is a backend that can store only some dtypes. dispatch asks it
// before every allocation and upload, so that a tensor of a dtype the
// device cannot hold (float16 on wgpu:0 today) is never made: the op, the
// constructor or the To that would make one fails with ErrUnsupported
// naming the dtype and the device, as a missing kernel does. A backend
// without the interface holds every dtype.
type Holder interface {
	Holds(dt DType) bool
}

// holds refuses dt on dev where dev's backend b cannot store it.
func holds(b Backend, dev Device, dt DType) error {
	if h, ok := b.(Holder); ok && !h.Holds(dt) {
		return &Error{Kind: ErrUnsupported, Found: dt.String(), Detail: "has no " + dt.String() + " kernel on " + dev.String() + " (it cannot hold " + dt.String() + " tensors)",
			Fix: "run it on the cpu, or cast to a dtype that " + dev.String() + " has"}
	}
	return nil
}

// StreamSharer is a backend whose devices run queued work on a native
// stream that other libraries can queue on too (cuda: a CUstream, which
// NCCL and cuDNN take as their cudaStream_t), so that their work is
// ordered with lathe's without a wait.
type StreamSharer interface {
	// WithStream runs f on a locked OS thread with dev's context current,
	// passing dev's stream; the work f queues on it runs after every op
	// queued before the call, and before every op queued after.
	WithStream(dev Device, f func(stream uintptr) error) error
	// DeviceAddress is the device address of t's element 0, with its
	// view's offset. It stays valid while t is alive; memory that work on
	// the stream still uses is reused only by later work on it.
	DeviceAddress(t *Tensor) (uint64, error)
}
