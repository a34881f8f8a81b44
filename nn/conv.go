package nn

import (
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// The convolution layers, torch.nn.Conv1d, Conv2d, Conv3d and
// ConvTranspose1d, 2d, 3d: one implementation, ConvNd, over the spatial
// rank, which each layer type embeds and runs with its own lathe op in
// Forward.

// ConvNd is what the convolution layers share: their parameters and
// options. Weight has shape [out, in/groups, k...] ([in, out/groups, k...]
// for a transposed convolution, as torch's) and Bias [out] (nil without a
// bias); Window holds the stride, padding, dilation and output padding
// that Forward passes to lathe's op, and Groups the channel groups. With
// a PaddingMode other than "zeros", Forward pads x in that mode first and
// Window holds no padding.
// Build it with a layer's constructor (NewConv2d, ...), which checks the
// sizes as PyTorch's does.
type ConvNd struct {
	Weight, Bias *lathe.Tensor
	Window       []lathe.WindowOption
	Groups       int

	// The stride, padding and dilation that the constructor was given, one
	// per spatial dim, for what the layer computes itself (the output
	// padding of a transposed convolution's ForwardSize).
	stride, padding, dilation []int
	// A PaddingMode other than "zeros", and the pads that Forward gives x
	// in it, in Pad's order (torch's _reversed_padding_repeated_twice);
	// Window then has no padding.
	paddingMode string
	modePads    []int
	samePad     bool // PaddingSame: modePads hold its pads
}

// Conv1d is a 1-d convolution over (N, C, L) inputs, or one unbatched
// (C, L) input (torch.nn.Conv1d).
type Conv1d struct{ ConvNd }

// Conv2d is a 2-d convolution over (N, C, H, W) inputs, or one unbatched
// (C, H, W) input (torch.nn.Conv2d).
type Conv2d struct{ ConvNd }

// Conv3d is a 3-d convolution over (N, C, D, H, W) inputs, or one
// unbatched (C, D, H, W) input (torch.nn.Conv3d).
type Conv3d struct{ ConvNd }

// ConvTranspose1d is a 1-d transposed convolution over (N, C, L) inputs,
// or one unbatched (C, L) input (torch.nn.ConvTranspose1d).
type ConvTranspose1d struct{ ConvNd }

// ConvTranspose2d is a 2-d transposed convolution over (N, C, H, W)
// inputs, or one unbatched (C, H, W) input (torch.nn.ConvTranspose2d): the
// gradient of a Conv2d with respect to its input, which upsamples by the
// stride.
type ConvTranspose2d struct{ ConvNd }

// ConvTranspose3d is a 3-d transposed convolution over (N, C, D, H, W)
// inputs, or one unbatched (C, D, H, W) input (torch.nn.ConvTranspose3d).
type ConvTranspose3d struct{ ConvNd }

// NewConv1d makes a Conv1d from in to out channels with a kernel-wide
// window; see NewConv2d for the initialisation and the options.
func NewConv1d(in, out, kernel int, opts ...Option) *Conv1d {
	return &Conv1d{newConv(convSpecs[0], in, out, kernel, opts)}
}

// NewConv2d makes a Conv2d from in to out channels with a kernel×kernel
// window (KernelSize(kh, kw) for another shape), initialised as PyTorch
// does: kaiming_uniform_(a=√5) for the weight, which is U(-1/√fan_in,
// 1/√fan_in) with fan_in = in/groups·kh·kw, and the bias from the same
// range. Values come from lathe's seeded stream, so call lathe.Seed first
// for a reproducible model. Options: Stride, Padding, PaddingSame,
// PaddingMode, Dilation, Groups, KernelSize, NoBias, WithDType, OnDevice.
// Sizes that
// PyTorch's constructor refuses (a kernel or channel count below 1,
// channels that groups does not divide, KernelSize with another count of
// sizes than the layer's dims, PaddingSame with a stride) fail the layer
// with an ErrValue that names the argument.
func NewConv2d(in, out, kernel int, opts ...Option) *Conv2d {
	return &Conv2d{newConv(convSpecs[1], in, out, kernel, opts)}
}

// NewConv3d makes a Conv3d from in to out channels with a
// kernel×kernel×kernel window (KernelSize(kd, kh, kw) for another shape);
// see NewConv2d for the initialisation and the options.
func NewConv3d(in, out, kernel int, opts ...Option) *Conv3d {
	return &Conv3d{newConv(convSpecs[2], in, out, kernel, opts)}
}

// NewConvTranspose1d makes a ConvTranspose1d from in to out channels with
// a kernel-wide window; see NewConvTranspose2d.
func NewConvTranspose1d(in, out, kernel int, opts ...Option) *ConvTranspose1d {
	return &ConvTranspose1d{newConv(convSpecs[3], in, out, kernel, opts)}
}

// NewConvTranspose2d makes a ConvTranspose2d from in to out channels with
// a kernel×kernel window (KernelSize(kh, kw) for another shape). Weight is
// [in, out/groups, kh, kw], initialised as PyTorch does: U(-1/√fan_in,
// 1/√fan_in) with fan_in = out/groups·kh·kw (the weight's size(1) times
// the kernel's), the bias from the same range. Options: Stride, Padding,
// OutputPadding, Dilation, Groups, KernelSize, NoBias, WithDType,
// OnDevice; each output size is (in-1)·stride - 2·padding +
// dilation·(k-1) + output_padding + 1.
func NewConvTranspose2d(in, out, kernel int, opts ...Option) *ConvTranspose2d {
	return &ConvTranspose2d{newConv(convSpecs[4], in, out, kernel, opts)}
}

// NewConvTranspose3d makes a ConvTranspose3d from in to out channels with
// a kernel×kernel×kernel window (KernelSize(kd, kh, kw) for another
// shape); see NewConvTranspose2d.
func NewConvTranspose3d(in, out, kernel int, opts ...Option) *ConvTranspose3d {
	return &ConvTranspose3d{newConv(convSpecs[5], in, out, kernel, opts)}
}

// Forward convolves x (N, in, L) to (N, out, L'), or (in, L) to (out, L').
func (c *Conv1d) Forward(x *lathe.Tensor) *lathe.Tensor { return c.forward(x, (*lathe.Tensor).Conv1d) }

// Forward convolves x (N, in, H, W) to (N, out, H', W'), or (in, H, W) to
// (out, H', W').
func (c *Conv2d) Forward(x *lathe.Tensor) *lathe.Tensor { return c.forward(x, (*lathe.Tensor).Conv2d) }

// Forward convolves x (N, in, D, H, W) to (N, out, D', H', W'), or
// (in, D, H, W) to (out, D', H', W').
func (c *Conv3d) Forward(x *lathe.Tensor) *lathe.Tensor { return c.forward(x, (*lathe.Tensor).Conv3d) }

// Forward is the transposed convolution of x (N, in, L) to (N, out, L'),
// or of (in, L) to (out, L').
func (c *ConvTranspose1d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return c.forward(x, (*lathe.Tensor).ConvTranspose1d)
}

// Forward is the transposed convolution of x (N, in, H, W) to
// (N, out, H', W'), or of (in, H, W) to (out, H', W').
func (c *ConvTranspose2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return c.forward(x, (*lathe.Tensor).ConvTranspose2d)
}

// Forward is the transposed convolution of x (N, in, D, H, W) to
// (N, out, D', H', W'), or of (in, D, H, W) to (out, D', H', W').
func (c *ConvTranspose3d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return c.forward(x, (*lathe.Tensor).ConvTranspose3d)
}

// ForwardSize is Forward with the output's spatial size asked for (torch's
// forward(input, output_size)): a stride above 1 maps several input
// sizes to one, so the inverse of a strided Conv1d needs to be told which.
// size holds one value per spatial dim, or the whole output shape (the
// layer's Forward then ignores the batch and channel values, as torch
// does); each must lie between the size without output padding and that
// plus stride-1. It replaces the layer's OutputPadding. The range is
// that of the stride, padding and dilation the constructor was given: with
// Window changed since, a size it does not give is an ErrValue, and so is
// any size for a layer built without its constructor.
func (c *ConvTranspose1d) ForwardSize(x *lathe.Tensor, size ...int) *lathe.Tensor {
	return c.forwardSize(x, size, 1, "conv_transpose1d", (*lathe.Tensor).ConvTranspose1d)
}

// ForwardSize is Forward with the output's spatial size asked for; see
// ConvTranspose1d.ForwardSize.
func (c *ConvTranspose2d) ForwardSize(x *lathe.Tensor, size ...int) *lathe.Tensor {
	return c.forwardSize(x, size, 2, "conv_transpose2d", (*lathe.Tensor).ConvTranspose2d)
}

// ForwardSize is Forward with the output's spatial size asked for; see
// ConvTranspose1d.ForwardSize.
func (c *ConvTranspose3d) ForwardSize(x *lathe.Tensor, size ...int) *lathe.Tensor {
	return c.forwardSize(x, size, 3, "conv_transpose3d", (*lathe.Tensor).ConvTranspose3d)
}

// convOp is one of lathe's convolution methods.
type convOp func(x, w, b *lathe.Tensor, opts ...lathe.WindowOption) *lathe.Tensor

func (c *ConvNd) forward(x *lathe.Tensor, op convOp, more ...lathe.WindowOption) *lathe.Tensor {
	opts := append(append(append([]lathe.WindowOption(nil), c.Window...), lathe.Groups(c.Groups)), more...)
	// x of another rank than the op's goes to the op unpadded, which says so.
	if c.paddingMode == "" || x == nil || x.Err() != nil {
		return op(x, c.Weight, c.Bias, opts...)
	}
	if r, nd := len(x.Shape()), len(c.modePads)/2; r != nd+1 && r != nd+2 {
		return op(x, c.Weight, c.Bias, opts...)
	}
	pads := c.modePads
	if w := c.Weight; c.samePad && w != nil && w.Err() == nil && w.Rank() == len(pads)/2+2 && len(c.dilation) == len(pads)/2 {
		// "same" pads by the kernel: a Weight replaced by one of another
		// kernel size was padded for the old one, and the output was not
		// x's size.
		pads = modePads(w.Shape()[2:], c.padding, c.dilation, true)
	}
	padded := x.Pad(pads, 0, lathe.PadMode(c.paddingMode))
	var e *lathe.Error
	if errors.As(padded.Err(), &e) && e.Arg == "pads" {
		// The pads are the layer's padding: pad's error named an argument
		// of an op the caller never called.
		nd := len(c.modePads) / 2
		given := shapeString(c.padding)
		if c.samePad {
			given = `"same"`
		}
		return lathe.Failed(nnError("conv"+strconv.Itoa(nd)+"d", e.Kind, "padding", "is "+given+
			" with padding_mode "+strconv.Quote(c.paddingMode)+", which for x "+shapeString(x.Shape())+" "+e.Detail, e.Fix))
	}
	out := op(padded, c.Weight, c.Bias, opts...)
	lathe.ReleaseWithGraph(out, padded)
	return out
}

// forwardSize turns a transposed convolution's output size into its
// output padding, as torch's _ConvTransposeNd._output_padding does, and
// runs the op with it.
func (c *ConvNd) forwardSize(x *lathe.Tensor, size []int, nd int, name string, op convOp) *lathe.Tensor {
	if err := x.CheckArg(name, "x"); err != nil {
		return lathe.Failed(err)
	}
	if err := c.Weight.CheckArg(name, "weight"); err != nil {
		return lathe.Failed(err)
	}
	xs, ws := x.Shape(), c.Weight.Shape()
	if (len(xs) != nd+1 && len(xs) != nd+2) || len(ws) != nd+2 {
		return c.forward(x, op) // the op names what is wrong
	}
	if len(c.stride) != nd {
		// A layer built without the constructor: its window is not known
		// here, and Forward without the size ignored the one asked for.
		return lathe.Failed(nnError(name, lathe.ErrValue, "output_size", "is "+shapeString(size)+
			", but the layer was not built by its constructor, which records the window that the size is computed from",
			"build the layer with its New function, or call Forward"))
	}
	batch := len(xs) - nd
	if len(size) == len(xs) {
		size = size[batch:]
	}
	if len(size) != nd {
		return lathe.Failed(nnError(name, lathe.ErrValue, "output_size", "has "+strconv.Itoa(len(size))+" values "+shapeString(size)+
			" but x "+shapeString(xs)+" needs "+strconv.Itoa(nd)+" or "+strconv.Itoa(len(xs)), "give one size per spatial dim"))
	}
	pad := make([]int, nd)
	for i := range nd {
		in, k, s, p, d := int64(xs[batch+i]), int64(ws[2+i]), int64(c.stride[i]), int64(c.padding[i]), int64(c.dilation[i])
		if in < 1 || s < 1 || d < 1 || p < 0 || max(s, k, d, in, p) > math.MaxInt32 {
			return c.forward(x, op) // sizes the op refuses, or that overflow here
		}
		lo := (in-1)*s - 2*p + d*(k-1) + 1
		if lo < 1 {
			return c.forward(x, op) // padding that leaves no output: the op names it
		}
		if hi := lo + s - 1; int64(size[i]) < lo || int64(size[i]) > hi {
			return lathe.Failed(nnError(name, lathe.ErrValue, "output_size", "is "+shapeString(size)+", but dim "+strconv.Itoa(i)+
				" of the output can be "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10)+" for x "+shapeString(xs),
				"ask for a size in that range"))
		}
		pad[i] = size[i] - int(lo)
	}
	out := c.forward(x, op, lathe.OutputPadding(pad...))
	// The range above is the constructor's stride, padding and dilation;
	// a Window changed since gives another size, not the one asked for.
	if got := out.Shape(); out.Err() == nil && !slices.Equal(got[len(got)-nd:], size) {
		out.Release()
		return lathe.Failed(nnError(name, lathe.ErrValue, "output_size", "is "+shapeString(size)+", but the layer's Window gives "+
			shapeString(got[len(got)-nd:])+": ForwardSize computes the output padding from the stride, padding and dilation that the constructor was given, and Window was changed since",
			"build a new layer with the new window, or call Forward"))
	}
	return out
}

