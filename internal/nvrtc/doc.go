// Package nvrtc compiles lathe's CUDA C kernels (kernels/cuda) to PTX with
// NVIDIA's runtime compiler, NVRTC, opened with dlopen so that nothing of
// CUDA is needed to build lathe. `make kernels` (build/nvrtc) writes the PTX
// that is committed under kernels/ptx with a manifest of what it was made
// from (Sums), and the kernels check in `make test` (kernels/ptx's
// TestFresh) sees from the manifest that the committed files are fresh,
// compiling the sources again where the tree differs from it.
//
// The library is NVRTC 11.8 from Debian's non-free component, which
// `make deps` unpacks into .deps/cuda. Its PTX is ISA 7.8 at most, which
// every driver since CUDA 11.8 JIT-compiles for its GPU, sm_90 included.
package nvrtc
