package lathe

import (
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// MemStats are a device's allocator figures: what tensors hold, what the
// pool keeps for reuse and reserves from the system, their peaks and
// counts, and the device's free and total memory.
type MemStats = dispatch.MemoryStats

// memoryManager returns dev's backend as a MemoryManager, once dev opens.
func memoryManager(dev Device, op string) (dispatch.MemoryManager, error) {
	b, err := dispatch.Open(dev)
	if err != nil {
		return nil, located(err, op)
	}
	m, ok := b.(dispatch.MemoryManager)
	if !ok {
		return nil, errorf(op, ErrUnsupported, "", dev.String()+" has no caching allocator", "")
	}
	return m, nil
}

// EmptyCache gives back the memory that dev's caching pool holds for reuse
// and no tensor uses: to the garbage collector on the cpu, to the driver on
// a GPU once its queued work is done (PyTorch's torch.cuda.empty_cache).
// lathe never needs it, since a full device empties its cache and retries
// by itself; other programs sharing the machine may.
func EmptyCache(dev Device) error {
	m, err := memoryManager(dev, "empty_cache")
	if err != nil {
		return err
	}
	if err := m.EmptyCache(dev); err != nil {
		return located(err, "empty_cache")
	}
	return nil
}

// MemoryStats returns dev's allocator figures (PyTorch's
// torch.cuda.memory_stats, in brief).
func MemoryStats(dev Device) (MemStats, error) {
	m, err := memoryManager(dev, "memory_stats")
	if err != nil {
		return MemStats{}, err
	}
	s, err := m.MemoryStats(dev)
	if err != nil {
		return MemStats{}, located(err, "memory_stats")
	}
	return s, nil
}

var (
	numericsMu sync.Mutex
	numerics   dispatch.NumericOptions
)

// SetAllowTF32 lets float32 matmul and convolution round their inputs to
// TensorFloat-32 (10 bits of mantissa) on devices that have tensor cores:
// several times faster on an NVIDIA GPU since Ampere, with relative errors
// near 1e-3 instead of 1e-6. It is off by default, as PyTorch's
// torch.backends.cuda.matmul.allow_tf32 is, and applies to every device
// from the next op on; a device without TF32 ignores it.
func SetAllowTF32(allow bool) {
	numericsMu.Lock()
	defer numericsMu.Unlock()
	numerics.AllowTF32 = allow
	for _, k := range dispatch.Kinds() {
		if b, err := dispatch.BackendFor(k); err == nil {
			if t, ok := b.(dispatch.NumericTuner); ok {
				t.SetNumericOptions(numerics)
			}
		}
	}
}
