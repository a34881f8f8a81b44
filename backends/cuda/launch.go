package cuda

import "github.com/lathe-ml/lathe/dispatch"

// This file is the contract between the host side of the backend (driver
// binding, allocator, streams: owned by the host code) and the kernels'
// registrations (ops_*.go: one file per op family). The registrations call
// devicePtr and register here, and launch and scratch, which the host side
// defines (backend.go; without cgo, nocgo.go's stubs).

// devicePtr returns the device address of element 0 of t's view: its
// storage's base address plus t.Offset elements.
func devicePtr(t *dispatch.Tensor) uint64 {
	b, ok := t.Storage.Buffer.(*buffer)
	if !ok {
		return 0 // dispatch gives a cuda kernel only cuda tensors
	}
	size, _ := elemSize(t.DType)
	return b.ptr() + uint64(t.Offset)*uint64(size)
}

// dtypes are the dtypes the PTX has kernels for: not yet float16,
// bfloat16, int8 or uint8, which the device cannot hold either (Holds). A
// kernel registers the part of them that it handles; dispatch refuses the
// others, for every backend in the same words.
const dtypes = dispatch.Wide

// register gives op a cuda kernel for inputs whose first argument has a
// dtype in set, less those the PTX has none for: a schema set such as
// dispatch.Floats may hold dtypes that no kernel here computes.
func register[A any](op *dispatch.Op[A], set dispatch.DTypeSet, k dispatch.Kernel[A]) {
	dispatch.RegisterKernel(kind, op, set&dtypes, k)
}
