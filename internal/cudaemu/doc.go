// Package cudaemu runs lathe's CUDA kernels on the host, so that they are
// tested where there is no GPU. Load compiles every kernels/cuda module
// (unchanged) with the host's C++ compiler against simt.h, which emulates
// the CUDA built-ins the kernels use (each GPU thread a fiber on the
// launching host thread, switching at barriers), into one shared library,
// and opens it; an Emulator launches kernels by name with the arguments
// the cuda backend passes to cuLaunchKernel, and device memory is host
// memory (Alloc).
//
// Two kinds of tests use it: this package's, which launch each kernel
// family on the cases whose semantics are easy to get wrong (indexing and
// layouts, reduction trees across warps and blocks, grid-stride loops, the
// NaN, tie, infinity and wrapping rules) and compare with a direct
// transcription of the rule; and the cuda backend's (backends/cuda,
// emulate_test.go), which run every registered kernel end to end and
// compare with the cpu backend. What it checks is the kernels' logic, not
// their speed, nor the GPU's math functions, which are the host libm's
// here. Slow: meant for small tensors.
package cudaemu
