package lathe

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Convolution, transposed convolution, and unfold/fold (im2col/col2im), as
// torch.nn.functional's conv1d, conv2d, conv3d, conv_transpose1d/2d/3d,
// unfold and fold. On the cpu they run as im2col + GEMM. Gradients of every
// order flow through them: their backward passes are ops with rules of
// their own. The convolutions also take an unbatched (C, d1, ..., dk)
// input, as PyTorch's do, and return an unbatched result.

// Conv1d convolves x (N, C, L) with w (O, C/groups, k) and adds b (O),
// or no bias when b is nil (torch.nn.functional.conv1d). Options: Stride,
// Padding, PaddingSame, Dilation, Groups.
func (x *Tensor) Conv1d(w, b *Tensor, opts ...WindowOption) *Tensor {
	return batched(x, 1, func(x *Tensor) *Tensor { return x.conv("conv1d", 1, w, b, opts) })
}

// Conv2d convolves x (N, C, H, W) with w (O, C/groups, kh, kw) and adds b
// (O), or no bias when b is nil (torch.nn.functional.conv2d). Groups equal
// to C with O a multiple of C is a depthwise convolution.
func (x *Tensor) Conv2d(w, b *Tensor, opts ...WindowOption) *Tensor {
	return batched(x, 2, func(x *Tensor) *Tensor { return x.conv("conv2d", 2, w, b, opts) })
}

// Conv3d convolves x (N, C, D, H, W) with w (O, C/groups, kd, kh, kw) and
// adds b (O), or no bias when b is nil (torch.nn.functional.conv3d).
func (x *Tensor) Conv3d(w, b *Tensor, opts ...WindowOption) *Tensor {
	return batched(x, 3, func(x *Tensor) *Tensor { return x.conv("conv3d", 3, w, b, opts) })
}

// ConvTranspose1d is the transposed convolution of x (N, C, L) with w
// (C, O/groups, k), plus b (O) unless it is nil
// (torch.nn.functional.conv_transpose1d); see ConvTranspose2d.
func (x *Tensor) ConvTranspose1d(w, b *Tensor, opts ...WindowOption) *Tensor {
	return batched(x, 1, func(x *Tensor) *Tensor { return x.convTranspose("conv_transpose1d", 1, w, b, opts) })
}

// ConvTranspose2d is the transposed convolution of x (N, C, H, W) with w
// (C, O/groups, kh, kw), plus b (O) unless it is nil
// (torch.nn.functional.conv_transpose2d): the gradient of Conv2d with
// respect to its input, so each output size is (H-1)·stride - 2·padding +
// dilation·(k-1) + output_padding + 1. Options: Stride, Padding, Dilation,
// Groups, OutputPadding, which must be below the stride or the dilation,
// as PyTorch requires.
func (x *Tensor) ConvTranspose2d(w, b *Tensor, opts ...WindowOption) *Tensor {
	return batched(x, 2, func(x *Tensor) *Tensor { return x.convTranspose("conv_transpose2d", 2, w, b, opts) })
}

// ConvTranspose3d is the transposed convolution of x (N, C, D, H, W) with
// w (C, O/groups, kd, kh, kw), plus b (O) unless it is nil
// (torch.nn.functional.conv_transpose3d); see ConvTranspose2d.
func (x *Tensor) ConvTranspose3d(w, b *Tensor, opts ...WindowOption) *Tensor {
	return batched(x, 3, func(x *Tensor) *Tensor { return x.convTranspose("conv_transpose3d", 3, w, b, opts) })
}

// transposedSize is a transposed convolution's output size along one dim,
// (n-1)·s - 2p + d·(k-1) + op + 1, and false where a step passes an int
// (the terms are added with -2p first, so that for n ≥ 1 and k ≥ 1 a
// step that overflows means the size does).
func transposedSize(n, k, s, p, d, op int) (int, bool) {
	a, ok1 := dispatch.CheckedMul(n-1, s)
	p2, ok2 := dispatch.CheckedMul(2, p)
	b, ok3 := dispatch.CheckedMul(d, k-1)
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	size, ok := a, true
	for _, t := range []int{-p2, b, op, 1} {
		if size, ok = dispatch.CheckedAdd(size, t); !ok {
			return 0, false
		}
	}
	return size, true
}

