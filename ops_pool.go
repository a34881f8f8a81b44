package lathe

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Pooling over the spatial dims of an (N, C, d1, ..., dk) tensor, k = 1, 2
// or 3, as torch.nn.functional defines it; an unbatched (C, d1, ..., dk)
// input works too, as in PyTorch. Sizes and options follow options_window.go:
//
//	y := x.MaxPool2d(3, lathe.Stride(2), lathe.Padding(1))
//	y := x.AvgPool2d(2, lathe.CeilMode(), lathe.ExcludePadding())
//	y := x.AdaptiveAvgPool2d(1)
//
// Every pooling has first and second derivatives: its backward pass is an
// op with a gradient rule of its own (dispatch/ops_pool.go).

// AvgPool1d is average pooling over the last dim of an (N, C, L) tensor
// with a window of kernel (torch.nn.functional.avg_pool1d). Options:
// Stride (default: kernel), Padding (zeros, at most half the kernel),
// CeilMode, ExcludePadding (count_include_pad=False), Divisor
// (divisor_override), KernelSize.
func (x *Tensor) AvgPool1d(kernel int, opts ...WindowOption) *Tensor {
	return x.avgPool(1, kernel, opts)
}

// AvgPool2d is average pooling over an (N, C, H, W) tensor
// (torch.nn.functional.avg_pool2d); the options are AvgPool1d's.
func (x *Tensor) AvgPool2d(kernel int, opts ...WindowOption) *Tensor {
	return x.avgPool(2, kernel, opts)
}

// AvgPool3d is average pooling over an (N, C, D, H, W) tensor
// (torch.nn.functional.avg_pool3d); the options are AvgPool1d's.
func (x *Tensor) AvgPool3d(kernel int, opts ...WindowOption) *Tensor {
	return x.avgPool(3, kernel, opts)
}

// MaxPool1d is max pooling over the last dim of an (N, C, L) tensor
// (torch.nn.functional.max_pool1d), padded with -inf. Options: Stride
// (default: kernel), Padding (at most half the kernel), Dilation, CeilMode,
// KernelSize. A NaN in a window is its maximum. A dilated window that reads
// only padding has no maximum and is an ErrValue (PyTorch returns -inf there
// with an index outside the plane, which its backward writes through).
func (x *Tensor) MaxPool1d(kernel int, opts ...WindowOption) *Tensor {
	v, _ := x.maxPool(1, kernel, opts, false)
	return v
}

// MaxPool2d is max pooling over an (N, C, H, W) tensor
// (torch.nn.functional.max_pool2d); the options are MaxPool1d's.
func (x *Tensor) MaxPool2d(kernel int, opts ...WindowOption) *Tensor {
	v, _ := x.maxPool(2, kernel, opts, false)
	return v
}

// MaxPool3d is max pooling over an (N, C, D, H, W) tensor
// (torch.nn.functional.max_pool3d); the options are MaxPool1d's.
func (x *Tensor) MaxPool3d(kernel int, opts ...WindowOption) *Tensor {
	v, _ := x.maxPool(3, kernel, opts, false)
	return v
}

// MaxPool1dWithIndices is MaxPool1d that also returns the index of each
// maximum within its (n, c) plane (return_indices=True), as Int64 on every
// device, which MaxUnpool takes.
func (x *Tensor) MaxPool1dWithIndices(kernel int, opts ...WindowOption) (values, indices *Tensor) {
	return x.maxPool(1, kernel, opts, true)
}

// MaxPool2dWithIndices is MaxPool2d that also returns the index of each
// maximum within its (n, c) plane, row-major over H×W (return_indices=True),
// as Int64 on every device, which MaxUnpool2d takes.
func (x *Tensor) MaxPool2dWithIndices(kernel int, opts ...WindowOption) (values, indices *Tensor) {
	return x.maxPool(2, kernel, opts, true)
}

// MaxPool3dWithIndices is MaxPool3d that also returns the indices of the
// maxima within their (n, c) planes (return_indices=True).
func (x *Tensor) MaxPool3dWithIndices(kernel int, opts ...WindowOption) (values, indices *Tensor) {
	return x.maxPool(3, kernel, opts, true)
}

// AdaptiveAvgPool1d averages an (N, C, L) tensor down to length size: the
// window of output place i covers [floor(i·L/size), ceil((i+1)·L/size))
// (torch.nn.functional.adaptive_avg_pool1d).
func (x *Tensor) AdaptiveAvgPool1d(size int) *Tensor { return x.adaptiveAvgPool(1, []int{size}) }

