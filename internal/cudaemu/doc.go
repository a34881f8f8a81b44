// Package cudaemu runs lathe's CUDA kernels on the host, so that they are
// tested where there is no GPU. Load compiles every kernels/cuda module
// (unchanged) with the host's C++ compiler against simt.h, which emulates
// the CUDA built-ins the kernels use with a std::thread per GPU thread,
// into one shared library, and opens it; an Emulator launches kernels by
// name with the arguments the cuda backend passes to cuLaunchKernel, and
// device memory is host memory (Alloc).
//
// The emulation tests the kernels' logic, not their speed, nor the GPU's
// math functions, which are the host libm's here. Slow: meant for small
// tensors.
package cudaemu
