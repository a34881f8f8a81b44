package lathe

import (
	"errors"
	"os"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// Device is a backend kind and an index: cpu, cuda:0, wgpu:0.
type Device = dispatch.Device

// CPU is the host. It is always available.
var CPU = Device{Kind: dispatch.Host}

// The device kinds that lathe's own backends register (backends.go).
var (
	cudaKind = dispatch.Kind("cuda")
	wgpuKind = dispatch.Kind("wgpu")
)

// CUDA returns the i-th NVIDIA GPU.
func CUDA(i int) Device { return Device{Kind: cudaKind, Index: i} }

// WGPU returns the i-th WebGPU adapter.
func WGPU(i int) Device { return Device{Kind: wgpuKind, Index: i} }

// ParseDevice reads "cpu", "cuda:0", "wgpu:0": any registered backend's
// name, with an index where the kind has several devices.
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
	for _, k := range dispatch.Kinds() {
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

// Close hands back the driver state that backends hold for the life of
// the process (cuda's primary contexts, pinned staging memory, the cuBLAS
// handle), after waiting for their queued work, so that a memory checker
// such as compute-sanitizer reports only what live tensors still hold. Call
// it at the very end: a later op opens the device anew, and a tensor made
// before Close is an ErrReleased of every op and read after it (its memory
// went with the device). Backends with nothing to hand back are skipped.
func Close() error {
	var errs []error
	for _, k := range dispatch.Kinds() {
		b, err := dispatch.BackendFor(k)
		if err != nil {
			continue
		}
		if c, ok := b.(dispatch.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, located(err, "close"))
			}
		}
	}
	return errors.Join(errs...)
}

// IsSoftware reports whether dev is emulated on the CPU (wgpu:0 on Mesa's
// lavapipe): it computes correctly, but its speed says nothing of a GPU's.
func IsSoftware(dev Device) bool {
	b, err := dispatch.BackendFor(dev.Kind)
	if err != nil {
		return false
	}
	s, ok := b.(dispatch.SoftwareReporter)
	return ok && s.Software(dev.Index)
}

// defaultOrder is the order in which DefaultDevice tries the devices when
// LATHE_DEVICE does not name one: a GPU first, the host last.
var defaultOrder = []Device{CUDA(0), WGPU(0), CPU}

var defaultDevice = sync.OnceValues(func() (Device, error) { return chooseDevice(os.Getenv("LATHE_DEVICE")) })

// DefaultDevice is the device a program runs on when it names none, so
// that the same program uses the GPU where there is one and runs in CI on
// the cpu unchanged: the device that the environment variable LATHE_DEVICE
// names if it is set ("cuda:1", "cpu"; a name that does not parse or a
// device that cannot be opened is an error that says why, never a silent
// fallback), else the first of cuda:0 and wgpu:0 (on real hardware, not a
// software adapter such as lavapipe) that opens, else the cpu.
// DeviceStatus says why each device above it was passed over. It is
// decided once per process.
func DefaultDevice() (Device, error) { return defaultDevice() }

func chooseDevice(env string) (Device, error) {
	if env != "" {
		dev, err := ParseDevice(env)
		if err != nil {
			e := located(err, "default_device")
			e.Detail = "LATHE_DEVICE=" + env + ": " + e.Detail
			return CPU, e
		}
		if _, err := dispatch.Open(dev); err != nil {
			e := located(err, "default_device")
			e.Detail = "LATHE_DEVICE names " + dev.String() + ", which cannot be opened: " + e.Detail
			return CPU, e
		}
		return dev, nil
	}
	for _, dev := range defaultOrder {
		if _, err := dispatch.Open(dev); err == nil && !IsSoftware(dev) {
			return dev, nil
		}
	}
	return CPU, nil
}
