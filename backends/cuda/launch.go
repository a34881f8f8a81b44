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

// dtypes are the dtypes a cuda device holds (Holds): every dtype. The PTX
// kernels compute the wide ones; the narrow ones (float16, bfloat16, int8,
// uint8) are stored narrow and computed in float32 or int32 by the same
// kernels, through dispatch.ViaCompute and narrow.cu's conversions
// (narrow.go), but where a kernel computes the 16-bit floats in place:
// the elementwise families, whose templates have float16 and bfloat16
// instantiations that convert in registers (ops_elementwise.go's native),
// matmul where cuBLAS has cublasGemmStridedBatchedEx (matmul.go) and conv's
// forward (ops_conv.go). Native kernels for the rest (reductions, softmax,
// norms, attention, indexing), which would skip the conversions' passes and
// the wide temporaries, are owed.
const dtypes = dispatch.AllTypes

// register gives op a cuda kernel, k, for inputs whose first argument has
// a dtype in set, and returns the kernel it registered. k is written for
// set's wide dtypes; a narrow one reaches it widened and comes back rounded
// once (dispatch.ViaCompute), so a set that holds float32 takes the 16-bit
// floats too, and one that holds int32 the 8-bit integers
// (dispatch.Computable). dispatch refuses the other dtypes, for every
// backend in the same words.
func register[A any](op *dispatch.Op[A], set dispatch.DTypeSet, k dispatch.Kernel[A]) dispatch.Kernel[A] {
	wrapped := fresh(dispatch.ViaCompute(computing{}, convert, k))
	dispatch.RegisterKernel(kind, op, dispatch.Computable(set), wrapped)
	return wrapped
}

// fresh is k refusing an argument from a device that Close closed (stale).
func fresh[A any](k dispatch.Kernel[A]) dispatch.Kernel[A] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) error {
		if err := stale(in...); err != nil {
			return err
		}
		return k(out, in, a)
	}
}

// A halfKernel computes a call with a float16 or bfloat16 tensor (its
// result or an argument) in the tensors' own dtypes, with no float32
// temporaries, where it can; done is false, and nothing ran, where it
// cannot (no cuBLAS for the 16-bit floats, a layout it does not take, an
// 8-bit integer beside the 16-bit float).
type halfKernel[A any] func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) (done bool, err error)

// registerHalves is register for a kernel k with a native path for the
// 16-bit floats, half, which a call with a float16 or bfloat16 tensor
// tries first; the calls it does not do take register's float32
// temporaries to k.
func registerHalves[A any](op *dispatch.Op[A], set dispatch.DTypeSet, half halfKernel[A], k dispatch.Kernel[A]) dispatch.Kernel[A] {
	wide := dispatch.ViaCompute(computing{}, convert, k)
	both := func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) error {
		if hasHalf(out, in) {
			if done, err := half(out, in, a); done {
				return err
			}
		}
		return wide(out, in, a)
	}
	checked := fresh(both)
	dispatch.RegisterKernel(kind, op, dispatch.Computable(set), checked)
	return checked
}

// hasHalf reports whether out or one of in is a float16 or bfloat16 tensor.
func hasHalf(out *dispatch.Tensor, in []*dispatch.Tensor) bool {
	if dispatch.Halves.Has(out.DType) {
		return true
	}
	for _, t := range in {
		if dispatch.Halves.Has(t.DType) {
			return true
		}
	}
	return false
}