// convTranspose is conv_input_backward with the output size that the
// options give: one implementation for the gradient and the layer.
func (x *Tensor) convTranspose(name string, nd int, w, b *Tensor, opts []WindowOption) (out *Tensor) {
	if err := checkAll(name, x, w, b); err != nil {
		return failed(err)
	}
	var temps []*Tensor // autocast's casts and a padded x: see conv
	defer func() { ReleaseWithGraph(out, temps...) }()
	xc, wc, bc, err := autocastConv(name, &ops.ConvInputBackward.Schema, x, w, b)
	if err != nil {
		return failed(err)
	}
	temps = append(temps, newOf([]*Tensor{x, w, b}, []*Tensor{xc, wc, bc})...)
	x, w, b = xc, wc, bc
	o := windowOpts(opts)
	if o.samePadding {
		return failed(errorf(name, ErrValue, "padding", `is "same", which a transposed convolution does not take`, "give the padding in numbers"))
	}
	if err := convRank(name, x, nd); err != nil {
		return failed(err)
	}
	a, err := convAttrs(name, o, nd)
	if err != nil {
		return failed(err)
	}
	op, ok := spatial(o.outputPadding, nd, 0)
	if !ok {
		return failed(countError(name, "output_padding", len(o.outputPadding), nd))
	}
	// conv_input_backward calls x "g"; the user's own names are checked here.
	switch {
	case !x.t.DType.IsFloat():
		return failed(errorf(name, ErrDType, "x", "is "+x.t.DType.String()+" but the op takes float32, float64", "cast it with .Cast(lathe.Float32)"))
	case w.t.DType != x.t.DType:
		return failed(errorf(name, ErrDType, "w", "is "+w.t.DType.String()+" but \"x\" is "+x.t.DType.String(), "cast one with .Cast("+x.t.DType.GoString()+")"))
	case w.t.Rank() != nd+2:
		return failed(errorf(name, ErrShape, "w", "has shape "+dispatch.FormatShape(w.t.Shape)+" but needs "+strconv.Itoa(nd+2)+
			" dims (in, out/groups, k...)", "give a weight of x's rank"))
	case w.t.Shape[0] != x.t.Shape[1]:
		return failed(errorf(name, ErrShape, "w", "has shape "+dispatch.FormatShape(w.t.Shape)+" but x has "+strconv.Itoa(x.t.Shape[1])+
			" channels (shape "+dispatch.FormatShape(x.t.Shape)+"): dim 0 must be the input channels", "give a weight of shape (in, out/groups, k...)"))
	}
	for _, f := range []struct {
		name string
		vals []int
	}{{"stride", a.Window.Stride}, {"dilation", a.Window.Dilation}} {
		if slices.Min(f.vals) < 1 {
			return failed(errorf(name, ErrValue, f.name, "is "+dispatch.FormatShape(f.vals)+", below 1", "use values of at least 1"))
		}
	}
	a.InputSize = make([]int, nd)
	pads := make([]int, 2*nd) // F.pad's order: the last dim's pair first
	for i := range nd {
		s, d := a.Window.Stride[i], a.Window.Dilation[i]
		// PyTorch: "output padding must be smaller than either stride or
		// dilation" (conv_transpose's shape check in Convolution.cpp).
		if op[i] < 0 || op[i] >= s && op[i] >= d {
			return failed(errorf(name, ErrValue, "output_padding", "is "+dispatch.FormatShape(op)+
				", but each value must be at least 0 and below the stride "+dispatch.FormatShape(a.Window.Stride)+
				" or the dilation "+dispatch.FormatShape(a.Window.Dilation), "use output_padding < max(stride, dilation)"))
		}
		if x.t.Shape[2+i] < 1 {
			// As conv_input_backward would find, and PyTorch says but for
			// an empty batch: output_padding past the stride would have
			// the zeros below give x a window.
			return failed(errorf(name, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+", with an empty spatial dim",
				"give x at least one element in each spatial dim"))
		}
		size, ok := transposedSize(x.t.Shape[2+i], w.t.Shape[2+i], s, a.Window.Padding[i], d, op[i])
		if !ok {
			return failed(errorf(name, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+
				", which gives an output size past what an int counts with kernel "+dispatch.FormatShape(w.t.Shape[2:])+
				", stride "+dispatch.FormatShape(a.Window.Stride)+" and dilation "+dispatch.FormatShape(a.Window.Dilation),
				"use a smaller kernel, stride or dilation"))
		}
		if size < 1 {
			return failed(errorf(name, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+
				", which gives an output size below 1 with padding "+dispatch.FormatShape(a.Window.Padding), "use less padding or a larger input"))
		}
		a.InputSize[i] = size
		// output_padding at or past the stride (below the dilation) makes
		// an output that conv over it would slide op/s windows further
		// over than x has: x gets them as zeros, which add nothing, so
		// that conv_input_backward's rule (g is conv's output of
		// InputSize) holds and every device runs its usual kernel.
		pads[2*(nd-1-i)+1] = op[i] / s
	}
	if slices.Max(pads) > 0 {
		x = x.Pad(pads, 0)
		temps = append(temps, x)
	}
	y := relabel(apply(ops.ConvInputBackward, a, x, w), name)
	return addBias(name, y, b, w.t.Shape[1]*a.Groups)
}

