package dispatch

import (
	"strconv"
	"strings"
)

// DeviceKind names a backend: cpu, cuda or wgpu.
type DeviceKind uint8

// The device kinds. NumKinds bounds per-kind tables such as an op's kernels.
const (
	KindCPU DeviceKind = iota
	KindCUDA
	KindWGPU
	NumKinds
)

var kindNames = [NumKinds]string{"cpu", "cuda", "wgpu"}

func (k DeviceKind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return "invalid"
}

// Device is a backend kind and a device index: cpu, cuda:0, wgpu:0.
type Device struct {
	Kind  DeviceKind
	Index int
}

// String returns "cpu" for the CPU and "kind:index" otherwise.
func (d Device) String() string {
	if d.Kind == KindCPU {
		return "cpu"
	}
	return d.Kind.String() + ":" + strconv.Itoa(d.Index)
}

// GoString returns the Go expression that names the device, used in the
// fixes that error messages suggest: lathe.CPU, lathe.CUDA(0).
func (d Device) GoString() string {
	switch d.Kind {
	case KindCPU:
		return "lathe.CPU"
	case KindCUDA:
		return "lathe.CUDA(" + strconv.Itoa(d.Index) + ")"
	case KindWGPU:
		return "lathe.WGPU(" + strconv.Itoa(d.Index) + ")"
	}
	return "lathe.Device{}"
}

// ParseDevice reads "cpu", "cuda", "cuda:1", "wgpu:0" (a missing index is 0).
func ParseDevice(s string) (Device, error) {
	name, index, hasIndex := strings.Cut(strings.TrimSpace(s), ":")
	var kind DeviceKind = NumKinds
	for k := DeviceKind(0); k < NumKinds; k++ {
		if strings.EqualFold(name, kindNames[k]) {
			kind = k
		}
	}
	if kind == NumKinds {
		return Device{}, &Error{Op: "parse_device", Kind: ErrValue,
			Detail: strconv.Quote(s) + " is not a device", Fix: `use "cpu", "cuda:N" or "wgpu:N"`}
	}
	i := 0
	if hasIndex {
		n, err := strconv.Atoi(index)
		if err != nil || n < 0 {
			return Device{}, &Error{Op: "parse_device", Kind: ErrValue,
				Detail: strconv.Quote(s) + " has no valid device index", Fix: `use "cpu", "cuda:N" or "wgpu:N"`}
		}
		i = n
	}
	if kind == KindCPU && i != 0 {
		return Device{}, &Error{Op: "parse_device", Kind: ErrValue,
			Detail: strconv.Quote(s) + ": there is one cpu device", Fix: `use "cpu"`}
	}
	return Device{Kind: kind, Index: i}, nil
}
