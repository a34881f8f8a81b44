package dispatch

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Backend is what a device package implements and registers in its init.
// dispatch validates every call before it reaches a backend, so a backend may
// assume devices, dtypes and shapes are as the op's schema says.
//
// What only some backends can do (a caching allocator's statistics, a
// numeric option) is an optional interface that the backend also
// implements, as database/sql/driver's Pinger is: see capability.go.
type Backend interface {
	// Open makes device index ready (once) and returns why it cannot be:
	// an *Error of kind ErrUnavailable naming the library or adapter at fault.
	Open(index int) error
	// Describe says what serves the device: library, adapter, driver.
	Describe(index int) string
	// Count is how many devices of this kind the machine has (0 if none).
	Count() int
	// Alloc returns a buffer of n elements of dt, contents unspecified.
	Alloc(dev Device, dt DType, n int) (Buffer, error)
	// Upload copies host data (a []float32, []float64, []int32, []int64,
	// []bool, []int8, []uint8, or a []half.Float16 or []half.BFloat16 of
	// package internal/half for the 16-bit floats) into a new buffer. The
	// backend may keep the slice (the cpu backend does), so the caller
	// hands it over.
	Upload(dev Device, data any) (Buffer, error)
	// Read copies n elements from offset of a buffer to a new host slice of
	// the dtype's Go type.
	Read(dev Device, b Buffer, dt DType, offset, n int) (any, error)
	// Sync waits for all work queued on the device and returns the first
	// error that work hit.
	Sync(dev Device) error
}

// backends holds each kind's backend. Every op reads its slot, so a slot
// is an atomic pointer rather than behind a lock; registerMu orders the
// registrations, which happen once each, in init.
var (
	registerMu sync.Mutex
	backends   [maxKinds]atomic.Pointer[Backend]
)

// RegisterBackend makes a backend available to lathe under name ("cpu",
// "cuda", "wgpu") and returns its kind, which the backend's kernels
// register under. Backends call it from init, as database/sql drivers call
// sql.Register; registering a name twice is a programming error and
// panics, as sql.Register does.
func RegisterBackend(name string, b Backend) DeviceKind {
	kind := Kind(name)
	registerMu.Lock()
	defer registerMu.Unlock()
	if backends[kind].Load() != nil {
		panic("dispatch: backend " + name + " registered twice")
	}
	backends[kind].Store(&b)
	return kind
}

func registered(kind DeviceKind) bool {
	return int(kind) < len(backends) && backends[kind].Load() != nil
}

// Kinds lists the kinds of the registered backends: the host first, then
// the others by name.
func Kinds() []DeviceKind {
	var out []DeviceKind
	for k := range backends {
		if backends[k].Load() != nil {
			out = append(out, DeviceKind(k))
		}
	}
	slices.SortFunc(out, func(a, b DeviceKind) int {
		switch {
		case a == b:
			return 0
		case a == Host:
			return -1
		case b == Host:
			return 1
		}
		if a.String() < b.String() {
			return -1
		}
		return 1
	})
	return out
}

// BackendFor returns the backend of a kind, or an ErrUnavailable error.
func BackendFor(kind DeviceKind) (Backend, error) {
	var b *Backend
	if int(kind) < len(backends) {
		b = backends[kind].Load()
	}
	switch {
	case b == nil && kind.String() == "invalid":
		return nil, &Error{Kind: ErrUnavailable, Detail: "device kind " + itoa(int(kind)) + " is no kind of device",
			Fix: "make devices with lathe.CPU, lathe.CUDA(n), lathe.WGPU(n) or lathe.ParseDevice"}
	case b == nil:
		return nil, &Error{Kind: ErrUnavailable, Detail: "no " + kind.String() + " backend is linked into this program",
			Fix: "import github.com/lathe-ml/lathe, which links every backend"}
	}
	return *b, nil
}

// Open returns the backend that serves dev once dev is ready, or why not.
func Open(dev Device) (Backend, error) {
	b, err := BackendFor(dev.Kind)
	if err != nil {
		return nil, err
	}
	if err := b.Open(dev.Index); err != nil {
		return nil, err
	}
	return b, nil
}

// Upload makes a contiguous tensor of shape on dev from host data, which
// holds as many elements as shape.
func Upload(dev Device, data any, dt DType, shape []int) (*Tensor, error) {
	if _, ok := CheckedNumel(shape); !ok {
		return nil, ShapeError("shape", shape)
	}
	b, err := Open(dev)
	if err != nil {
		return nil, err
	}
	if err := holds(b, dev, dt); err != nil {
		return nil, err
	}
	buf, err := b.Upload(dev, data)
	if err != nil {
		return nil, err
	}
	return NewTensor(dev, dt, shape, buf), nil
}

// Empty makes a contiguous tensor of shape on dev with unspecified
// contents. A shape that CheckedNumel refuses is an ErrShape error about
// the op's result; one whose bytes the device cannot hold is the
// backend's ErrOutOfMemory.
func Empty(dev Device, dt DType, shape []int) (*Tensor, error) {
	n, ok := CheckedNumel(shape)
	if !ok {
		return nil, ShapeError("", shape)
	}
	return empty(dev, dt, shape, n)
}

// empty is Empty for a shape of n elements that CheckedNumel has counted.
func empty(dev Device, dt DType, shape []int, n int) (*Tensor, error) {
	b, err := Open(dev)
	if err != nil {
		return nil, err
	}
	if err := holds(b, dev, dt); err != nil {
		return nil, err
	}
	buf, err := b.Alloc(dev, dt, n)
	if err != nil {
		return nil, err
	}
	return newTensor(dev, dt, shape, n, buf), nil
}
