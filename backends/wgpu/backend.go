//go:build cgo

package wgpu

import (
	"fmt"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

type backend struct{}

// registered is the backend that dispatch knows as wgpu, which register's
// kernels allocate their temporaries from (nocgo.go's without cgo).
var registered dispatch.Backend = backend{}

var kind = dispatch.RegisterBackend("wgpu", registered)

// Software reports whether wgpu:0 runs on a CPU adapter (lavapipe, which
// runs Vulkan on the CPU): there its speed is a correctness check only,
// and benchmarks say so rather than quote a rate.
func (backend) Software(int) bool { return software() }

// Count is 1 when Dawn opens a device: one instance and one device per
// process, whatever adapters the machine has.
func (backend) Count() int {
	if _, err := open(); err != nil {
		return 0
	}
	return 1
}

func (backend) Open(index int) error {
	if _, err := open(); err != nil {
		return err
	}
	if index != 0 {
		return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: fmt.Sprintf("wgpu:%d does not exist: lathe opens one WebGPU device, wgpu:0", index),
			Fix: "use lathe.WGPU(0)"}
	}
	return nil
}

func (backend) Describe(int) string {
	d, err := open()
	if err != nil {
		return err.Error()
	}
	return d.describe()
}

func software() bool {
	d, err := open()
	return err == nil && d.c.software()
}

// elemBytes is the size of an element on wgpu:0 (int64 as two 32-bit
// words, int64.wgsl; the narrow dtypes packed in words, narrow.go), or an
// error for float64, which WGSL lacks.
func elemBytes(dt dispatch.DType) (uint64, error) {
	switch dt {
	case dispatch.Float32, dispatch.Int32, dispatch.Bool:
		return 4, nil
	case dispatch.Int64:
		return 8, nil
	case dispatch.Float16, dispatch.BFloat16:
		return 2, nil
	case dispatch.Int8, dispatch.Uint8:
		return 1, nil
	}
	return 0, &dispatch.Error{Kind: dispatch.ErrUnsupported, Detail: dt.String() + " does not exist on wgpu:0 (WGSL has no 64-bit floats)",
		Fix: "cast to float32 on the cpu before moving the tensor"}
}

func (backend) Alloc(_ dispatch.Device, dt dispatch.DType, n int) (dispatch.Buffer, error) {
	size, err := elemBytes(dt)
	if err != nil {
		return nil, err
	}
	d, err := open()
	if err != nil {
		return nil, err
	}
	return d.alloc(uint64(n), size)
}

// alloc returns a pooled buffer of n elements of size bytes, or why not: a
// tensor past the device's binding limit cannot be bound whole by any
// shader. The pool is called without d.mu: its calls to Dawn take it.
func (d *device) alloc(n, size uint64) (*buffer, error) {
	if limit := d.limits.maxStorageBufferBindingSize; n > limit/size {
		return nil, &dispatch.Error{Kind: dispatch.ErrOutOfMemory,
			Detail: fmt.Sprintf("a tensor of %d elements of %d bytes is larger than wgpu:0 can bind to a shader (maxStorageBufferBindingSize is %s)", n, size, byteSize(limit)),
			Fix:    "split the tensor, or run this op on the cpu"}
	}
	// Whole words: shaders bind every buffer as an array of u32.
	bytes := (n*size + 3) &^ 3
	blk, err := d.pool.Alloc(int64(max(bytes, 4)))
	if err != nil {
		return nil, err
	}
	return &buffer{buf: blk.Handle, class: uint64(blk.Size), bytes: bytes, blk: blk, pool: d.pool}, nil
}

func (backend) Upload(_ dispatch.Device, data any) (dispatch.Buffer, error) {
	// The data as 32-bit words, the host's own memory where it has that size.
	var words []uint32
	switch v := data.(type) {
	case []float32:
		words = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
	case []int32:
		words = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
	case []bool:
		// One 32-bit word per element: WGSL has no 8-bit storage.
		words = make([]uint32, len(v))
		for i, b := range v {
			if b {
				words[i] = 1
			}
		}
	case []int64:
		// Two words per element, low first: the host's own bytes
		// (int64.wgsl).
		words = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(v))), 2*len(v))
	case []half.Float16:
		words = packWords(v)
	case []half.BFloat16:
		words = packWords(v)
	case []int8:
		words = packWords(v)
	case []uint8:
		words = packWords(v)
	case []float64:
		_, err := elemBytes(dispatch.Float64)
		return nil, err
	default:
		return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: fmt.Sprintf("cannot hold host data of type %T", data)}
	}
	d, err := open()
	if err != nil {
		return nil, err
	}
	b, err := d.alloc(uint64(len(words)), 4)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if len(words) > 0 {
		// Dawn copies the data before the call returns.
		d.c.write(b.buf, 0, words)
	}
	err = d.flush()
	d.mu.Unlock()
	if err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

func (backend) Read(_ dispatch.Device, buf dispatch.Buffer, dt dispatch.DType, offset, n int) (any, error) {
	b, ok := buf.(*buffer)
	if !ok {
		return nil, &dispatch.Error{Kind: dispatch.ErrDevice, Detail: fmt.Sprintf("a %T is not a wgpu buffer", buf)}
	}
	d, err := open()
	if err != nil {
		return nil, err
	}
	size, err := elemBytes(dt)
	if err != nil {
		return nil, err
	}
	switch dt {
	case dispatch.Float16:
		return readPacked[half.Float16](d, b, offset, n)
	case dispatch.BFloat16:
		return readPacked[half.BFloat16](d, b, offset, n)
	case dispatch.Int8:
		return readPacked[int8](d, b, offset, n)
	case dispatch.Uint8:
		return readPacked[uint8](d, b, offset, n)
	}
	if dt == dispatch.Int64 {
		// Allocated as int64s, so the words are 8-byte aligned for the
		// view below.
		out := make([]int64, n)
		if n > 0 {
			words := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(out))), 2*n)
			if err := d.read(b, uint64(offset)*size, words); err != nil {
				return nil, err
			}
		}
		if err := d.drainChecks(); err != nil {
			return nil, err
		}
		return out, nil
	}
	words := make([]uint32, n)
	if n > 0 {
		if err := d.read(b, uint64(offset)*size, words); err != nil {
			return nil, err
		}
	}
	if err := d.drainChecks(); err != nil {
		return nil, err
	}
	switch dt {
	case dispatch.Float32:
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(words))), n), nil
	case dispatch.Int32:
		return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(words))), n), nil
	case dispatch.Bool:
		out := make([]bool, n)
		for i, w := range words {
			out[i] = w != 0
		}
		return out, nil
	}
	return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: "cannot read " + dt.String() + " from wgpu:0"}
}

// read copies len(dst) words from byte offset of b, after every op
// recorded before it.
func (d *device) read(b *buffer, offset uint64, dst []uint32) error {
	size := uint64(len(dst)) * 4
	staging, err := d.staging.Alloc(int64(size))
	if err != nil {
		return err
	}
	defer d.staging.Free(staging)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.flush(); err != nil {
		return err
	}
	if err := d.c.read(b.buf, offset, dst, staging.Handle); err != nil {
		return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: "reading back from wgpu:0: " + err.Error()}
	}
	return d.takeError("read")
}

func (backend) Sync(dispatch.Device) error {
	d, err := open()
	if err != nil {
		return err
	}
	d.mu.Lock()
	err = d.sync()
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if err := d.drainChecks(); err != nil {
		return err
	}
	return d.checks.Failure()
}

// byteSize writes a byte count for people.
func byteSize(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
