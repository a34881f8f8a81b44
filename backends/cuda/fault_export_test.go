//go:build cgo

package cuda

import (
	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/internal/faultinject"
)

// FaultyAllocs puts cuda:index's pool over device memory that fails on
// demand (faulttest.Allocs), as cuMemAlloc does on a full device, and
// returns it with what puts the pool back; or the error of a device that
// does not open. Buffers remember their pool, so those made meanwhile go
// back to the faulty one, which is emptied first. The faulty pool carves
// no slabs: each small tensor is a raw allocation of its own, where a
// slab that the model's weights keep would serve a whole step's.
func FaultyAllocs(index int) (*faultinject.Counter, func(), error) {
	d, err := cudaBackend.device(index)
	if err != nil {
		return nil, nil, err
	}
	c := &faultinject.Counter{}
	old := d.pool
	d.pool = alloc.New[uint64](faultinject.Memory[uint64]{Memory: memory{d}, C: c, Refusal: "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY"},
		alloc.Config{Device: d.id.String(), Classes: classes, NoCache: d.noCache})
	return c, func() {
		d.pool.EmptyCache()
		d.pool = old
	}, nil
}
