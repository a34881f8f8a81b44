// Package emu runs lathe's CUDA kernels (kernels/cuda/*.cu, unchanged) on
// the CPU, so that their logic is tested where there is no GPU: its test
// compiles each testdata/*_test.cpp (a kernel source included after
// internal/cudaemu/simt.h, which emulates the CUDA built-ins the kernels use
// with a std::thread per GPU thread) with the host's C++ compiler and runs
// it.
// What it checks is indexing, layouts, reduction trees across warps and
// blocks, and the NaN, tie and infinity rules; not speed, and not the GPU's
// math functions, which are the host libm's here.
package emu
