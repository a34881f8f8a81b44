package nn

import (
	"strconv"

	"github.com/lathe-ml/lathe"
)

// The rearranging modules of torch.nn: PixelShuffle, PixelUnshuffle,
// ChannelShuffle, Fold and Unfold. None has parameters.

// PixelShuffle rearranges [..., C·r², H, W] into [..., C, H·r, W·r], r
// the Factor (torch.nn.PixelShuffle: upscale_factor).
type PixelShuffle struct {
	activation
	Factor int
}

// NewPixelShuffle makes a PixelShuffle of upscale factor r.
func NewPixelShuffle(r int) *PixelShuffle { return &PixelShuffle{Factor: r} }

// Forward shuffles x; a Factor below 1, or channels it does not divide, is
// an error.
func (m *PixelShuffle) Forward(x *lathe.Tensor) *lathe.Tensor { return x.PixelShuffle(m.Factor) }

// PixelUnshuffle is PixelShuffle's inverse: [..., C, H·r, W·r] into
// [..., C·r², H, W] (torch.nn.PixelUnshuffle: downscale_factor).
type PixelUnshuffle struct {
	activation
	Factor int
}

// NewPixelUnshuffle makes a PixelUnshuffle of downscale factor r.
func NewPixelUnshuffle(r int) *PixelUnshuffle { return &PixelUnshuffle{Factor: r} }

// Forward unshuffles x.
func (m *PixelUnshuffle) Forward(x *lathe.Tensor) *lathe.Tensor { return x.PixelUnshuffle(m.Factor) }

// ChannelShuffle splits the C channels of (N, C, ...) into Groups groups
// and interleaves them: output channel i·Groups + g is input channel
// g·(C/Groups) + i (torch.nn.ChannelShuffle, ShuffleNet's).
type ChannelShuffle struct {
	activation
	Groups int
}

// NewChannelShuffle makes a ChannelShuffle of groups groups.
func NewChannelShuffle(groups int) *ChannelShuffle { return &ChannelShuffle{Groups: groups} }

// Forward shuffles x's channels, as a view, a transpose and a copy; x of
// fewer than 3 dims, Groups below 1, or a channel count it does not
// divide, is an error, as torch's.
func (m *ChannelShuffle) Forward(x *lathe.Tensor) *lathe.Tensor {
	const op = "channel_shuffle"
	if err := x.CheckArg(op, "x"); err != nil {
		return lathe.Failed(err)
	}
	s := x.Shape()
	g := m.Groups
	switch {
	case len(s) < 3:
		return lathe.Failed(nnError(op, lathe.ErrShape, "x", "has shape "+shapeString(s)+", but channel_shuffle expects at least 3 dims",
			"give an input (N, C, ...)"))
	case g < 1:
		return lathe.Failed(nnError(op, lathe.ErrValue, "groups", "is "+strconv.Itoa(g)+", and the number of groups must be positive", "give groups ≥ 1"))
	case s[1]%g != 0:
		return lathe.Failed(nnError(op, lathe.ErrShape, "x", "has "+strconv.Itoa(s[1])+" channels, not divisible by groups="+strconv.Itoa(g),
			"give groups that divide the channels"))
	}
	split := append([]int{s[0], g, s[1] / g}, s[2:]...)
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		return a[0].Reshape(split...).Transpose(1, 2).Reshape(s...)
	}, x)
}

// Unfold extracts sliding windows of (N, C, H, W) or (C, H, W) inputs as
// columns, (N, C·kh·kw, L) (torch.nn.Unfold): Kernel, one size for both
// dims or one per dim, and the options Stride, Padding and Dilation
// (torch's defaults: 1, 0, 1).
type Unfold struct {
	parameterless
	Kernel  []int
	Options []lathe.WindowOption
}

// NewUnfold makes an Unfold layer of kernel kernel: NewUnfold(3,
// nn.Stride(2)). Options: Stride, Padding, Dilation, KernelSize.
func NewUnfold(kernel int, opts ...Option) *Unfold {
	k, w, p := foldOptions("Unfold", kernel, opts)
	return &Unfold{parameterless: p, Kernel: k, Options: w}
}

// Forward unfolds x.
func (m *Unfold) Forward(x *lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	return x.Unfold(m.Kernel, m.Options...)
}

// Fold sums columns (N, C·kh·kw, L) back into images (N, C, OutputSize...)
// (torch.nn.Fold), the adjoint of Unfold with the same Kernel and
// options.
type Fold struct {
	parameterless
	OutputSize, Kernel []int
	Options            []lathe.WindowOption
}

// NewFold makes a Fold layer to images of outputSize (one size for both
// dims or one per dim) with a kernel of kernel. Options: Stride, Padding,
// Dilation, KernelSize.
func NewFold(outputSize []int, kernel int, opts ...Option) *Fold {
	k, w, p := foldOptions("Fold", kernel, opts)
	return &Fold{parameterless: p, OutputSize: append([]int(nil), outputSize...), Kernel: k, Options: w}
}

// Forward folds x.
func (m *Fold) Forward(x *lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	return x.Fold(m.OutputSize, m.Kernel, m.Options...)
}

func foldOptions(layer string, kernel int, opts []Option) ([]int, []lathe.WindowOption, parameterless) {
	o, err := layerOptions(layer, opts)
	if err != nil {
		return nil, nil, refused(err)
	}
	k := []int{kernel}
	if o.kernel != nil {
		k = o.kernel
	}
	return k, o.window, parameterless{}
}
