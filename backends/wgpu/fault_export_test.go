//go:build cgo

package wgpu

import (
	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/faultinject"
)

// FaultyAllocs puts wgpu:0's pool of tensor buffers over memory that fails
// on demand (faulttest.Allocs) and returns it with what puts the pool
// back. Buffers remember their pool, so those made meanwhile go back to
// the faulty one, which is emptied first.
func FaultyAllocs() (*faultinject.Counter, func()) {
	d, _ := open()
	c := &faultinject.Counter{}
	old := d.pool
	d.pool = alloc.New[gpuBuffer](faultinject.Memory[gpuBuffer]{Memory: memory{d, usageStorage | usageCopySrc | usageCopyDst}, C: c,
		Refusal: "Dawn made no buffer"}, alloc.Config{Device: "wgpu:0", Classes: classes, Cap: d.cache})
	return c, func() {
		d.pool.EmptyCache()
		d.pool = old
	}
}

// LoseDevice makes wgpu:0 report what Dawn's device-lost callback reports,
// as if the device were lost now, and returns what takes the report back.
// (A real loss is for good; the test takes it back so that the tests after
// it have a device.)
func LoseDevice() (heal func()) {
	d, _ := open()
	d.mu.Lock()
	d.c.lost = 1
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		d.c.lost = 0
		d.mu.Unlock()
	}
}

// BrokenKernel queues a dispatch that Dawn refuses (a shader that wants a
// binding the op does not give), whose error surfaces at once or at the
// next read-back, naming "broken_kernel".
func BrokenKernel() error {
	x, err := dispatch.Upload(dispatch.Device{Kind: kind}, []float32{1, 2, 3}, dispatch.Float32, []int{3})
	if err != nil {
		return err
	}
	defer x.Release()
	sh := &shader{key: "test/broken-kernel", code: `
@group(0) @binding(0) var<storage, read> p: array<u32>;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(1) fn main() { a[0] = b[0] + f32(p[0]); }`}
	return launch("broken_kernel", sh, [3]uint32{1, 1, 1}, nil, x)
}
