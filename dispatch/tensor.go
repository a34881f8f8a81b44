package dispatch

import (
	"runtime"
	"sync/atomic"
)

// Buffer is a backend's block of device memory. dispatch never looks inside;
// each backend's kernels know their own buffer type.
type Buffer interface {
	// Free hands the memory back to the backend (its pool). Storage calls it
	// once, when the last tensor that uses the buffer is released.
	Free()
}

// Storage is a buffer shared by a tensor and its views, counted by them.
type Storage struct {
	Buffer Buffer
	// Len is how many elements the buffer holds: those of the tensor it
	// was made for. No view addresses one outside [0, Len).
	Len  int
	refs atomic.Int32
	// checks are the value checks queued on a device that the values
	// depend on and had not passed when they were made (pending.go).
	checks atomic.Pointer[checkSet]
}

// NewStorage wraps a fresh buffer of n elements, counted once for the
// tensor that gets it.
func NewStorage(b Buffer, n int) *Storage {
	s := &Storage{Buffer: b, Len: n}
	s.refs.Store(1)
	return s
}

func (s *Storage) retain() { s.refs.Add(1) }

// tryRetain is retain where the storage has not been freed: a count of
// zero stays zero.
func (s *Storage) tryRetain() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (s *Storage) release() {
	if s.refs.Add(-1) == 0 {
		s.Buffer.Free()
	}
}

// Tensor is the handle that dispatch, the backends and autodiff share: the
// layout of a view (shape, strides in elements, offset in elements) over a
// storage on one device. Fields are read by backends and written only by
// dispatch; a Tensor never changes once an op has returned it, except that
// Release marks it dead and autodiff fills in its gradient fields.
type Tensor struct {
	Shape   []int
	Strides []int
	Offset  int
	Device  Device
	Storage *Storage
	DType   DType // next to RequiresGrad, sharing its word, so that a tensor and its storage fit one size class

	// RequiresGrad marks a tensor whose gradient is wanted: a leaf that asked
	// for one, or the output of an op recorded on the tape.
	// It is atomic so that a leaf that goroutines share may be marked while
	// they run ops on it.
	RequiresGrad atomic.Bool
	// Autograd is owned by the autodiff package (the tape node that made the
	// tensor, its accumulated gradient); dispatch only carries it.
	Autograd any

	released atomic.Bool
	// cleanup drops the handle's claim on Storage when the garbage collector
	// finds the handle unreachable, so a tensor nobody released still hands
	// its memory back to the backend's pool; Release cancels it.
	cleanup runtime.Cleanup
	// inline holds the strides of an output of rank 4 or less, which saves
	// every op an allocation.
	inline [4]int
}

// Numel is the number of elements.
func (t *Tensor) Numel() int { return Numel(t.Shape) }

// Rank is the number of dimensions.
func (t *Tensor) Rank() int { return len(t.Shape) }

// Released reports whether Release was called on this handle.
func (t *Tensor) Released() bool { return t.released.Load() }

// Release drops this handle's claim on its storage; the memory goes back to
// the backend's pool when no tensor uses it. Releasing twice is harmless.
func (t *Tensor) Release() {
	if t.released.CompareAndSwap(false, true) && t.Storage != nil {
		t.cleanup.Stop()
		t.Storage.release()
	}
}

// Hold takes a reference to t's storage, so that a Release of t on another
// goroutine cannot hand its buffer on (to the pool, and the next op's
// output) while the caller reads it: the caller reads the elements as they
// were, where without it a racing Release made it read another tensor's.
// It is false where the storage has gone already. Each Hold that succeeds
// is ended by one LetGo. Call holds every argument for the op's length.
func (t *Tensor) Hold() bool { return t.Storage != nil && t.Storage.tryRetain() }

// LetGo ends a Hold, freeing the buffer if t and its views were released
// meanwhile.
func (t *Tensor) LetGo() { t.Storage.release() }

