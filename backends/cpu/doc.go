// Package cpu is lathe's CPU backend: plain Go loops, spread over goroutines
// for large tensors, and OpenBLAS or gonum's BLAS for matrix products. It is
// always available; importing it registers the "cpu" device with dispatch.
//
// A cpu buffer is a Go slice of the dtype's type ([]float32, ..., []bool),
// so memory is the garbage collector's and Release only returns it sooner,
// to lathe's caching allocator (package alloc). No buffer may be larger than
// the memory the cpu device may use: the machine's (MemTotal in
// /proc/meminfo), or the byte count in the environment variable
// LATHE_CPU_MEMORY (such as 16GiB), read once; a larger one is
// ErrOutOfMemory instead of Go's fatal "out of memory".
//
// The one file that imports "C" is cgo.go: thin wrappers over shim.c
// (declared in cdecl.h), which opens OpenBLAS with dlopen for matrix
// products (gonum's BLAS where it does not open, or with LATHE_BLAS=gonum)
// and holds the AVX2 loops of a float32 sum and softmax row (the Go loops
// on a CPU without AVX2). Without cgo, nocgo.go stands in: gonum and the
// Go loops do all the work.
package cpu