// Parameters lists "weight" and, if there is one, "bias".
func (c *ConvNd) Parameters() []Param {
	ps := []Param{{Name: "weight", T: c.Weight}}
	if c.Bias != nil {
		ps = append(ps, Param{Name: "bias", T: c.Bias})
	}
	return ps
}

// To moves the parameters to dev.
func (c *ConvNd) To(dev lathe.Device) error { return moveParams(c.Parameters(), dev) }

// Train does nothing: a convolution acts the same in both modes.
func (c *ConvNd) Train(bool) {}

// convSpec is one convolution layer: its name in layerSpecs, the op that
// its errors name, and its spatial rank.
type convSpec struct {
	layer, op  string
	rank       int
	transposed bool
}

var convSpecs = []convSpec{
	{"Conv1d", "conv1d", 1, false}, {"Conv2d", "conv2d", 2, false}, {"Conv3d", "conv3d", 3, false},
	{"ConvTranspose1d", "conv_transpose1d", 1, true}, {"ConvTranspose2d", "conv_transpose2d", 2, true},
	{"ConvTranspose3d", "conv_transpose3d", 3, true},
}

// newConv builds any convolution layer: it checks the sizes as PyTorch's
// _ConvNd does, and draws the parameters. A failed layer has its
// parameters failed with the error.
func newConv(s convSpec, in, out, kernel int, opts []Option) ConvNd {
	o, err := layerOptions(s.layer, opts)
	groups := 1
	if o.groupsSet {
		groups = o.groups
	}
	k := make([]int, s.rank)
	for i := range k {
		k[i] = kernel
	}
	if o.kernel != nil {
		k = o.kernel
	}
	var stride, padding, dilation []int
	if err == nil {
		err = checkConv(s, in, out, k, groups, o)
	}
	if err == nil {
		stride, padding, dilation, err = convWindow(s, o)
	}
	if err == nil && o.paddingSame {
		// "same" pads dilation·(k-1) in all: one that overflows an int
		// made pads of garbage, which a padding mode's Pad then named.
		for i, d := range dilation {
			if k[i] > 1 && d > math.MaxInt32/(k[i]-1) {
				err = nnError(s.op, lathe.ErrValue, "dilation", "is "+shapeString(dilation)+", which with kernel_size "+shapeString(k)+
					` makes a "same" padding past what an int32 counts`, "use a smaller dilation")
				break
			}
		}
	}
	if err != nil {
		f := lathe.Failed(err)
		c := ConvNd{Weight: f}
		if !o.noBias {
			c.Bias = f
		}
		return c
	}
	// kaiming_uniform_(a=√5) is U(-1/√fan_in, 1/√fan_in), fan_in being the
	// weight's size(1)·prod(kernel) (torch's _ConvNd.reset_parameters),
	// and the bias is drawn from the same range.
	wshape := append([]int{out, in / groups}, k...)
	if s.transposed {
		wshape[0], wshape[1] = in, out/groups
	}
	fanIn := wshape[1]
	for _, n := range k {
		fanIn *= n
	}
	bound := 1 / math.Sqrt(float64(fanIn))
	c := ConvNd{Weight: newParam(uniform(o.dtype, bound, wshape...), o), Groups: groups,
		stride: stride, padding: padding, dilation: dilation}
	pads := modePads(k, padding, dilation, o.paddingSame)
	if o.paddingMode == "" || o.paddingMode == "zeros" || slices.Max(pads) == 0 {
		// Without padding the modes agree: no Pad to run.
		c.Window = append([]lathe.WindowOption(nil), o.window...)
	} else {
		c.paddingMode, c.modePads, c.samePad = o.paddingMode, pads, o.paddingSame
		for i, w := range o.window {
			if o.windowArgs[i] != "padding" {
				c.Window = append(c.Window, w)
			}
		}
	}
	if !o.noBias {
		c.Bias = newParam(uniform(o.dtype, bound, out), o)
	}
	return c
}

