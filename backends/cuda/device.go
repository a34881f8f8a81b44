//go:build cgo

package cuda

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
)

// device is one opened GPU: its primary context, the one stream that all of
// lathe's work on it is queued on (so everything on the device runs in the
// order it was asked for, and a block freed to the pool is safe to reuse),
// its caching allocator, the kernels loaded so far, and cuBLAS.
type device struct {
	id     dispatch.Device
	drv    *driver
	dev    cuDevice
	ctx    cuContext
	stream cuStream

	name         string
	major, minor int
	sms          int
	totalMem     int64
	driverVer    int

	pool    *alloc.Pool[uint64]
	noCache bool        // the pool caches nothing (noCachingEnv)
	closed  atomic.Bool // Close has handed the device back (buffer.closed)
	checks  *checkQueue // the value checks queued since the last drain (checks.go)

	// lastOp is the kernel launched last and launches counts launches since
	// the last successful wait for the stream: a kernel's fault surfaces
	// at the next wait, and the error names them.
	lastOp   atomic.Pointer[string]
	launches atomic.Int64

	mu      sync.Mutex // guards what follows, and the cuBLAS handle's use
	modules map[string]cuModule
	funcs   map[string]*kernelFunc
	params  cMemory
	stages  []*stage
	next    int // the stage to reuse next, once all exist
	// small is the stage that small uploads share (upload), and packed
	// the bytes of it they have used; nil where none is open.
	small  *stage
	packed int
	// stageWaits counts the waits for a stage's copies (takeStage): the
	// host stopping for the device, which a step's small uploads must not
	// cause.
	stageWaits int

	blas    *cublas
	blasH   blasHandle
	blasVer int
	blasWhy string // why matmul runs on the PTX kernel instead, when blas is nil

	// cuDNN (cudnn.go): the library, and its handle once a convolution
	// made it; the algorithms chosen per case. d.mu guards them, and the
	// handle's use.
	dnn      *cudnnLib
	dnnH     dnnHandle
	dnnMade  bool
	dnnWhy   string // why convolution takes the im2col path, when dnn is nil
	dnnAlgos map[dnnKey][]int
}

// kernelFunc is a loaded kernel and its parameters' sizes (nil where the
// driver cannot say).
type kernelFunc struct {
	f     cuFunction
	sizes []int
}

// openDevice retains device index's primary context, makes its stream and
// its pool, and creates a cuBLAS handle where cuBLAS opens.
func openDevice(drv *driver, index int) (*device, error) {
	d := &device{id: dispatch.Device{Kind: kind, Index: index}, drv: drv,
		modules: map[string]cuModule{}, funcs: map[string]*kernelFunc{}}
	var r cuResult
	if d.dev, r = drv.deviceGet(index); r != cudaSuccess {
		return nil, d.openError("cuDeviceGet", r)
	}
	if d.name, r = drv.deviceName(d.dev); r != cudaSuccess {
		return nil, d.openError("cuDeviceGetName", r)
	}
	for _, a := range []struct {
		attr int
		dst  *int
	}{{attrComputeMajor, &d.major}, {attrComputeMinor, &d.minor}, {attrMultiprocessorCount, &d.sms}} {
		if *a.dst, r = drv.deviceAttribute(a.attr, d.dev); r != cudaSuccess {
			return nil, d.openError("cuDeviceGetAttribute", r)
		}
	}
	if d.totalMem, r = drv.deviceTotalMem(d.dev); r != cudaSuccess {
		return nil, d.openError("cuDeviceTotalMem_v2", r)
	}
	d.driverVer, _ = drv.driverVersion()
	// The primary context is retained for the life of the process: lathe
	// never tears a device down, and PyTorch or cuBLAS in the same process
	// share it.
	if d.ctx, r = drv.primaryCtxRetain(d.dev); r != cudaSuccess {
		return nil, d.openError("cuDevicePrimaryCtxRetain", r)
	}
	if d.stream, r = drv.streamCreate(d.ctx); r != cudaSuccess {
		return nil, d.openError("cuStreamCreate", r)
	}
	d.noCache = os.Getenv(noCachingEnv) == "1"
	d.pool = alloc.New[uint64](memory{d}, alloc.Config{Device: d.id.String(), Classes: classes, Slab: slabBytes, NoCache: d.noCache})
	d.checks = newCheckQueue(deviceSlots{d}, checkSlots)
	d.openBLAS()
	d.openDNN()
	return d, nil
}

