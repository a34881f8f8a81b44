package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Conv2d is a 2-d convolution over (N, C, H, W) inputs (torch.nn.Conv2d).
// Weight has shape [out, in/groups, kh, kw] and Bias [out] (nil without a
// bias); Window holds the stride, padding and dilation that Forward passes
// to lathe's Conv2d, and Groups the channel groups.
type Conv2d struct {
	Weight, Bias *lathe.Tensor
	Window       []lathe.WindowOption
	Groups       int
}

// NewConv2d makes a Conv2d from in to out channels with a kernel×kernel
// window (KernelSize(kh, kw) for another shape), initialised as PyTorch
// does: kaiming_uniform_(a=√5) for the weight, which is U(-1/√fan_in,
// 1/√fan_in) with fan_in = in/groups·kh·kw, and the bias from the same
// range. Values come from lathe's seeded stream, so call lathe.Seed first
// for a reproducible model. Options: Stride, Padding, PaddingSame,
// Dilation, Groups, KernelSize, NoBias, WithDType, OnDevice.
func NewConv2d(in, out, kernel int, opts ...Option) *Conv2d {
	o, optErr := layerOptions("Conv2d", opts)
	groups := 1
	if o.groupsSet {
		groups = o.groups
	}
	k := []int{kernel, kernel}
	if o.kernel != nil {
		k = o.kernel
	}
	var detail string
	switch {
	case len(k) != 2:
		detail = "has KernelSize of " + strconv.Itoa(len(k)) + " sizes; it takes kh and kw"
	case in < 1 || out < 1 || k[0] < 1 || k[1] < 1 || groups < 1:
		detail = "has in=" + strconv.Itoa(in) + ", out=" + strconv.Itoa(out) + ", kernel " + strconv.Itoa(k[0]) + "×" + strconv.Itoa(k[1]) +
			", groups " + strconv.Itoa(groups) + "; each must be at least 1"
	case in%groups != 0 || out%groups != 0:
		detail = "has in=" + strconv.Itoa(in) + " and out=" + strconv.Itoa(out) + ", which groups " + strconv.Itoa(groups) + " must both divide"
	}
	if detail != "" && optErr == nil {
		optErr = nnError("conv2d", lathe.ErrValue, "", detail, "give positive sizes that groups divides")
	}
	if optErr != nil {
		err := lathe.Failed(optErr)
		c := &Conv2d{Weight: err}
		if !o.noBias {
			c.Bias = err
		}
		return c
	}
	bound := 1 / math.Sqrt(float64(in/groups*k[0]*k[1]))
	c := &Conv2d{Weight: newParam(uniform(o.dtype, bound, out, in/groups, k[0], k[1]), o),
		Window: append([]lathe.WindowOption(nil), o.window...), Groups: groups}
	if !o.noBias {
		c.Bias = newParam(uniform(o.dtype, bound, out), o)
	}
	return c
}

// Forward convolves x (N, in, H, W) to (N, out, H', W').
func (c *Conv2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	opts := append(append([]lathe.WindowOption(nil), c.Window...), lathe.Groups(c.Groups))
	return x.Conv2d(c.Weight, c.Bias, opts...)
}

// Parameters lists "weight" and, if there is one, "bias".
func (c *Conv2d) Parameters() []Param {
	ps := []Param{{Name: "weight", T: c.Weight}}
	if c.Bias != nil {
		ps = append(ps, Param{Name: "bias", T: c.Bias})
	}
	return ps
}

// To moves the parameters to dev.
func (c *Conv2d) To(dev lathe.Device) error { return moveParams(c.Parameters(), dev) }

// Train does nothing: Conv2d acts the same in both modes.
func (c *Conv2d) Train(bool) {}