// AdaptiveAvgPool2d averages an (N, C, H, W) tensor down to the spatial
// size given, one value for both dims or one per dim
// (torch.nn.functional.adaptive_avg_pool2d); AdaptiveAvgPool2d(1) is global
// average pooling.
func (x *Tensor) AdaptiveAvgPool2d(size ...int) *Tensor { return x.adaptiveAvgPool(2, size) }

// AdaptiveAvgPool3d averages an (N, C, D, H, W) tensor down to the spatial
// size given, one value for all dims or one per dim.
func (x *Tensor) AdaptiveAvgPool3d(size ...int) *Tensor { return x.adaptiveAvgPool(3, size) }

// AdaptiveMaxPool2d takes the maximum of an (N, C, H, W) tensor over
// AdaptiveAvgPool2d's windows (torch.nn.functional.adaptive_max_pool2d).
func (x *Tensor) AdaptiveMaxPool2d(size ...int) *Tensor {
	v, _ := x.adaptiveMaxPool(2, size, false)
	return v
}

// AdaptiveMaxPool2dWithIndices is AdaptiveMaxPool2d that also returns the
// index (Int64, on every device) of each maximum within its (n, c) plane.
func (x *Tensor) AdaptiveMaxPool2dWithIndices(size ...int) (values, indices *Tensor) {
	return x.adaptiveMaxPool(2, size, true)
}

// MaxUnpool2d is the partial inverse of MaxPool2dWithIndices
// (torch.nn.functional.max_unpool2d): x's values written at indices into
// zeros of the pooled input's size. kernel, Stride and Padding are the
// pooling's, and give the size (H-1)·stride - 2·padding + kernel unless
// OutputSize names another that the pooling can have come from. Indices
// outside the result are ErrIndex.
func (x *Tensor) MaxUnpool2d(indices *Tensor, kernel int, opts ...WindowOption) *Tensor {
	const op = "max_unpool"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := indices.CheckArg(op, "indices"); err != nil {
		return failed(err)
	}
	idx := indices
	if x.Rank() == 3 {
		idx = indices.Unsqueeze(0)
	}
	return batched(x, 2, func(x *Tensor) *Tensor {
		o := windowOpts(opts)
		w, err := poolWindow(op, 2, kernel, o, false)
		if err != nil {
			return failed(err)
		}
		size, err := unpoolSize(op, w, x.t.Shape[2:], o.outputSize)
		if err != nil {
			return failed(err)
		}
		return apply(ops.MaxUnpool, ops.PoolScatter{Size: size}, x, idx)
	})
}

// unpoolSize is the spatial size of a max unpooling of spatial sizes in:
// the default, or the one asked for if a pooling could have given in from
// it (PyTorch's _unpool_output_size: within the stride of the default).
func unpoolSize(op string, w layout.Window, in, asked []int) ([]int, error) {
	size := make([]int, len(in))
	for d, n := range in {
		size[d] = (n-1)*w.Stride[d] - 2*w.Padding[d] + w.Kernel[d]
	}
	if asked == nil {
		return size, nil
	}
	if len(asked) != len(in) {
		return nil, countError(op, "output_size", len(asked), len(in))
	}
	for d, s := range asked {
		if s <= size[d]-w.Stride[d] || s >= size[d]+w.Stride[d] {
			return nil, errorf(op, ErrValue, "output_size", "is "+dispatch.FormatShape(asked)+": dim "+strconv.Itoa(d)+" must be between "+
				strconv.Itoa(size[d]-w.Stride[d]+1)+" and "+strconv.Itoa(size[d]+w.Stride[d]-1),
				"use a size that the pooling could have come from, or leave it out")
		}
	}
	return slices.Clone(asked), nil
}

func (x *Tensor) avgPool(nd, kernel int, opts []WindowOption) *Tensor {
	const op = "avg_pool"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	o := windowOpts(opts)
	w, err := poolWindow(op, nd, kernel, o, true)
	if err != nil {
		return failed(err)
	}
	if o.divisorSet && o.divisor == 0 {
		return failed(errorf(op, ErrValue, "divisor", "is 0", "use a non-zero divisor, or leave the option out to divide by the window's count"))
	}
	a := ops.AvgPoolParams{Window: w, ExcludePadding: o.excludePad, Divisor: o.divisor}
	return batched(x, nd, func(x *Tensor) *Tensor { return apply(ops.AvgPool, a, x) })
}

func (x *Tensor) maxPool(nd, kernel int, opts []WindowOption, withIndices bool) (values, indices *Tensor) {
	const op = "max_pool"
	if err := x.check(op); err != nil {
		return failed(err), failed(err)
	}
	o := windowOpts(opts)
	w, err := poolWindow(op, nd, kernel, o, false)
	if err != nil {
		return failed(err), failed(err)
	}
	if !withIndices {
		return batched(x, nd, func(x *Tensor) *Tensor { return apply(ops.MaxPool, w, x) }), nil
	}
	return gatherMax(x, nd, ops.MaxPoolIndices, w)
}

