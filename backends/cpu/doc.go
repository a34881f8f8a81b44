// Package cpu is lathe's CPU backend: plain Go loops, spread over goroutines
// for large tensors, and gonum's BLAS for matrix products. It is always
// available; importing it registers the "cpu" device with dispatch.
//
// A cpu buffer is a Go slice of the dtype's type ([]float32, ..., []bool),
// so memory is the garbage collector's and Release only returns it sooner,
// to lathe's caching allocator (package alloc). No buffer may be larger than
// the memory the cpu device may use: the machine's (MemTotal in
// /proc/meminfo), or the byte count in the environment variable
// LATHE_CPU_MEMORY (such as 16GiB), read once; a larger one is
// ErrOutOfMemory instead of Go's fatal "out of memory".
package cpu
