package lathe

import (
	"github.com/lathe-ml/lathe/dispatch"

	_ "github.com/lathe-ml/lathe/backends/cpu"  // registers cpu
	_ "github.com/lathe-ml/lathe/backends/cuda" // registers cuda
	_ "github.com/lathe-ml/lathe/backends/wgpu" // registers wgpu
)

// Device is a backend kind and an index: cpu, cuda:0, wgpu:0.
type Device = dispatch.Device

// CPU is the host. It is always available.
var CPU = Device{Kind: dispatch.KindCPU}

// CUDA returns the i-th NVIDIA GPU.
func CUDA(i int) Device { return Device{Kind: dispatch.KindCUDA, Index: i} }

// WGPU returns the i-th WebGPU adapter.
func WGPU(i int) Device { return Device{Kind: dispatch.KindWGPU, Index: i} }

// ParseDevice reads "cpu", "cuda:0", "wgpu:0".
func ParseDevice(s string) (Device, error) { return dispatch.ParseDevice(s) }

// DeviceInfo says whether a device can be opened here, and what serves it or
// why it cannot.
type DeviceInfo struct {
	Device    Device
	Available bool
	// Detail names the library and adapter in use when Available, and the
	// reason (an *Error of kind ErrUnavailable) when not.
	Detail string
	Err    error
}

// DeviceStatus reports every device lathe knows of: each kind's devices that
// the machine has, and for a kind with none, its first device with the
// reason. Opening a device happens here, once per process.
func DeviceStatus() []DeviceInfo {
	var out []DeviceInfo
	for k := dispatch.DeviceKind(0); k < dispatch.NumKinds; k++ {
		b, err := dispatch.BackendFor(k)
		if err != nil {
			out = append(out, DeviceInfo{Device: Device{Kind: k}, Detail: err.Error(), Err: err})
			continue
		}
		n := max(b.Count(), 1)
		for i := range n {
			dev := Device{Kind: k, Index: i}
			if err := b.Open(i); err != nil {
				out = append(out, DeviceInfo{Device: dev, Detail: err.Error(), Err: err})
				continue
			}
			out = append(out, DeviceInfo{Device: dev, Available: true, Detail: b.Describe(i)})
		}
	}
	return out
}

// Devices lists the devices this machine can open, cpu first.
func Devices() []Device {
	var out []Device
	for _, d := range DeviceStatus() {
		if d.Available {
			out = append(out, d.Device)
		}
	}
	return out
}

// Synchronize waits for the work queued on dev and returns its first error.
func Synchronize(dev Device) error {
	b, err := dispatch.Open(dev)
	if err != nil {
		return located(err, "synchronize")
	}
	if err := b.Sync(dev); err != nil {
		return located(err, "synchronize")
	}
	return nil
}
