package lathe

import (
	"github.com/lathe-ml/lathe/backends/cpu"
	"github.com/lathe-ml/lathe/backends/cuda"
	"github.com/lathe-ml/lathe/dispatch"
)

// EmptyCache gives back the memory that dev's caching pool holds for reuse
// and no tensor uses: to the garbage collector on the cpu, to the driver on
// a cuda device once its queued work is done (PyTorch's
// torch.cuda.empty_cache). lathe never needs it, since a full device
// empties its cache and retries by itself; other programs sharing the
// machine may. A device's own figures are cuda.MemoryStats.
func EmptyCache(dev Device) error {
	switch dev.Kind {
	case dispatch.KindCPU:
		cpu.EmptyCache()
		return nil
	case dispatch.KindCUDA:
		if err := cuda.EmptyCache(dev); err != nil {
			return located(err, "empty_cache")
		}
		return nil
	}
	if _, err := dispatch.Open(dev); err != nil {
		return located(err, "empty_cache")
	}
	return nil // a backend without a pool has nothing cached
}
