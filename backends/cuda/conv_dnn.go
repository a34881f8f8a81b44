package cuda

import (
	"math"
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// Convolution by cuDNN (cudnn.go), where the device has it: each of the
// three ops is one cuDNN call on the row-major tensors, with no column
// matrix. The im2col path (ops_conv.go) takes what cuDNN does not: a device
// without it, windows of more than 3 dims, sizes past its int, and a case
// it has no deterministic algorithm for.

// dnnDir is a direction of convolution: the values of cdecl_cudnn.h's
// LATHE_DNN_*.
type dnnDir int

const (
	dnnForward dnnDir = iota // y from x and w
	dnnData                  // dx from dy and w
	dnnFilter                // dw from x and dy
)

// dnnCase is a convolution as cuDNN's descriptors hold it: rank-dimensional
// row-major tensors (batch, channels, 2 or 3 spatial dims; a 1-d
// convolution gains a spatial dim of 1 in front) and the window.
type dnnCase struct {
	dir                   dnnDir
	dtype                 dispatch.DType
	rank                  int
	x, w, y               [5]int
	pad, stride, dilation [3]int
	groups                int
}

// dnnJob is a case and its device addresses: the operands in the order
// that cuDNN's call takes them (forward x and w, data w and dy, filter x
// and dy) and the result.
type dnnJob struct {
	dnnCase
	a, b, out uint64
}

// newDNNCase describes a convolution of x (N, C, spatial...) by w (O,
// C/groups, kernel...) into y; ok is false where cuDNN's descriptors cannot
// hold it.
func newDNNCase(dir dnnDir, dt dispatch.DType, x, w, y []int, win layout.Window, groups int) (c dnnCase, ok bool) {
	dims := win.Dims()
	if dims < 1 || dims > 3 || len(x) != dims+2 || len(w) != dims+2 || len(y) != dims+2 || groups < 1 {
		return c, false
	}
	for _, s := range [][]int{x, w, y} {
		// cuDNN's descriptors hold ints, and its convolutions take tensors
		// of fewer than 2^31 elements.
		if dispatch.Numel(s) > math.MaxInt32 || slices.Max(s) > math.MaxInt32 {
			return c, false
		}
	}
	c = dnnCase{dir: dir, dtype: dt, rank: max(dims, 2) + 2, groups: groups}
	lead := 0 // the spatial dim of 1 that a 1-d convolution gains
	if dims == 1 {
		lead = 1
		c.x[2], c.w[2], c.y[2] = 1, 1, 1
		c.stride[0], c.dilation[0] = 1, 1
	}
	copy(c.x[:2], x[:2])
	copy(c.w[:2], w[:2])
	copy(c.y[:2], y[:2])
	copy(c.x[2+lead:], x[2:])
	copy(c.w[2+lead:], w[2:])
	copy(c.y[2+lead:], y[2:])
	for i := range dims {
		p, s, d := win.Padding[i], win.Stride[i], win.Dilation[i]
		if p > math.MaxInt32 || s > math.MaxInt32 || d > math.MaxInt32 {
			return c, false
		}
		c.pad[lead+i], c.stride[lead+i], c.dilation[lead+i] = p, s, d
	}
	return c, true
}

// dnnConvolve runs one of convolution's ops by cuDNN: out = op(a, b), with
// a and b in the order cuDNN's call takes them (dnnJob), and the shapes of
// the forward x, w and y. used is false, and nothing ran, where the device
// has no cuDNN or cuDNN does not take the case, or the op has no product
// to run (an empty result or operand: the callers fill or skip it); a
// float16 or bfloat16
// operand that is not contiguous is not taken either (a row-major copy of
// it needs the 16-bit copy kernels, which are owed).
func dnnConvolve(dir dnnDir, out, a, b *dispatch.Tensor, x, w, y []int, win layout.Window, groups int) (used bool, err error) {
	if !dnnOn(out.Device) || out.Numel() == 0 || a.Numel() == 0 || b.Numel() == 0 {
		return false, nil
	}
	c, ok := newDNNCase(dir, out.DType, x, w, y, win, groups)
	if !ok || dispatch.Halves.Has(out.DType) && !(viewOf(a).contiguous() && viewOf(b).contiguous()) {
		return false, nil
	}
	av, freeA, err := rowMajor(a)
	if err != nil {
		return true, err
	}
	defer freeA()
	bv, freeB, err := rowMajor(b)
	if err != nil {
		return true, err
	}
	defer freeB()
	return dnn(out.Device, dnnJob{dnnCase: c, a: av.ptr, b: bv.ptr, out: addressOf(out)})
}
