//go:build cgo

package cuda

import (
	"sync/atomic"

	"github.com/lathe-ml/lathe/dispatch"
)

// EmptyCache gives the memory that dev's caching allocator holds but no
// tensor uses back to the driver, once the work queued on the device is
// done (PyTorch's torch.cuda.empty_cache). Memory that tensors hold stays;
// lathe itself never needs this call (a full device empties the cache and
// retries on its own), other programs on the same GPU may.
func (*backend) EmptyCache(dev dispatch.Device) error { return emptyCacheOn(dev) }

// MemoryStats reports dev's allocator figures: what tensors hold, what lathe
// reserves from the driver, their peaks and counts.
func (*backend) MemoryStats(dev dispatch.Device) (dispatch.MemoryStats, error) {
	s, err := memoryStatsOn(dev)
	if err != nil {
		return dispatch.MemoryStats{}, err
	}
	return dispatch.MemoryStats{
		Allocated: s.Allocated, PeakAllocated: s.PeakAllocated,
		Cached:   s.Reserved - s.Allocated,
		Reserved: s.Reserved, PeakReserved: s.PeakReserved,
		Segments: s.Segments, Allocs: s.Allocs, CacheHits: s.CacheHits, OOMRetries: s.OOMRetries,
	}, nil
}

// allowTF32 is read at each float32 product.
var allowTF32 atomic.Bool

// SetNumericOptions takes AllowTF32: cuBLAS then computes float32 matrix
// products on tensor cores with inputs rounded to TF32 (10 bits of
// mantissa), several times faster on Ampere and later, with relative
// errors near 1e-3 instead of 1e-6; off by default, as
// torch.backends.cuda.matmul.allow_tf32 is. It affects every cuda device
// from the next product on.
func (*backend) SetNumericOptions(o dispatch.NumericOptions) { allowTF32.Store(o.AllowTF32) }
