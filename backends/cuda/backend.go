//go:build cgo

package cuda

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// backend serves every cuda device of the process. The driver is opened
// and initialised on first use (Count or Open), each device once, on Open.
type backend struct {
	once  sync.Once
	drv   *driver
	count int
	err   error // why no cuda device can be opened: no driver, cuInit failed

	mu      sync.Mutex
	devices map[int]*deviceSlot
}

type deviceSlot struct {
	once sync.Once
	d    *device
	err  error
}

var cudaBackend = &backend{devices: map[int]*deviceSlot{}}

var kind = dispatch.RegisterBackend("cuda", cudaBackend)

// load opens libcuda, initialises it and counts the devices, once.
func (b *backend) load() error {
	b.once.Do(func() {
		drv, err := openDriver()
		if err != nil {
			e := err.(*dispatch.Error)
			e.Fix = "install the NVIDIA driver, which provides libcuda.so.1, or set LATHE_CUDA_LIB to its path; or use lathe.CPU"
			b.err = e
			return
		}
		where := "cannot initialise the CUDA driver " + drv.path
		if r := drv.init(); r != cudaSuccess {
			b.err = b.unavailable(drv, where, "cuInit", r)
			return
		}
		n, r := drv.deviceCount()
		if r != cudaSuccess {
			b.err = b.unavailable(drv, where, "cuDeviceGetCount", r)
			return
		}
		b.drv, b.count = drv, n
	})
	return b.err
}

// unavailable is a driver error that makes every cuda device unusable.
func (b *backend) unavailable(drv *driver, where, call string, r cuResult) error {
	name, text := drv.errorText(r)
	e := driverError(dispatch.Device{Kind: kind}, where, call, r, name, text)
	e.Detail = where
	e.Kind = dispatch.ErrUnavailable
	e.Fix = "check nvidia-smi and the driver's installation; or use lathe.CPU"
	return e
}

// Count is the number of CUDA devices, 0 where the driver cannot be opened
// (Open then says why).
func (b *backend) Count() int {
	if b.load() != nil {
		return 0
	}
	return b.count
}

func (b *backend) Open(index int) error {
	_, err := b.device(index)
	return err
}

// device opens device index once and returns it, or why it cannot be.
func (b *backend) device(index int) (*device, error) {
	id := dispatch.Device{Kind: kind, Index: index}
	if err := b.load(); err != nil {
		// Every cuda device is: the message says the kind, as
		// dispatch.Unavailable's do.
		e := *err.(*dispatch.Error)
		e.Detail = "cuda is unavailable: " + e.Detail
		return nil, &e
	}
	if index < 0 || index >= b.count {
		return nil, &dispatch.Error{Kind: dispatch.ErrUnavailable,
			Detail: fmt.Sprintf("%s does not exist: this machine has %d CUDA device(s)", id, b.count),
			Fix:    "use lathe.CUDA(i) with i below the count that lathe.DeviceStatus() shows"}
	}
	b.mu.Lock()
	slot := b.devices[index]
	if slot == nil {
		slot = &deviceSlot{}
		b.devices[index] = slot
	}
	b.mu.Unlock()
	slot.once.Do(func() { slot.d, slot.err = openDevice(b.drv, index) })
	return slot.d, slot.err
}

// opened returns dev once Open succeeded on it; dispatch opens a device
// before any buffer or kernel reaches it.
func opened(dev dispatch.Device) (*device, error) {
	if dev.Kind != kind {
		return nil, &dispatch.Error{Kind: dispatch.ErrDevice, Detail: dev.String() + " is not a cuda device",
			Expected: "cuda:N", Found: dev.String()}
	}
	return cudaBackend.device(dev.Index)
}

func (b *backend) Describe(index int) string {
	d, err := b.device(index)
	if err != nil {
		return err.Error()
	}
	return d.describe()
}

// Holds reports whether a cuda device can hold dt: every dtype, the narrow
// ones computed wide (launch.go's dtypes; dispatch.Holder).
func (b *backend) Holds(dt dispatch.DType) bool { return dtypes.Has(dt) }

