package dispatch

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// DeviceKind is the name of a backend ("cpu", "cuda", "wgpu"), interned as
// a small number so that a Device compares in one instruction and indexes
// per-kind tables such as an op's kernels.
//
// The zero kind is the host, named cpu: the zero Device is the cpu, the
// one device that host data lives on and that prints without an index.
// dispatch knows no other backend by name; each registers its own
// (RegisterBackend).
type DeviceKind uint8

// Host is the kind of the host's device, the cpu.
const Host DeviceKind = 0

// maxKinds bounds the kinds one program can intern: per-kind tables are
// arrays of this size. A backend is a package linked into the program, so
// a program has a handful.
const maxKinds = 8

var (
	kindsMu   sync.RWMutex
	kindNames = []string{"cpu"}
)

// Kind returns the kind named name (lower case), interning it if it is
// new. Backends and the root package call it from init or package
// variables; a program that interns more than a few kinds has a bug, and
// Kind panics rather than hand out a kind that no table can hold.
// Parsing a user's string goes through ParseDevice, which interns nothing.
func Kind(name string) DeviceKind {
	if k, ok := lookupKind(name); ok {
		return k
	}
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if i := slices.Index(kindNames, name); i >= 0 {
		return DeviceKind(i)
	}
	if len(kindNames) == maxKinds {
		panic("dispatch: more than " + strconv.Itoa(maxKinds) + " device kinds")
	}
	kindNames = append(kindNames, name)
	return DeviceKind(len(kindNames) - 1)
}

func lookupKind(name string) (DeviceKind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	i := slices.Index(kindNames, name)
	return DeviceKind(max(i, 0)), i >= 0
}

// String is the kind's name.
func (k DeviceKind) String() string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Device is a backend kind and a device index: cpu, cuda:0, wgpu:0.
type Device struct {
	Kind  DeviceKind
	Index int
}

// String returns "cpu" for the host and "kind:index" otherwise.
func (d Device) String() string {
	if d.Kind == Host {
		return d.Kind.String()
	}
	return d.Kind.String() + ":" + strconv.Itoa(d.Index)
}

// GoString returns the Go expression that names the device, used in the
// fixes that error messages suggest: lathe.CPU for the host, and for any
// other kind the root package's constructor of its upper-case name,
// lathe.CUDA(0) or lathe.WGPU(0).
func (d Device) GoString() string {
	if d.Kind == Host {
		return "lathe.CPU"
	}
	return "lathe." + strings.ToUpper(d.Kind.String()) + "(" + strconv.Itoa(d.Index) + ")"
}

// ParseDevice reads "cpu", "cuda", "cuda:1", "wgpu:0" (a missing index is
// 0; the name is any registered backend's, in any case).
func ParseDevice(s string) (Device, error) {
	name, index, hasIndex := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	usage := "use one of " + strings.Join(deviceForms(), ", ")
	kind, ok := lookupKind(name)
	if !ok || !registered(kind) {
		return Device{}, &Error{Op: "parse_device", Kind: ErrValue, Detail: strconv.Quote(s) + " is not a device", Fix: usage}
	}
	i := 0
	if hasIndex {
		n, err := strconv.Atoi(index)
		if err != nil || n < 0 {
			return Device{}, &Error{Op: "parse_device", Kind: ErrValue,
				Detail: strconv.Quote(s) + " has no valid device index", Fix: usage}
		}
		i = n
	}
	if kind == Host && i != 0 {
		return Device{}, &Error{Op: "parse_device", Kind: ErrValue,
			Detail: strconv.Quote(s) + ": there is one cpu device", Fix: `use "cpu"`}
	}
	return Device{Kind: kind, Index: i}, nil
}

// deviceForms lists the device strings ParseDevice takes, for its errors:
// "cpu", "cuda:N", ...
func deviceForms() []string {
	var out []string
	for _, k := range Kinds() {
		if k == Host {
			out = append(out, strconv.Quote(k.String()))
		} else {
			out = append(out, strconv.Quote(k.String()+":N"))
		}
	}
	return out
}