// modePads is the padding of a convolution with a padding mode, in Pad's
// order (the last dim's pair first): padding on both sides of each dim, or
// for PaddingSame a total of dilation·(k-1), the odd unit on the right, as
// torch's _ConvNd computes its _reversed_padding_repeated_twice.
func modePads(k, padding, dilation []int, same bool) []int {
	nd := len(k)
	pads := make([]int, 2*nd)
	for i := range nd {
		left, right := padding[i], padding[i]
		if same {
			total := dilation[i] * (k[i] - 1)
			left, right = total/2, total-total/2
		}
		pads[2*(nd-1-i)], pads[2*(nd-1-i)+1] = left, right
	}
	return pads
}

// convWindow expands the stride, padding and dilation to one value per
// spatial dim, or refuses another count of them.
func convWindow(s convSpec, o options) (stride, padding, dilation []int, err *lathe.Error) {
	for _, f := range []struct {
		name string
		vals []int
		def  int
		dst  *[]int
	}{{"stride", o.stride, 1, &stride}, {"padding", o.padding, 0, &padding}, {"dilation", o.dilation, 1, &dilation}} {
		switch len(f.vals) {
		case 0, 1:
			v := f.def
			if len(f.vals) == 1 {
				v = f.vals[0]
			}
			*f.dst = make([]int, s.rank)
			for i := range *f.dst {
				(*f.dst)[i] = v
			}
		case s.rank:
			*f.dst = f.vals
		default:
			return nil, nil, nil, nnError(s.op, lathe.ErrValue, f.name, "has "+strconv.Itoa(len(f.vals))+" values "+shapeString(f.vals)+" but "+s.layer+" has "+
				strconv.Itoa(s.rank)+" spatial dims", "give one value, or one per spatial dim")
		}
	}
	return stride, padding, dilation, nil
}

