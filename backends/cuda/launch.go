package cuda

import "github.com/lathe-ml/lathe/dispatch"

// This file is the contract between the host side of the backend (driver
// binding, allocator, streams: owned by the host code) and the kernels'
// registrations (ops_*.go: one file per op family, which only call these
// functions). The host side replaces the bodies; the signatures stay.

// devicePtr returns the device address of element 0 of t's view: its
// storage's base address plus t.Offset elements.
func devicePtr(t *dispatch.Tensor) uint64 {
	b, ok := t.Storage.Buffer.(*buffer)
	if !ok {
		return 0 // dispatch gives a cuda kernel only cuda tensors
	}
	size, _ := elemSize(t.DType)
	return b.ptr() + uint64(t.Offset)*uint64(size)
}

// launch enqueues kernel fn of the PTX module mod (kernels/ptx/<mod>.ptx,
// loaded once per device) on dev's stream, with grid and block sizes in
// blocks and threads, shared bytes of dynamic shared memory, and the
// kernel's parameters in order. Each argument is one of uint64 (a device
// pointer), int32, uint32, int64, float32, float64, or a []byte holding a
// struct passed by value, laid out as the kernel's C struct is (8-byte
// aligned fields). A launch error is returned here; an error the kernel
// hits while running is returned by the next Sync or read-back, naming the
// op whose launch it was.
func launch(dev dispatch.Device, mod, fn string, grid, block [3]uint32, shared uint32, args ...any) error {
	return launchOn(dev, mod, fn, grid, block, shared, args)
}

// scratch returns n bytes of temporary device memory from dev's caching
// allocator (for multi-pass reductions and the like) and the function that
// gives it back once the work queued on the stream no longer needs it.
func scratch(dev dispatch.Device, n int) (ptr uint64, free func(), err error) {
	return scratchOn(dev, n)
}

// register gives op name a cuda kernel.
func register(name string, k dispatch.Kernel) { dispatch.RegisterKernel(kind, name, k) }
