// Package cuda is lathe's CUDA backend: the driver API through cgo, opened
// with dlopen (libcuda.so.1, and libcublas where present) so that lathe
// builds and runs on machines without CUDA, where cuda:N is unavailable
// with the reason. It registers itself with dispatch in init.
//
// Each device gets its primary context and one non-blocking stream, on
// which all of lathe's work is queued in order: ops return as soon as their
// kernels are queued, and read-back and Sync wait. Kernels are PTX from
// kernels/ptx, JIT-compiled once per device with cuModuleLoadDataEx when
// first launched; matrix products go to cuBLAS where it opens. dispatch's
// value checks (an index out of range, say) are kernels queued before the
// op, whose outcome the next read-back or Sync reads back (checks.go), so
// no check waits for the stream. Memory
// comes from lathe's one caching allocator (package alloc), a pool per
// device over the driver's cuMemAlloc, cuMemFree, cuStreamSynchronize and
// cuMemGetInfo (device.go), whose figures lathe.MemoryStats reports and
// whose cache lathe.EmptyCache hands back, through the backend's
// dispatch.MemoryManager methods.
//
// Every dtype is held. The kernels compute float32, float64, int32, int64
// and bool; float16, bfloat16, int8 and uint8 are stored narrow and reach
// the same kernels widened to float32 or int32, their results rounded once
// (dispatch.ViaCompute, which register wraps every kernel in), by the
// conversion kernels of narrow.cu (narrow.go). Native half kernels, which
// would skip the conversions' passes and temporaries, are owed.
//
// The files: cdecl.h holds every C declaration and driver.go every call
// into C; backend.go and device.go are the dispatch.Backend; buffer.go,
// params.go, hostdata.go and errors.go are plain Go (a tensor's block,
// kernel parameter layout and launch checks, host data, error
// translation), tested without a GPU; launch.go is the contract that the
// kernels' registrations (ops_*.go) are written against, and narrow.go
// the narrow dtypes' conversions. Without cgo,
// nocgo.go registers cuda as unavailable.
package cuda
