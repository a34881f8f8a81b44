//go:build cgo

package cuda

import (
	"errors"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
)

// Close hands every opened cuda device back to the driver, for the end of
// a process that wants a memory checker's leak report (compute-sanitizer
// --leak-check full reports at the destruction of a context): it waits for
// the queued work, runs the garbage collector so that tensors nobody
// released give their blocks back, empties the caching allocator, frees the
// value checks' slots, the pinned staging memory and the cuBLAS handle, and
// releases the primary context, which the driver then destroys unless
// another library in the process holds it. Device memory that live
// tensors still hold is what the checker reports. A tensor on a closed
// device must not be used again; a later Open opens the device anew.
// lathe.Close calls it (the test binaries do, after their tests).
func (b *backend) Close() error {
	b.mu.Lock()
	slots := b.devices
	b.devices = map[int]*deviceSlot{}
	b.mu.Unlock()
	var errs []error
	for _, slot := range slots {
		if slot.d != nil {
			errs = append(errs, slot.d.close())
		}
	}
	return errors.Join(errs...)
}

func (d *device) close() error {
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	note(d.sync())
	d.closed.Store(true) // its tensors are refused from now on (stale)
	alloc.Collect()
	note(d.pool.EmptyCache())
	q := d.checks
	q.mu.Lock()
	if q.slots != 0 {
		note(d.free(q.slots))
		q.slots = 0
	}
	q.mu.Unlock()
	d.mu.Lock()
	for _, s := range d.stages {
		if r := d.drv.hostFree(d.ctx, s.p); r != cudaSuccess {
			note(d.callError("freeing pinned host memory", "cuMemFreeHost", r))
		}
	}
	d.stages, d.next, d.small, d.packed = nil, 0, nil, 0
	if d.blas != nil {
		if st, cuErr := d.blas.destroy(d.drv, d.ctx, d.blasH); st != 0 {
			note(d.blasError(d.blas, "destroying the cuBLAS handle", "cublasDestroy_v2", st, cuErr))
		}
		d.blas = nil
	}
	if d.dnnMade {
		if st, cuErr := d.dnn.destroy(d.drv, d.ctx, d.dnnH); st != 0 {
			note(d.dnnError(d.dnn, "destroying the cuDNN handle", "cudnnDestroy", st, cuErr))
		}
		d.dnnMade, d.dnnAlgos = false, nil
	}
	d.dnn = nil
	d.mu.Unlock()
	if r := d.drv.primaryCtxRelease(d.dev); r != cudaSuccess {
		note(d.callError("releasing the primary context", "cuDevicePrimaryCtxRelease_v2", r))
	}
	if len(errs) > 0 {
		return &dispatch.Error{Kind: dispatch.ErrDevice, Detail: d.id.String() + ": closing: " + errors.Join(errs...).Error()}
	}
	return nil
}