func (x *Tensor) adaptiveAvgPool(nd int, size []int) *Tensor {
	const op = "adaptive_avg_pool"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	s, err := adaptiveSize(op, nd, size)
	if err != nil {
		return failed(err)
	}
	return batched(x, nd, func(x *Tensor) *Tensor { return apply(ops.AdaptiveAvgPool, ops.AdaptivePool{Size: s}, x) })
}

func (x *Tensor) adaptiveMaxPool(nd int, size []int, withIndices bool) (values, indices *Tensor) {
	const op = "adaptive_max_pool"
	if err := x.check(op); err != nil {
		return failed(err), failed(err)
	}
	s, err := adaptiveSize(op, nd, size)
	if err != nil {
		return failed(err), failed(err)
	}
	a := ops.AdaptivePool{Size: s}
	if !withIndices {
		return batched(x, nd, func(x *Tensor) *Tensor { return apply(ops.AdaptiveMaxPool, a, x) }), nil
	}
	return gatherMax(x, nd, ops.AdaptiveMaxPoolIndices, a)
}

// gatherMax is max pooling with its indices, in the two ops that the
// max_pool composite runs: the indices of the maxima, then the values
// there, gathered so that the gradient flows to x.
func gatherMax[A any](x *Tensor, nd int, indicesOp *dispatch.Op[A], a A) (values, indices *Tensor) {
	indices = batched(x, nd, func(x *Tensor) *Tensor { return apply(indicesOp, a, x) })
	if err := indices.Err(); err != nil {
		return failed(err), indices
	}
	values = batched(x, nd, func(b *Tensor) *Tensor {
		idx := indices
		if b != x {
			idx = indices.Unsqueeze(0)
		}
		return apply(ops.PoolGather, none, b, idx)
	})
	return values, indices
}

// adaptiveSize expands an adaptive pooling's output size to nd values.
func adaptiveSize(op string, nd int, size []int) ([]int, error) {
	if len(size) == 0 {
		return nil, errorf(op, ErrValue, "output_size", "is empty", "give one size for all spatial dims, or one per dim")
	}
	s, ok := spatial(size, nd, 0)
	if !ok {
		return nil, countError(op, "output_size", len(size), nd)
	}
	return s, nil
}

// poolWindow makes a pooling's window from its kernel size and options,
// with PyTorch's defaults (stride = kernel), refusing the options that do
// not apply. layout.Window.Check then checks the values.
func poolWindow(op string, nd, kernel int, o windowOptions, avg bool) (layout.Window, error) {
	var w layout.Window
	bad := func(opt, detail string) error {
		return errorf(op, ErrValue, opt, detail, "leave the option out")
	}
	switch {
	case o.samePadding:
		return w, bad("padding", `"same" applies to convolution, not pooling`)
	case o.outputPadding != nil:
		return w, bad("output_padding", "applies to transposed convolution, not pooling")
	case o.groupsSet:
		return w, bad("groups", "applies to convolution, not pooling")
	case avg && o.dilation != nil:
		return w, bad("dilation", "applies to max pooling, not average pooling")
	case !avg && (o.excludePad || o.divisorSet):
		return w, bad("count_include_pad", "ExcludePadding and Divisor apply to average pooling only")
	}
	ks := o.kernel
	if ks == nil {
		ks = []int{kernel}
	}
	var ok [4]bool
	w.Kernel, ok[0] = spatial(ks, nd, 0)
	w.Stride, ok[1] = spatial(o.stride, nd, 0)
	w.Padding, ok[2] = spatial(o.padding, nd, 0)
	w.Dilation, ok[3] = spatial(o.dilation, nd, 1)
	for i, name := range []string{"kernel_size", "stride", "padding", "dilation"} {
		if !ok[i] {
			vals := [][]int{ks, o.stride, o.padding, o.dilation}[i]
			return w, countError(op, name, len(vals), nd)
		}
	}
	if o.stride == nil {
		copy(w.Stride, w.Kernel)
	}
	w.CeilMode = o.ceilMode
	return w, nil
}

// batched runs f on x as a batch: an unbatched (C, d1, ..., dk) input
// gets a batch dim of 1 for f and loses it again, as PyTorch's pooling
// does. Other ranks go to f as they are, whose op reports them.
func batched(x *Tensor, nd int, f func(*Tensor) *Tensor) *Tensor {
	if x.Rank() != nd+1 {
		return f(x)
	}
	return f(x.Unsqueeze(0)).Squeeze(0)
}