// checkConv refuses what PyTorch's _ConvNd constructor refuses, naming the
// argument at fault.
func checkConv(s convSpec, in, out int, k []int, groups int, o options) *lathe.Error {
	bad := func(arg, detail, fix string) *lathe.Error { return nnError(s.op, lathe.ErrValue, arg, detail, fix) }
	switch {
	case len(k) != s.rank:
		return bad("kernel_size", "has "+strconv.Itoa(len(k))+" sizes "+shapeString(k)+" but "+s.layer+" has "+strconv.Itoa(s.rank)+" spatial dims",
			"give KernelSize one size per spatial dim")
	case groups < 1:
		return bad("groups", "is "+strconv.Itoa(groups), "use at least one group")
	case in < 1:
		return bad("in_channels", "is "+strconv.Itoa(in), "use at least one input channel")
	case out < 1:
		return bad("out_channels", "is "+strconv.Itoa(out), "use at least one output channel")
	case in%groups != 0:
		return bad("in_channels", "is "+strconv.Itoa(in)+", which groups "+strconv.Itoa(groups)+" does not divide", "use a multiple of groups")
	case out%groups != 0:
		return bad("out_channels", "is "+strconv.Itoa(out)+", which groups "+strconv.Itoa(groups)+" does not divide", "use a multiple of groups")
	}
	for _, n := range k {
		if n < 1 {
			return bad("kernel_size", "is "+shapeString(k)+", with a size below 1", "use sizes of at least 1")
		}
	}
	wsize := in / groups
	for _, n := range append([]int{out}, k...) {
		if n > math.MaxInt/wsize {
			return bad("kernel_size", "is "+shapeString(k)+", which with in="+strconv.Itoa(in)+" and out="+strconv.Itoa(out)+
				" makes a weight of more than MaxInt elements", "use smaller sizes")
		}
		wsize *= n
	}
	switch o.paddingMode {
	case "", "zeros":
	case "reflect", "replicate", "circular":
		if s.transposed {
			return bad("padding_mode", "is "+strconv.Quote(o.paddingMode)+", but "+s.layer+" pads only with zeros, as torch's", `drop PaddingMode, or give it "zeros"`)
		}
		for _, p := range o.padding {
			if p < 0 {
				return bad("padding", "is "+shapeString(o.padding)+", below 0", "use padding of at least 0")
			}
		}
	default:
		return bad("padding_mode", "is "+strconv.Quote(o.paddingMode), `use "zeros", "reflect", "replicate" or "circular"`)
	}
	if o.paddingSame && s.transposed {
		return bad("padding", `is "same", which a transposed convolution does not take`, "give the padding in numbers")
	}
	if o.paddingSame {
		for _, st := range o.stride {
			if st != 1 {
				return bad("padding", `is "same", which needs stride 1, but stride is `+shapeString(o.stride),
					"give the padding in numbers for a strided convolution")
			}
		}
	}
	return nil
}
