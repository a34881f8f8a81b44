//go:build cgo

package cuda

import (
	"runtime"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
)

// WithStream runs f with dev's primary context current on a locked OS
// thread and dev's CUstream, for a library that queues its own work (NCCL,
// whose cudaStream_t is the same handle): the runtime API that such
// libraries use takes the context current on the thread, which the
// backend's own calls only make current inside each C call.
func (*backend) WithStream(dev dispatch.Device, f func(stream uintptr) error) error {
	d, err := opened(dev)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := d.drv.setCurrent(d.ctx); r != cudaSuccess {
		return d.streamError("sharing the stream", "cuCtxSetCurrent", r)
	}
	return f(uintptr(unsafe.Pointer(d.stream)))
}

// DeviceAddress is the device address of t's element 0.
func (*backend) DeviceAddress(t *dispatch.Tensor) (uint64, error) {
	if _, ok := t.Storage.Buffer.(*buffer); !ok {
		return 0, &dispatch.Error{Kind: dispatch.ErrDevice, Detail: "is not in cuda memory"}
	}
	if err := stale(t); err != nil {
		return 0, err
	}
	return devicePtr(t), nil
}