// Unfold extracts the sliding windows of x (N, C, H, W) as columns: the
// result is (N, C·kh·kw, L) with L the number of windows
// (torch.nn.functional.unfold, im2col). kernel holds one size, or one per
// spatial dim; options: Stride, Padding, Dilation.
func (x *Tensor) Unfold(kernel []int, opts ...WindowOption) *Tensor {
	const name = "unfold"
	if err := checkAll(name, x); err != nil {
		return failed(err)
	}
	win, err := unfoldWindow(name, kernel, opts)
	if err != nil {
		return failed(err)
	}
	return relabel(apply(ops.Unfold, ops.UnfoldParams{Window: win}, x), name)
}

// Fold sums columns x (N, C·kh·kw, L) back into images (N, C, outputSize...),
// adding where windows overlap (torch.nn.functional.fold, col2im): the
// adjoint of Unfold, with the same kernel and options.
func (x *Tensor) Fold(outputSize, kernel []int, opts ...WindowOption) *Tensor {
	const name = "fold"
	if err := checkAll(name, x); err != nil {
		return failed(err)
	}
	win, err := unfoldWindow(name, kernel, opts)
	if err != nil {
		return failed(err)
	}
	size, ok := spatial(outputSize, 2, 0)
	if !ok || len(outputSize) == 0 {
		return failed(countError(name, "output_size", len(outputSize), 2))
	}
	return relabel(apply(ops.Fold, ops.UnfoldParams{Window: win, OutputSize: size}, x), name)
}

func unfoldWindow(name string, kernel []int, opts []WindowOption) (layout.Window, error) {
	o := windowOpts(opts)
	if o.samePadding || o.groupsSet || o.outputPadding != nil {
		return layout.Window{}, errorf(name, ErrValue, "", "takes only Stride, Padding and Dilation", "drop the other options")
	}
	k, ok := spatial(kernel, 2, 0)
	if !ok || len(kernel) == 0 {
		return layout.Window{}, countError(name, "kernel_size", len(kernel), 2)
	}
	a, err := convAttrs(name, o, 2)
	if err != nil {
		return layout.Window{}, err
	}
	a.Window.Kernel = k
	return a.Window, nil
}

// conv is Conv1d, Conv2d and Conv3d: nd spatial dims.
func (x *Tensor) conv(name string, nd int, w, b *Tensor, opts []WindowOption) (out *Tensor) {
	if err := checkAll(name, x, w, b); err != nil {
		return failed(err)
	}
	// The op's own temporaries (autocast's casts, a padded x; addBias
	// hands over the product before its bias) go with the graph: nothing
	// else holds them, and left to the garbage collector each step would
	// take their memory anew.
	var temps []*Tensor
	defer func() { ReleaseWithGraph(out, temps...) }()
	xc, wc, bc, err := autocastConv(name, &ops.Conv.Schema, x, w, b)
	if err != nil {
		return failed(err)
	}
	temps = append(temps, newOf([]*Tensor{x, w, b}, []*Tensor{xc, wc, bc})...)
	x, w, b = xc, wc, bc
	o := windowOpts(opts)
	if o.outputPadding != nil {
		return failed(errorf(name, ErrValue, "output_padding", "is for transposed convolutions only", "drop OutputPadding, or use ConvTranspose2d"))
	}
	if err := convRank(name, x, nd); err != nil {
		return failed(err)
	}
	if o.samePadding {
		if o.padding != nil {
			return failed(errorf(name, ErrValue, "padding", "is given twice, as PaddingSame and as numbers", "keep one of them"))
		}
		unpadded := x
		var err error
		if x, o, err = padSame(name, x, w, o, nd); err != nil {
			return failed(err)
		}
		if x != unpadded {
			temps = append(temps, x)
		}
	}
	a, err := convAttrs(name, o, nd)
	if err != nil {
		return failed(err)
	}
	y := relabel(apply(ops.Conv, a, x, w), name)
	if y.err != nil {
		return y
	}
	return addBias(name, y, b, y.t.Shape[1])
}

// autocastConv casts a convolution's x, w and b (nil for none) as
// Autocast casts the convolution op s.
func autocastConv(name string, s *dispatch.Schema, x, w, b *Tensor) (*Tensor, *Tensor, *Tensor, error) {
	c, err := autocastInputs(s, x, w, b)
	if err != nil {
		return nil, nil, nil, located(err, name)
	}
	return c[0], c[1], c[2], nil
}

