//go:build cgo

package wgpu

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
)

// device is the process's one Dawn instance, adapter and device (Dawn
// leaks about half a megabyte per instance, so there is only ever one),
// with everything that lives as long as it: the buffer pools, the compiled
// pipelines, and the op names recorded since the last submission. Dawn's
// device is not safe for concurrent use, so every call goes under mu; the
// pools' calls take mu themselves, so nothing calls a pool while holding it.
type device struct {
	mu       sync.Mutex
	c        *dawn // C memory: Dawn's callbacks write into it
	library  string
	driver   vulkanDriver
	limits   deviceLimits
	pool     *alloc.Pool[gpuBuffer] // storage buffers of tensors
	cache    *alloc.Cap             // the cap on pool's cached bytes
	staging  *alloc.Pool[gpuBuffer] // read-back buffers
	params   paramArena
	pipes    map[string]*pipe
	recorded []string // ops recorded since the last flush, for errors found at submission

	// The value checks queued since the last read-back (checks.go), and
	// the buffer their kernels write to. checkMu is taken before mu.
	checkMu    sync.Mutex
	checks     dispatch.CheckLog
	checkSlots *dispatch.Tensor
}

var (
	openOnce  sync.Once
	theDevice *device
	openErr   error
)

// open makes the device the first time and returns it, or why it cannot be.
func open() (*device, error) {
	openOnce.Do(func() { theDevice, openErr = newDevice() })
	return theDevice, openErr
}

func unavailable(detail string, cause error) error {
	return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: "wgpu:0 is unavailable: " + detail, Err: cause,
		Fix: "run make deps, which installs Dawn and lavapipe into " + cacheDir() + ", or set LATHE_WEBGPU_LIB"}
}

func newDevice() (*device, error) {
	d := &device{pipes: map[string]*pipe{}}
	var tried []string
	for _, path := range libraryCandidates() {
		err := openDawn(path)
		if err == nil {
			d.library = path
			break
		}
		tried = append(tried, err.Error())
	}
	if d.library == "" {
		return nil, unavailable("no Dawn library (tried: "+strings.Join(tried, "; ")+")", nil)
	}

	d.driver = findVulkanDriver(systemICDDirs, cacheDir())
	for k, v := range d.driver.env {
		// With cgo, os.Setenv reaches the C environment that the Vulkan
		// loader reads when Dawn first enumerates adapters.
		os.Setenv(k, v)
	}
	for _, lib := range d.driver.preload {
		if err := preload(lib); err != nil {
			return nil, unavailable("lavapipe's libdrm could not be loaded: "+err.Error(), nil)
		}
	}

	c, err := newDawn()
	if err != nil {
		return nil, unavailable(fmt.Sprintf("Dawn (%s) opened no device: %s (%s)", d.library, err, d.driver.note), nil)
	}
	d.c = c
	d.limits = c.deviceLimits()
	newPools(d)
	if err := d.params.init(d); err != nil {
		return nil, err
	}
	return d, nil
}

// describe says what serves wgpu:0.
func (d *device) describe() string {
	adapter, backend, adapterType := d.c.adapterInfo()
	return fmt.Sprintf("Dawn %s; adapter %s, %s backend, %s; %s; max storage binding %d MiB",
		d.library, adapter, backend, adapterType, d.driver.note, d.limits.maxStorageBufferBindingSize>>20)
}

// takeError returns, and clears, what Dawn reported through its callbacks
// since the last call: an uncaptured error or a lost device. op names the
// op, or the ops recorded in the batch, where Dawn found it.
func (d *device) takeError(op string) error {
	r, msg := d.c.takeReport()
	switch r {
	case reportNone:
		return nil
	case reportLost:
		return &dispatch.Error{Op: op, Kind: dispatch.ErrUnavailable, Detail: "the wgpu device was lost: " + msg}
	case reportOutOfMemory:
		return &dispatch.Error{Op: op, Kind: dispatch.ErrOutOfMemory, Detail: "the wgpu device is out of memory: " + msg}
	}
	return &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported, Detail: "Dawn refused the work: " + msg}
}

// flush submits what is recorded, then reports any error Dawn found in it,
// naming the ops it held.
func (d *device) flush() error {
	d.c.flush()
	ops := d.recorded
	d.recorded = d.recorded[:0]
	if err := d.takeError(batchName(ops)); err != nil {
		return err
	}
	return nil
}

// batchName names the ops of a submission for an error message.
func batchName(ops []string) string {
	seen := map[string]bool{}
	var names []string
	for _, op := range ops {
		if !seen[op] && len(names) < 6 {
			seen[op] = true
			names = append(names, op)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return "one of " + strings.Join(names, ", ")
}

// sync waits for every op recorded so far.
func (d *device) sync() error {
	if err := d.flush(); err != nil {
		return err
	}
	if err := d.c.wait(); err != nil {
		return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: "waiting for wgpu:0: " + err.Error()}
	}
	return d.takeError("sync")
}
