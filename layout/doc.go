// Package layout is the geometry that every backend's kernels share: how
// several operands walk one shape together (broadcast strides, and the
// collapsing of dims that a kernel's index arithmetic does not need), the
// window of convolution and pooling (output sizes, the taps that fall
// inside the input), interpolation's 1-d filters, pad's surviving region,
// and a matmul operand seen as a batch of matrices.
//
// It sits beside dispatch's core, below the backends (DESIGN.md): the op
// schemas (dispatch/ops) use it to infer shapes, and each backend uses it
// to lay out its kernels' arguments, so a new backend writes kernels, not
// another dim-collapsing loop. It holds plain functions over shapes and
// strides in elements; the only tensors it sees are dispatch's.
package layout
