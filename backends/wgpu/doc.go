// Package wgpu is lathe's WebGPU backend: Dawn's webgpu.h C API through cgo,
// loaded with dlopen at run time, running the WGSL shaders of kernels/wgsl.
//
// The device is wgpu:0, one per process. Where no Dawn library or no
// adapter is found, the backend registers wgpu as unavailable with the
// reason, so lathe builds and runs without it. Dawn's Null backend, which
// "succeeds" and computes nothing, is refused. On a machine without a GPU,
// Dawn runs on Mesa's lavapipe (Vulkan on the CPU), which `make deps`
// installs beside Dawn in lathe's folder of the user cache dir; that is how
// CI runs the real shaders.
//
// WGSL has neither 64-bit floats nor 64-bit integers. float64 tensors
// cannot be made on wgpu:0 (ErrUnsupported naming the dtype); an int64 is
// two 32-bit words, low first (the host's bytes), whose arithmetic,
// comparisons and conversions are kernels/wgsl/int64.wgsl's, so int64
// indices, targets and the indices ops return (int64 on every device)
// work as on the cpu. Bool tensors are stored as one 32-bit word per
// element. WGSL has no 8- or 16-bit storage either: float16 and bfloat16
// are packed two to a word, int8 and uint8 four, and every kernel gets
// them widened to float32 or int32 and rounds its result once
// (dispatch.ViaCompute over narrow.go's convert, kernels/wgsl/convert.wgsl),
// so they compute exactly as the cpu's do.
//
// Ops are recorded into one command encoder, their dispatches sharing a
// compute pass, and submitted together when data is read back, written, or
// synchronized, or every 1024 ops; lw_flush lets at most 4 submissions run
// unfinished, so a program that never waits stays bounded. launch checks a
// dispatch's bindings and workgroups before Dawn sees them; a bind group
// that Dawn still refuses fails its own op and records nothing, and an
// error Dawn finds in a submission names the ops it held.
//
// On lavapipe most of a small op's cost is lavapipe waking its worker
// threads for each dispatch (about 9 of 15 µs of CPU for a 1-element add on
// two cores): LP_NUM_THREADS=0, which Mesa reads, runs dispatches on
// lavapipe's queue thread instead, for programs of many small ops, at the
// cost of one thread for large kernels.
//
// The files: cdecl.h declares the part of webgpu.h that lathe uses and
// shim.c's functions, shim.c opens Dawn and makes its multi-call
// sequences, and dawn.go, the one file that imports "C", wraps each of
// them; the rest is plain Go over those wrappers: device.go (the one
// device, its errors and submissions), backend.go (the dispatch.Backend),
// buffer.go (tensor buffers and the pools), launch.go (pipelines and
// dispatches), checks.go (value checks), kernel.go and ops_*.go (the
// kernels), narrow.go and packed.go (the narrow dtypes' conversion and
// storage), library.go (finding Dawn and lavapipe). Without cgo, nocgo.go
// registers wgpu as unavailable.
package wgpu
