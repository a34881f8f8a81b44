package nn

import "github.com/lathe-ml/lathe"

// Pooling layers: parameterless modules over (N, C, H, W) inputs that hold
// a pooling's size and options (nn's Stride, Padding... which hold lathe's
// WindowOption, named as PyTorch names the arguments) and apply it in
// Forward.

// MaxPool2d is max pooling as a module (torch.nn.MaxPool2d): Kernel and the
// options of lathe.Tensor.MaxPool2d (Stride, defaulting to the kernel,
// Padding, Dilation, CeilMode).
type MaxPool2d struct {
	parameterless
	Kernel  int
	Options []lathe.WindowOption
}

// NewMaxPool2d makes a MaxPool2d layer: NewMaxPool2d(3, nn.Stride(2),
// nn.Padding(1)). Options: Stride, Padding, Dilation, CeilMode, KernelSize.
func NewMaxPool2d(kernel int, opts ...Option) *MaxPool2d {
	w, p := poolOptions("MaxPool2d", opts)
	return &MaxPool2d{parameterless: p, Kernel: kernel, Options: w}
}

// poolOptions is the lathe options that opts give a pooling, or the
// refusal of one.
func poolOptions(layer string, opts []Option) ([]lathe.WindowOption, parameterless) {
	o, err := layerOptions(layer, opts)
	if err != nil {
		return nil, refused(err)
	}
	w := o.window
	if o.kernel != nil {
		w = append(w, lathe.KernelSize(o.kernel...))
	}
	return w, parameterless{}
}

// Forward max-pools x.
func (m *MaxPool2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	return x.MaxPool2d(m.Kernel, m.Options...)
}

// AvgPool2d is average pooling as a module (torch.nn.AvgPool2d): Kernel and
// the options of lathe.Tensor.AvgPool2d (Stride, Padding, CeilMode,
// ExcludePadding, Divisor).
type AvgPool2d struct {
	parameterless
	Kernel  int
	Options []lathe.WindowOption
}

// NewAvgPool2d makes an AvgPool2d layer: NewAvgPool2d(2). Options: Stride,
// Padding, CeilMode, ExcludePadding, Divisor, KernelSize.
func NewAvgPool2d(kernel int, opts ...Option) *AvgPool2d {
	w, p := poolOptions("AvgPool2d", opts)
	return &AvgPool2d{parameterless: p, Kernel: kernel, Options: w}
}

// Forward average-pools x.
func (m *AvgPool2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	return x.AvgPool2d(m.Kernel, m.Options...)
}

// AdaptiveAvgPool2d averages each (n, c) plane down to Size, one value for
// both dims or one per dim (torch.nn.AdaptiveAvgPool2d); Size 1 is global
// average pooling, the usual head of a CNN.
type AdaptiveAvgPool2d struct {
	activation
	Size []int
}

// NewAdaptiveAvgPool2d makes an AdaptiveAvgPool2d layer:
// NewAdaptiveAvgPool2d(1).
func NewAdaptiveAvgPool2d(size ...int) *AdaptiveAvgPool2d {
	return &AdaptiveAvgPool2d{Size: append([]int(nil), size...)}
}

// Forward average-pools x to Size.
func (m *AdaptiveAvgPool2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return x.AdaptiveAvgPool2d(m.Size...)
}
