package dispatch

import "sync"

// Backend is what a device package implements and registers in its init.
// dispatch validates every call before it reaches a backend, so a backend may
// assume devices, dtypes and shapes are as the op's schema says.
type Backend interface {
	// Kind is the device kind the backend serves.
	Kind() DeviceKind
	// Open makes device index ready (once) and returns why it cannot be:
	// an *Error of kind ErrUnavailable naming the library or adapter at fault.
	Open(index int) error
	// Describe says what serves the device: library, adapter, driver.
	Describe(index int) string
	// Count is how many devices of this kind the machine has (0 if none).
	Count() int
	// Alloc returns a buffer of n elements of dt, contents unspecified.
	Alloc(dev Device, dt DType, n int) (Buffer, error)
	// Upload copies host data (a []float32, []float64, []int32, []int64 or
	// []bool) into a new buffer. The backend may keep the slice (the cpu
	// backend does), so the caller hands it over.
	Upload(dev Device, data any) (Buffer, error)
	// Read copies n elements from offset of a buffer to a new host slice of
	// the dtype's Go type.
	Read(dev Device, b Buffer, dt DType, offset, n int) (any, error)
	// Sync waits for all work queued on the device and returns the first
	// error that work hit.
	Sync(dev Device) error
}

var (
	backendsMu sync.RWMutex
	backends   [NumKinds]Backend
)

// RegisterBackend makes a backend available to lathe. Backends call it from
// init; registering a kind twice is a programming error and panics, as
// database/sql.Register does.
func RegisterBackend(b Backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if backends[b.Kind()] != nil {
		panic("dispatch: backend " + b.Kind().String() + " registered twice")
	}
	backends[b.Kind()] = b
}

// BackendFor returns the backend of a kind, or an ErrUnavailable error.
func BackendFor(kind DeviceKind) (Backend, error) {
	if kind >= NumKinds {
		return nil, &Error{Kind: ErrUnavailable, Detail: "no such device kind"}
	}
	backendsMu.RLock()
	b := backends[kind]
	backendsMu.RUnlock()
	if b == nil {
		return nil, &Error{Kind: ErrUnavailable, Detail: "no " + kind.String() + " backend is linked into this program",
			Fix: "import github.com/lathe-ml/lathe, which links every backend"}
	}
	return b, nil
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

// Upload makes a contiguous tensor of shape on dev from host data.
func Upload(dev Device, data any, dt DType, shape []int) (*Tensor, error) {
	b, err := Open(dev)
	if err != nil {
		return nil, err
	}
	buf, err := b.Upload(dev, data)
	if err != nil {
		return nil, err
	}
	return NewTensor(dev, dt, shape, buf), nil
}

// Empty makes a contiguous tensor of shape on dev with unspecified contents.
func Empty(dev Device, dt DType, shape []int) (*Tensor, error) {
	b, err := Open(dev)
	if err != nil {
		return nil, err
	}
	buf, err := b.Alloc(dev, dt, Numel(shape))
	if err != nil {
		return nil, err
	}
	return NewTensor(dev, dt, shape, buf), nil
}
