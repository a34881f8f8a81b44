// Package lathe is a tensor engine for Go in the style of PyTorch's eager
// mode: one API over real kernels on the CPU, CUDA and WebGPU.
//
// A *Tensor is an immutable handle. Ops are methods that return new tensors
// (views share storage), run at once on the device of their first argument,
// and never panic: an op that cannot run returns a failed tensor whose Err
// says why, in an *Error naming the op, the argument, the fix and the
// caller's file:line. Ops on a failed tensor return it failed again, so a
// chain is checked once, where its data is read:
//
//	y := x.MatMul(w).Add(b).ReLU().Sum(1)
//	vals, err := y.Float32s() // the first error anywhere up the chain
//
// lathe does not move data behind the caller's back: a tensor on another
// device is an error with the fix. Elementwise ops promote dtypes as
// PyTorch's torch.result_type (an int32 and a float32 tensor add in
// float32); the ops that torch does not promote (matmul, convolution,
// layer_norm's weight, ...) refuse another dtype with the fix.
//
// Importing lathe links every backend; Devices lists those this machine can
// open and DeviceStatus says why the others cannot be.
package lathe
