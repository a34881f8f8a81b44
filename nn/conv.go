package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// The convolution layers, torch.nn.Conv1d, Conv2d and Conv3d: one
// implementation, ConvNd, over the spatial rank, which each layer type
// embeds and runs with its own rank (and op) in Forward.

// ConvNd is what the convolution layers share: their parameters and
// options. Weight has shape [out, in/groups, k...] and Bias [out] (nil
// without a bias); Window holds the stride, padding and dilation that
// Forward passes to lathe's convolution op, and Groups the channel groups.
// Build it with a layer's constructor (NewConv2d, ...), which checks the
// sizes as PyTorch's does.
type ConvNd struct {
	Weight, Bias *lathe.Tensor
	Window       []lathe.WindowOption
	Groups       int
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
// Dilation, Groups, KernelSize, NoBias, WithDType, OnDevice. Sizes that
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

// Forward convolves x (N, in, L) to (N, out, L'), or (in, L) to (out, L').
func (c *Conv1d) Forward(x *lathe.Tensor) *lathe.Tensor { return c.forward(x, (*lathe.Tensor).Conv1d) }

// Forward convolves x (N, in, H, W) to (N, out, H', W'), or (in, H, W) to
// (out, H', W').
func (c *Conv2d) Forward(x *lathe.Tensor) *lathe.Tensor { return c.forward(x, (*lathe.Tensor).Conv2d) }

// Forward convolves x (N, in, D, H, W) to (N, out, D', H', W'), or
// (in, D, H, W) to (out, D', H', W').
func (c *Conv3d) Forward(x *lathe.Tensor) *lathe.Tensor { return c.forward(x, (*lathe.Tensor).Conv3d) }

// convOp is one of lathe's convolution methods.
type convOp func(x, w, b *lathe.Tensor, opts ...lathe.WindowOption) *lathe.Tensor

func (c *ConvNd) forward(x *lathe.Tensor, op convOp) *lathe.Tensor {
	opts := append(append([]lathe.WindowOption(nil), c.Window...), lathe.Groups(c.Groups))
	return op(x, c.Weight, c.Bias, opts...)
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
	layer, op string
	rank      int
}

var convSpecs = []convSpec{
	{"Conv1d", "conv1d", 1}, {"Conv2d", "conv2d", 2}, {"Conv3d", "conv3d", 3},
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
	if err == nil {
		err = checkConv(s, in, out, k, groups, o)
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
	fanIn := in / groups
	for _, n := range k {
		fanIn *= n
	}
	bound := 1 / math.Sqrt(float64(fanIn))
	c := ConvNd{Weight: newParam(uniform(o.dtype, bound, wshape...), o),
		Window: append([]lathe.WindowOption(nil), o.window...), Groups: groups}
	if !o.noBias {
		c.Bias = newParam(uniform(o.dtype, bound, out), o)
	}
	return c
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