func (d *device) openError(call string, r cuResult) error {
	name, text := d.drv.errorText(r)
	e := driverError(d.id, "cannot open "+d.id.String(), call, r, name, text)
	e.Kind = dispatch.ErrUnavailable
	e.Fix = "check the device with nvidia-smi; or use lathe.CPU"
	return e
}

// cublasLib is cuBLAS, opened once for every device.
var cublasLib = sync.OnceValues(openCublas)

func (d *device) openBLAS() {
	lib, err := cublasLib()
	if err != nil {
		d.blasWhy = err.(*dispatch.Error).Detail // openLibrary's: the paths tried and why each failed
		return
	}
	h, version, status, cuErr := lib.create(d.drv, d.ctx, d.stream)
	if status != 0 {
		e := d.blasError(lib, "creating a cuBLAS handle", "cublasCreate_v2", status, cuErr)
		d.blasWhy = e.Detail + ": " + e.Err.Error()
		return
	}
	d.blas, d.blasH, d.blasVer = lib, h, version
}

func (d *device) describe() string {
	s := fmt.Sprintf("%s, compute capability %d.%d, %d SMs, %s, CUDA driver %s (%s)",
		d.name, d.major, d.minor, d.sms, formatBytes(d.totalMem), versionString(d.driverVer), d.drv.path)
	if d.noCache {
		s += ", no caching allocator (" + noCachingEnv + "=1)"
	}
	if d.blas != nil {
		v := d.blasVer
		s += fmt.Sprintf(", matmul by cuBLAS %d.%d.%d (%s)", v/10000, v%10000/100, v%100, d.blas.path)
		if !d.blas.ex {
			s += ", float16 and bfloat16 through float32 (no cublasGemmStridedBatchedEx)"
		}
	} else {
		s += ", matmul by lathe's PTX kernel (" + d.blasWhy + ")"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dnn != nil {
		return s + fmt.Sprintf(", convolution by cuDNN %s (%s)", d.dnn.versionString(), d.dnn.path)
	}
	return s + ", convolution by im2col and matmul (" + d.dnnWhy + ")"
}

// The caching allocator's numbers: requests of at most 1 MiB round up to
// 512 bytes and are cut from 2 MiB slabs, larger ones round up to 2 MiB
// (the driver's page for large allocations, as PyTorch rounds them). The
// cache has no cap, as PyTorch's has none: a full device gives it back and
// retries. The pressure threshold is alloc's default, a sixteenth of the
// device's memory.
var classes = alloc.Classes{Align: 512, Small: 1 << 20, Large: 2 << 20}

const slabBytes = 2 << 20

// noCachingEnv set to 1 turns the caching allocator off (alloc's
// Config.NoCache, as PYTORCH_NO_CUDA_MEMORY_CACHING=1 does PyTorch's), so
// that compute-sanitizer sees each tensor as its own allocation: an access
// past a tensor's end inside a 2 MiB slab is invisible to it otherwise.
const noCachingEnv = "LATHE_CUDA_NO_CACHING"

// memory is the pool's view of the device (alloc.Memory): the driver's
// calls, and the stream to drain before memory goes back to the driver.
type memory struct{ d *device }

func (m memory) Alloc(size int64) (uint64, error)     { return m.d.malloc(size) }
func (m memory) Free(p uint64) error                  { return m.d.free(p) }
func (m memory) Drain() error                         { return m.d.sync() }
func (m memory) Info() (free, total int64, err error) { return m.d.memInfo() }

func (d *device) malloc(bytes int64) (uint64, error) {
	p, r := d.drv.memAlloc(d.ctx, bytes)
	if r != cudaSuccess {
		return 0, d.callError("allocating "+formatBytes(bytes), "cuMemAlloc_v2", r)
	}
	return p, nil
}

func (d *device) free(p uint64) error {
	if r := d.drv.memFree(d.ctx, p); r != cudaSuccess {
		return d.callError("freeing device memory", "cuMemFree_v2", r)
	}
	return nil
}

func (d *device) memInfo() (free, total int64, err error) {
	free, total, r := d.drv.memInfo(d.ctx)
	if r != cudaSuccess {
		return 0, 0, d.callError("reading the free memory", "cuMemGetInfo_v2", r)
	}
	return free, total, nil
}

// sync waits for every op queued on the device. A kernel's fault shows here
// first; the error names the last kernel launched before it.
func (d *device) sync() error {
	if r := d.drv.streamSynchronize(d.ctx, d.stream); r != cudaSuccess {
		return d.streamError("waiting for the queued work", "cuStreamSynchronize", r)
	}
	d.launches.Store(0)
	return nil
}

// callError is a failed driver call that is no kernel's doing.
func (d *device) callError(where, call string, r cuResult) *dispatch.Error {
	name, text := d.drv.errorText(r)
	return driverError(d.id, where, call, r, name, text)
}

// streamError is a failed call that may report a queued kernel's fault.
func (d *device) streamError(where, call string, r cuResult) *dispatch.Error {
	e := d.callError(where, call, r)
	if op := d.lastOp.Load(); op != nil && r != cudaErrorInvalidValue {
		n := d.launches.Load()
		e.Detail += fmt.Sprintf(" (a kernel's fault shows at the next wait: the last kernel launched before it was %s, one of %d since the last successful wait)", *op, n)
	}
	return e
}

// Staging: host-device copies go through page-locked (pinned) host memory,
// which the DMA engines read and write directly; copying from pageable Go
// memory would make the driver stage it itself, synchronously. Each stage
// has an event recorded after the copy that last used it, so it is reused
// only once that copy is done.
const (
	stageBytes = 4 << 20 // a copy's chunk
	maxStages  = 4       // per device: 16 MiB of pinned memory at most
)

type stage struct {
	p    unsafe.Pointer // C memory from cuMemHostAlloc
	ev   cuEvent
	busy bool // a copy may still use it: wait for ev first
}

// takeStage returns a stage that no queued copy uses, for the caller
// alone: the small uploads' stage, if it is that one, is closed. d.mu is
// held.
func (d *device) takeStage() (*stage, error) {
	s, err := d.freeStage()
	if s != nil && s == d.small {
		d.small = nil
	}
	return s, err
}

func (d *device) freeStage() (*stage, error) {
	for _, s := range d.stages {
		if !s.busy {
			return s, nil
		}
	}
	if len(d.stages) < maxStages {
		p, r := d.drv.hostAlloc(d.ctx, stageBytes)
		if r != cudaSuccess {
			return nil, d.callError("allocating pinned host memory", "cuMemHostAlloc", r)
		}
		ev, r := d.drv.eventCreate(d.ctx)
		if r != cudaSuccess {
			d.drv.hostFree(d.ctx, p)
			return nil, d.callError("creating an event", "cuEventCreate", r)
		}
		s := &stage{p: p, ev: ev}
		d.stages = append(d.stages, s)
		return s, nil
	}
	s := d.stages[d.next]
	d.next = (d.next + 1) % len(d.stages)
	d.stageWaits++
	if r := d.drv.eventSynchronize(d.ctx, s.ev); r != cudaSuccess {
		return nil, d.streamError("waiting for a copy to the device", "cuEventSynchronize", r)
	}
	s.busy = false
	return s, nil
}

// upload copies raw to device address dst, queued on the stream; it returns
// once raw is copied out (into pinned stages), before the device has it.
func (d *device) upload(dst uint64, raw []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(raw) <= smallUpload {
		return d.uploadSmall(dst, raw)
	}
	for off := 0; off < len(raw); off += stageBytes {
		chunk := raw[off:min(off+stageBytes, len(raw))]
		s, err := d.takeStage()
		if err != nil {
			return err
		}
		copy(unsafe.Slice((*byte)(s.p), len(chunk)), chunk)
		if r := d.drv.htod(d.ctx, dst+uint64(off), s.p, len(chunk), d.stream); r != cudaSuccess {
			return d.streamError("copying "+formatBytes(int64(len(chunk)))+" to the device", "cuMemcpyHtoDAsync_v2", r)
		}
		if r := d.drv.eventRecord(d.ctx, s.ev, d.stream); r != cudaSuccess {
			return d.streamError("recording an event", "cuEventRecord", r)
		}
		s.busy = true
	}
	return nil
}

// smallUpload is the largest upload that shares a stage with the uploads
// before it (uploadSmall).
const smallUpload = 64 << 10

// uploadSmall is upload for a few bytes: a scalar operand (MulScalar's,
// a gradient rule's), a shape's indices. With a stage of their own each,
// the fifth such upload waited for the device to finish the copy four
// uploads back: the host stopped for the device a few ops into every
// step. They are packed into one stage instead, each at a fresh 16-byte
// boundary, none overwriting bytes that a queued copy may still read, and
// the stage's event is recorded after each, so that whoever takes the
// stage next waits for all of them; only a full stage moves on. d.mu is
// held.
func (d *device) uploadSmall(dst uint64, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	if d.small == nil || d.packed+len(raw) > stageBytes {
		s, err := d.takeStage()
		if err != nil {
			return err
		}
		d.small, d.packed = s, 0
	}
	s := d.small
	p := unsafe.Add(s.p, d.packed)
	copy(unsafe.Slice((*byte)(p), len(raw)), raw)
	if r := d.drv.htod(d.ctx, dst, p, len(raw), d.stream); r != cudaSuccess {
		return d.streamError("copying "+formatBytes(int64(len(raw)))+" to the device", "cuMemcpyHtoDAsync_v2", r)
	}
	if r := d.drv.eventRecord(d.ctx, s.ev, d.stream); r != cudaSuccess {
		return d.streamError("recording an event", "cuEventRecord", r)
	}
	s.busy = true
	d.packed += (len(raw) + 15) &^ 15
	return nil
}

// download copies len(raw) bytes from device address src into raw, after
// all the work queued before it: a read-back waits for the stream, and
// reports the fault of any kernel before it (the wait after the first
// chunk's copy is queued). The chunks go through the stages two at a time,
// so that the device copies one into pinned memory while the host copies
// the one before it out, each waited for by its event, where each chunk
// waited for the stream and then for the host's copy.
func (d *device) download(raw []byte, src uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	type landing struct {
		s      *stage
		chunk  []byte
		landed bool // the stream's wait saw its copy done: no event to wait for
	}
	var queued []landing // in the stream's order, at most downloadDepth
	land := func(l landing) error {
		if !l.landed {
			if r := d.drv.eventSynchronize(d.ctx, l.s.ev); r != cudaSuccess {
				return d.streamError("copying "+formatBytes(int64(len(l.chunk)))+" from the device", "cuEventSynchronize", r)
			}
		}
		copy(l.chunk, unsafe.Slice((*byte)(l.s.p), len(l.chunk)))
		l.s.busy = false
		return nil
	}
	for off := 0; off < len(raw); off += stageBytes {
		chunk := raw[off:min(off+stageBytes, len(raw))]
		s, err := d.takeStage()
		if err != nil {
			return err
		}
		if r := d.drv.dtoh(d.ctx, s.p, src+uint64(off), len(chunk), d.stream); r != cudaSuccess {
			return d.streamError("copying "+formatBytes(int64(len(chunk)))+" from the device", "cuMemcpyDtoHAsync_v2", r)
		}
		if off == 0 {
			if err := d.sync(); err != nil {
				return err
			}
			for _, s := range d.stages { // the stream is idle: no copy uses any
				s.busy = false
			}
		} else if r := d.drv.eventRecord(d.ctx, s.ev, d.stream); r != cudaSuccess {
			return d.streamError("recording an event", "cuEventRecord", r)
		}
		s.busy = true // until its chunk is copied out
		if queued = append(queued, landing{s, chunk, off == 0}); len(queued) == downloadDepth {
			if err := land(queued[0]); err != nil {
				return err
			}
			queued = queued[1:]
		}
	}
	for _, l := range queued {
		if err := land(l); err != nil {
			return err
		}
	}
	return nil
}

// downloadDepth is how many chunks of a read-back are queued at once: one
// landing on the host while the next is copied. takeStage finds a free
// stage for each, since after the read-back's first wait only these are
// busy (downloadDepth < maxStages).
const downloadDepth = 2

// memset sets n bytes at dst to v, queued on the stream.
func (d *device) memset(dst uint64, v byte, n int) error {
	if n == 0 {
		return nil
	}
	if r := d.drv.memset8(d.ctx, dst, v, n, d.stream); r != cudaSuccess {
		return d.streamError("setting "+formatBytes(int64(n)), "cuMemsetD8Async", r)
	}
	return nil
}

// deviceSlots is the memory of a device's value checks (checks.go's
// slotMemory): a block of its pool, kept, and set and read on its stream.
type deviceSlots struct{ d *device }

func (m deviceSlots) alloc(n int) (uint64, error) {
	blk, err := m.d.pool.Alloc(int64(n))
	if err != nil {
		return 0, err
	}
	return (&buffer{blk: blk}).ptr(), nil
}

func (m deviceSlots) fill(p uint64, b byte, n int) error { return m.d.memset(p, b, n) }
func (m deviceSlots) read(dst []byte, p uint64) error    { return m.d.download(dst, p) }

// function returns kernel fn of module mod, loading the module on first use.
// d.mu is held.
func (d *device) function(mod, fn string) (*kernelFunc, error) {
	key := mod + "." + fn
	if k := d.funcs[key]; k != nil {
		return k, nil
	}
	m, ok := d.modules[mod]
	if !ok {
		ptx, found := moduleSource(mod)
		if !found {
			return nil, &dispatch.Error{Kind: dispatch.ErrUnsupported,
				Detail: fmt.Sprintf("%s: this build has no PTX module %q (kernels/ptx/%s.ptx)", d.id, mod, mod),
				Fix:    "run make kernels, or run the op on another device"}
		}
		var log string
		var r cuResult
		if m, log, r = d.drv.moduleLoad(d.ctx, ptx); r != cudaSuccess {
			e := d.callError("loading PTX module "+strconv.Quote(mod), "cuModuleLoadDataEx", r)
			if log != "" {
				e.Detail += ": the JIT says: " + log
			}
			return nil, e
		}
		d.modules[mod] = m
	}
	f, r := d.drv.moduleFunction(d.ctx, m, fn)
	if r != cudaSuccess {
		e := d.callError(fmt.Sprintf("PTX module %q has no kernel %q", mod, fn), "cuModuleGetFunction", r)
		return nil, e
	}
	k := &kernelFunc{f: f}
	k.sizes, _ = d.drv.paramSizes(d.ctx, f)
	d.funcs[key] = k
	return k, nil
}

// launch checks and enqueues one kernel (launch's contract in launch.go).
func (d *device) launch(mod, fn string, grid, block [3]uint32, shared uint32, args []any) error {
	name := mod + "." + fn
	if err := checkGeometry(name, grid, block); err != nil {
		return err
	}
	image, offsets, sizes, err := packParams(args)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k, err := d.function(mod, fn)
	if err != nil {
		return err
	}
	if err := checkParams(name, k.sizes, sizes); err != nil {
		return err
	}
	if r := d.drv.launch(d.ctx, k.f, grid, block, shared, d.stream, image, offsets, &d.params); r != cudaSuccess {
		return d.streamError("launching kernel "+name, "cuLaunchKernel", r)
	}
	d.lastOp.Store(&name)
	d.launches.Add(1)
	return nil
}

// gemm runs one strided-batched product of dtype dt (float32, float64,
// float16 or bfloat16; C float32 where g.wideC) on cuBLAS; ok is false where the device has no
// cuBLAS, or none that takes dt (the 16-bit floats need
// cublasGemmStridedBatchedEx).
func (d *device) gemm(dt dispatch.DType, g gemmArgs) (ok bool, err error) {
	if d.blas == nil || dispatch.Halves.Has(dt) && !d.blas.ex {
		return false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var status int
	var cuErr cuResult
	var call string
	switch dt {
	case dispatch.Float64:
		call = "cublasDgemmStridedBatched"
		status, cuErr = d.blas.dgemm(d.drv, d.ctx, d.blasH, g)
	case dispatch.Float16, dispatch.BFloat16:
		// TF32 does not apply: tensor cores take 16-bit inputs as they are.
		typ := cudaR16F
		if dt == dispatch.BFloat16 {
			typ = cudaR16BF
		}
		typC := typ
		if g.wideC {
			typC = cudaR32F
		}
		call = "cublasGemmStridedBatchedEx"
		status, cuErr = d.blas.gemmEx(d.drv, d.ctx, d.blasH, typ, typC, g)
	default:
		call = "cublasSgemmStridedBatched"
		status, cuErr = d.blas.sgemm(d.drv, d.ctx, d.blasH, allowTF32.Load(), g)
	}
	if status != 0 {
		return true, d.blasError(d.blas, "a matrix product", call, status, cuErr)
	}
	d.lastOp.Store(&call)
	d.launches.Add(1)
	return true, nil
}

func (d *device) blasError(lib *cublas, where, call string, status int, cuErr cuResult) *dispatch.Error {
	if status == ctxFailed {
		return d.streamError(where, "cuCtxSetCurrent", cuErr)
	}
	name, text := lib.statusText(status)
	return cublasError(d.id, where, call, status, name, text)
}

// The exported memory API's bodies.

func emptyCacheOn(dev dispatch.Device) error {
	d, err := opened(dev)
	if err != nil {
		return err
	}
	return d.pool.EmptyCache()
}

func memoryStatsOn(dev dispatch.Device) (dispatch.MemoryStats, error) {
	d, err := opened(dev)
	if err != nil {
		return dispatch.MemoryStats{}, err
	}
	return d.pool.Stats(), nil
}

// gemmOn is the cuBLAS path of matmul; ok is false where dev has no cuBLAS.
func gemmOn(dev dispatch.Device, dt dispatch.DType, g gemmArgs) (bool, error) {
	d, err := opened(dev)
	if err != nil {
		return false, err
	}
	return d.gemm(dt, g)
}

// hasBLAS is whether dev opens and has cuBLAS.
func hasBLAS(dev dispatch.Device) bool {
	d, err := opened(dev)
	return err == nil && d.blas != nil
}

// halfGemmOn reports whether dev opens and its cuBLAS multiplies float16
// and bfloat16 in place (device.gemm), which a 16-bit convolution asks
// before it unfolds its input in the 16-bit dtype.
func halfGemmOn(dev dispatch.Device) bool {
	d, err := opened(dev)
	return err == nil && d.blas != nil && d.blas.ex
}

// zeroOn fills n bytes at dst on dev with zeros.
func zeroOn(dev dispatch.Device, dst uint64, n int) error {
	d, err := opened(dev)
	if err != nil {
		return err
	}
	return d.memset(dst, 0, n)
}

// checksOf is dev's queue of value checks.
func checksOf(dev dispatch.Device) (*checkQueue, error) {
	d, err := opened(dev)
	if err != nil {
		return nil, err
	}
	return d.checks, nil
}