// IsContiguous reports whether the elements lie in row-major order with no
// gaps, so that a kernel can walk them as a flat array from Offset.
func (t *Tensor) IsContiguous() bool {
	want := 1
	for i := len(t.Shape) - 1; i >= 0; i-- {
		if t.Shape[i] != 1 && t.Strides[i] != want {
			return false
		}
		want *= t.Shape[i]
	}
	return true
}

// NewTensor makes a contiguous tensor that owns a fresh storage: b holds
// its elements, as many as shape has, which CheckedNumel must accept. A device
// buffer's tensor gets a cleanup that holds the storage, which must then be
// an allocation of its own (the cleanup must not keep the tensor alive).
func NewTensor(dev Device, dt DType, shape []int, b Buffer) *Tensor {
	return newTensor(dev, dt, shape, Numel(shape), b)
}

// newTensor is NewTensor for a shape of n elements.
func newTensor(dev Device, dt DType, shape []int, n int, b Buffer) *Tensor {
	var t *Tensor
	if h, ok := b.(HeapBuffer); ok && h.OnGoHeap() {
		// No cleanup will hold the storage, so it can share the tensor's
		// allocation: one fewer per op.
		both := &struct {
			t Tensor
			s Storage
		}{}
		both.s.Buffer, both.s.Len = b, n
		both.s.refs.Store(1)
		t = &both.t
		t.Shape, t.DType, t.Device, t.Storage = shape, dt, dev, &both.s
	} else {
		t = &Tensor{Shape: shape, DType: dt, Device: dev, Storage: NewStorage(b, n)}
		t.cleanup = runtime.AddCleanup(t, (*Storage).release, t.Storage)
	}
	if len(shape) <= len(t.inline) {
		t.Strides = ContiguousStridesInto(t.inline[:len(shape):len(shape)], shape)
	} else {
		t.Strides = ContiguousStrides(shape)
	}
	return t
}

// View makes a tensor that shares t's storage with another layout, one
// that lathe's own code knows to fit (the layout of a tensor that exists,
// a test's), of a tensor whose storage the caller holds (an op's argument,
// a result it has not released). A layout that CheckedView refuses is a
// bug in lathe, and View panics rather than let a kernel read or write
// outside the storage; the view ops call CheckedView and return its
// error, as must a call that views a caller's tensor outside an op, which
// another goroutine may release meanwhile.
func (t *Tensor) View(shape, strides []int, offset int) *Tensor {
	v, err := t.CheckedView(shape, strides, offset)
	if err != nil {
		panic("dispatch: " + err.Error())
	}
	return v
}

// CheckedView makes a tensor that shares t's storage with another layout
// (sizes, strides in elements, offset), or returns an ErrShape error where
// no view of the storage may have it: one stride per size, sizes that
// CheckedNumel accepts, and every element it addresses inside the storage.
// An empty view addresses none, and its offset lies in [0, Len]. A storage
// that every tensor on it has released (on another goroutine, say, after
// the caller checked t) is an ErrReleased: counting a view on it again
// would bring back a buffer that the pool has handed on, and free it a
// second time when the view went.
func (t *Tensor) CheckedView(shape, strides []int, offset int) (*Tensor, error) {
	if err := t.checkView(shape, strides, offset); err != nil {
		return nil, err
	}
	if !t.Storage.tryRetain() {
		return nil, releasedError("")
	}
	v := &Tensor{Shape: shape, Strides: strides, Offset: offset, DType: t.DType, Device: t.Device, Storage: t.Storage}
	v.cleanup = runtime.AddCleanup(v, (*Storage).release, v.Storage)
	return v, nil
}