func (b *backend) Alloc(dev dispatch.Device, dt dispatch.DType, n int) (dispatch.Buffer, error) {
	d, err := opened(dev)
	if err != nil {
		return nil, err
	}
	size, ok := elemSize(dt)
	switch {
	case !ok:
		return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: "cannot allocate dtype " + dt.String() + " on " + dev.String()}
	case n < 0:
		return nil, &dispatch.Error{Kind: dispatch.ErrValue, Detail: fmt.Sprintf("cannot allocate %d elements", n)}
	case n == 0:
		return &buffer{home: d.pool, closed: &d.closed}, nil
	case n > (1<<62)/size:
		return nil, &dispatch.Error{Kind: dispatch.ErrOutOfMemory, Detail: fmt.Sprintf("%s: %d elements of %s do not fit in any device", dev, n, dt)}
	}
	blk, err := d.pool.Alloc(int64(n) * int64(size))
	if err != nil {
		return nil, err
	}
	return &buffer{blk: blk, home: d.pool, closed: &d.closed}, nil
}

// bufferOn is Alloc of the process's backend, for the allocate hook.
func bufferOn(dev dispatch.Device, dt dispatch.DType, n int) (dispatch.Buffer, error) {
	return cudaBackend.Alloc(dev, dt, n)
}

func (b *backend) Upload(dev dispatch.Device, data any) (dispatch.Buffer, error) {
	raw, dt, n, err := hostBytes(data)
	if err != nil {
		return nil, err
	}
	buf, err := b.Alloc(dev, dt, n)
	if err != nil {
		return nil, err
	}
	d, _ := opened(dev) // Alloc opened it
	if err := d.upload(buf.(*buffer).ptr(), raw); err != nil {
		buf.Free()
		return nil, err
	}
	return buf, nil
}

func (b *backend) Read(dev dispatch.Device, buf dispatch.Buffer, dt dispatch.DType, offset, n int) (any, error) {
	d, err := opened(dev)
	if err != nil {
		return nil, err
	}
	cb, ok := buf.(*buffer)
	size, known := elemSize(dt)
	if !ok || !known {
		return nil, &dispatch.Error{Kind: dispatch.ErrDType, Detail: "cannot read a " + dt.String() + " buffer from " + dev.String()}
	}
	if cb.closed != nil && cb.closed.Load() {
		return nil, closedError(dev)
	}
	out, raw, finish, err := hostSlice(dt, n)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		if err := d.download(raw, cb.ptr()+uint64(offset)*uint64(size)); err != nil {
			return nil, err
		}
	}
	// The stream has run up to the copy, value checks and all: their
	// slots come back at once.
	if err := d.checks.drain(); err != nil {
		return nil, err
	}
	finish()
	return out, nil
}

// SettleChecks reads back the outcome of the value checks queued on dev
// (dispatch.CheckSettler), leaving a failure for the next Sync to report.
func (b *backend) SettleChecks(dev dispatch.Device) error {
	d, err := opened(dev)
	if err != nil {
		return err
	}
	return d.checks.drain()
}

// Sync waits for the work queued on dev and returns the error of the
// first value check that failed since the last Sync.
func (b *backend) Sync(dev dispatch.Device) error {
	d, err := opened(dev)
	if err != nil {
		return err
	}
	if err := d.sync(); err != nil {
		return err
	}
	return d.checks.report()
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
	d, err := opened(dev)
	if err != nil {
		return err
	}
	return d.launch(mod, fn, grid, block, shared, args)
}

// multiprocessorsOf is dev's multiprocessor count, or 0 where it does not
// open (the launch that follows reports why).
func multiprocessorsOf(dev dispatch.Device) int {
	d, err := opened(dev)
	if err != nil {
		return 0
	}
	return d.sms
}

// scratch returns n bytes of temporary device memory from dev's caching
// allocator (for multi-pass reductions and the like) and the function that
// gives it back. The block goes back to the pool at once when freed: later
// work on the stream runs after the work that used it.
func scratch(dev dispatch.Device, n int) (uint64, func(), error) {
	d, err := opened(dev)
	if err != nil {
		return 0, func() {}, err
	}
	if n <= 0 {
		return 0, func() {}, nil
	}
	blk, err := d.pool.Alloc(int64(n))
	if err != nil {
		return 0, func() {}, err
	}
	b := &buffer{blk: blk, home: d.pool, closed: &d.closed}
	return b.ptr(), b.Free, nil
}

// versionString writes a CUDA version number (1000·major + 10·minor) as
// "major.minor".
func versionString(v int) string {
	return strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
}

// CheckValues is dispatch's value check, on the device: it queues c's
// kernels on t's stream and returns nil at once; the next read-back or
// Sync settles it (checks.go), and Sync returns the error of the first
// check that failed since the last.
func (*backend) CheckValues(t *dispatch.Tensor, c *dispatch.ValueCheck) error {
	q, err := checksOn(t.Device)
	if err != nil {
		return err
	}
	return q.add(t, c)
}