// padSame turns PaddingSame into numbers as PyTorch does: a total of
// dilation·(k-1) per dim, half on each side, the odd unit on the right.
// Symmetric padding stays the convolution's own; otherwise x is padded
// with zeros first (PyTorch pads the extra unit with F.pad too).
func padSame(name string, x, w *Tensor, o windowOptions, nd int) (*Tensor, windowOptions, error) {
	stride, ok := spatial(o.stride, nd, 1)
	if !ok {
		return nil, o, countError(name, "stride", len(o.stride), nd)
	}
	for _, s := range stride {
		if s != 1 {
			return nil, o, errorf(name, ErrValue, "padding", `is "same", which needs stride 1, but stride is `+dispatch.FormatShape(stride),
				"give the padding in numbers for a strided convolution")
		}
	}
	dil, ok := spatial(o.dilation, nd, 1)
	if !ok {
		return nil, o, countError(name, "dilation", len(o.dilation), nd)
	}
	if w.t.Rank() != nd+2 {
		return nil, o, errorf(name, ErrShape, "w", "has shape "+dispatch.FormatShape(w.t.Shape)+" but needs "+strconv.Itoa(nd+2)+" dims", "give a weight of shape (out, in/groups, k...)")
	}
	left, pads := make([]int, nd), make([]int, 2*nd)
	symmetric := true
	for i := range nd {
		total := dil[i] * (w.t.Shape[2+i] - 1)
		left[i] = total / 2
		pads[2*(nd-1-i)], pads[2*(nd-1-i)+1] = total/2, total-total/2
		symmetric = symmetric && total%2 == 0
	}
	o.samePadding = false
	if symmetric {
		o.padding = left
		return x, o, nil
	}
	o.padding = nil
	return x.Pad(pads, 0), o, nil
}

// convAttrs expands the options to one value per spatial dim.
func convAttrs(name string, o windowOptions, nd int) (ops.ConvParams, error) {
	var a ops.ConvParams
	var ok bool
	for _, f := range []struct {
		name string
		vals []int
		def  int
		dst  *[]int
	}{{"stride", o.stride, 1, &a.Window.Stride}, {"padding", o.padding, 0, &a.Window.Padding}, {"dilation", o.dilation, 1, &a.Window.Dilation}} {
		if *f.dst, ok = spatial(f.vals, nd, f.def); !ok {
			return a, countError(name, f.name, len(f.vals), nd)
		}
	}
	a.Groups = o.groups
	if !o.groupsSet {
		a.Groups = 1
	} else if a.Groups < 1 {
		return a, errorf(name, ErrValue, "groups", "is "+strconv.Itoa(a.Groups), "use at least one group")
	}
	return a, nil
}

// convRank refuses an x that is not (N, C) and nd spatial dims.
func convRank(name string, x *Tensor, nd int) error {
	if x.t.Rank() != nd+2 {
		return errorf(name, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" but needs "+strconv.Itoa(nd+2)+
			" dims (N, C and "+strconv.Itoa(nd)+" spatial), or "+strconv.Itoa(nd+1)+" unbatched", "use the op of x's rank")
	}
	return nil
}

// addBias adds b (o) over the channel dim of y, or returns y for a nil b.
func addBias(name string, y, b *Tensor, o int) *Tensor {
	if b == nil || y.err != nil {
		return y
	}
	if b.t.Rank() != 1 || b.t.Shape[0] != o {
		return failed(errorf(name, ErrShape, "b", "has shape "+dispatch.FormatShape(b.t.Shape)+" but needs ["+strconv.Itoa(o)+"], one per output channel",
			"give a 1-d bias of the output channel count, or nil"))
	}
	if b.t.DType != y.t.DType {
		return failed(errorf(name, ErrDType, "b", "is "+b.t.DType.String()+" but the convolution is "+y.t.DType.String(),
			"cast it with .Cast("+y.t.DType.GoString()+")"))
	}
	shape := make([]int, y.t.Rank()-1)
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = o
	bias := b.Reshape(shape...)
	out := y.Add(bias)
	ReleaseWithGraph(out, y, bias)
	return relabel(out, name)
}

// checkAll returns the first error among the arguments x, w and b
// that are not nil (a nil b is none), or that x or w is nil.
func checkAll(name string, ts ...*Tensor) error {
	for i, t := range ts {
		if t == nil && i == 2 {
			continue
		}
		if err := t.CheckArg(name, [...]string{"x", "w", "b"}[i]); err != nil {
			return err
		}
	}
	return nil
}

// relabel names the op the user called in an error that one of its parts
// raised (the arguments' own errors were returned before the parts ran).
func relabel(t *Tensor, name string) *Tensor {
	e, ok := t.err.(*Error)
	if !ok || e.Op == name {
		return t
	}
	c := *e
	if c.Op != "" && c.Op != "conv" && c.Op != "conv_input_backward" && c.Op != name {
		c.Detail = "in " + c.Op + ": " + c.Detail
	}
	c.Op = name
	return failed(&c)
}