// checkView is CheckedView's check.
func (t *Tensor) checkView(shape, strides []int, offset int) error {
	n, ok := CheckedNumel(shape)
	switch {
	case !ok:
		return ShapeError("", shape)
	case len(strides) != len(shape):
		return &Error{Kind: ErrShape, Detail: "has " + itoa(len(strides)) + " strides for the " + itoa(len(shape)) + " sizes of " + FormatShape(shape)}
	case n == 0:
		if offset < 0 || offset > t.Storage.Len {
			return t.outside(shape, strides, offset)
		}
		return nil
	}
	// The first and last elements addressed, in int64 arithmetic that
	// reports overflow rather than wrap.
	lo, hi := offset, offset
	for i, s := range shape {
		step, ok := CheckedMul(s-1, strides[i])
		if !ok {
			return t.outside(shape, strides, offset)
		}
		if step < 0 {
			lo, ok = CheckedAdd(lo, step)
		} else {
			hi, ok = CheckedAdd(hi, step)
		}
		if !ok {
			return t.outside(shape, strides, offset)
		}
	}
	if lo < 0 || hi >= t.Storage.Len {
		return t.outside(shape, strides, offset)
	}
	return nil
}

func (t *Tensor) outside(shape, strides []int, offset int) *Error {
	return &Error{Kind: ErrShape, Found: FormatShape(shape),
		Detail: "would view " + FormatShape(shape) + " with strides " + FormatShape(strides) + " from offset " + itoa(offset) +
			", which addresses elements outside its storage of " + itoa(t.Storage.Len),
		Fix: "keep a view inside the tensor it is taken from"}
}

// ReadHost copies a contiguous tensor's elements to the host, as the Go
// slice of its dtype.
func ReadHost(t *Tensor) (any, error) {
	b, err := Open(t.Device)
	if err != nil {
		return nil, err
	}
	if !t.Hold() {
		return nil, releasedError("")
	}
	data, err := b.Read(t.Device, t.Storage.Buffer, t.DType, t.Offset, t.Numel())
	t.LetGo()
	if err != nil {
		return nil, err
	}
	if err := settledChecks(t); err != nil {
		return nil, err
	}
	return data, nil
}

// HostSlicer is a Buffer in the process's memory that lends its elements
// without a copy (the cpu's): Slice is the Go slice of the n elements of
// dtype dt from offset that Read would copy, sharing the buffer's memory.
type HostSlicer interface {
	Buffer
	Slice(dt DType, offset, n int) any
}

// BorrowHost is a contiguous t's elements, as ReadHost's, without a copy
// where its buffer lends them (HostSlicer); ok is false otherwise. The
// slice is t's memory: the caller only reads it, and holds t (Hold) until
// it is done, since a released or collected tensor's buffer goes back to
// the pool for the next op to write.
func BorrowHost(t *Tensor) (data any, ok bool) {
	h, ok := t.Storage.Buffer.(HostSlicer)
	if !ok || !t.IsContiguous() {
		return nil, false
	}
	return h.Slice(t.DType, t.Offset, t.Numel()), true
}

// HeapBuffer is a Buffer whose memory is the Go heap's (the cpu backend's
// slices). Where OnGoHeap is true, the garbage collector reclaims it with
// its last tensor, so the tensor that owns it needs no cleanup, which would
// cost more than the small ops it runs; Release still hands it back to the
// backend's pool at once. A large buffer says false and gets the cleanup:
// handing it back to the pool when its tensor dies unreleased (a forward
// activation, dropped with the graph after Backward) spares the next step
// a fresh allocation, which Go zeroes, and the collector the work. Views
// always get one: a view that nobody releases (the transposed weight a
// layer's forward pass makes, held by the tape) would otherwise keep its
// storage's count above zero, and the buffer out of the pool, for good.
type HeapBuffer interface {
	Buffer
	OnGoHeap() bool
}

// ContiguousStrides returns row-major strides for shape.
func ContiguousStrides(shape []int) []int {
	return ContiguousStridesInto(make([]int, len(shape)), shape)
}

// ContiguousStridesInto writes shape's row-major strides into strides (of
// shape's length) and returns it.
func ContiguousStridesInto(strides, shape []int) []int {
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = s
		s *= shape[i]
	}
	return strides
}

// Numel is the product of a shape's sizes (1 for a 0-d shape).
func Numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}
