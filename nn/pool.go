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
	activation
	Kernel  int
	Options []lathe.WindowOption
}

// NewMaxPool2d makes a MaxPool2d layer: NewMaxPool2d(3, nn.Stride(2),
// nn.Padding(1)). Options: Stride, Padding, Dilation, CeilMode, KernelSize.
func NewMaxPool2d(kernel int, opts ...Option) *MaxPool2d {
	return &MaxPool2d{Kernel: kernel, Options: poolOptions(opts)}
}

// poolOptions is the lathe options that opts give a pooling.
func poolOptions(opts []Option) []lathe.WindowOption {
	o := layerOptions(opts)
	w := o.window
	if o.kernel != nil {
		w = append(w, lathe.KernelSize(o.kernel...))
	}
	if o.groupsSet {
		w = append(w, lathe.Groups(o.groups)) // which the op reports
	}
	return w
}

// Forward max-pools x.
func (m *MaxPool2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return x.MaxPool2d(m.Kernel, m.Options...)
}

// AvgPool2d is average pooling as a module (torch.nn.AvgPool2d): Kernel and
// the options of lathe.Tensor.AvgPool2d (Stride, Padding, CeilMode,
// ExcludePadding, Divisor).
type AvgPool2d struct {
	activation
	Kernel  int
	Options []lathe.WindowOption
}

// NewAvgPool2d makes an AvgPool2d layer: NewAvgPool2d(2). Options: Stride,
// Padding, CeilMode, ExcludePadding, Divisor, KernelSize.
func NewAvgPool2d(kernel int, opts ...Option) *AvgPool2d {
	return &AvgPool2d{Kernel: kernel, Options: poolOptions(opts)}
}

// Forward average-pools x.
func (m *AvgPool2d) Forward(x *lathe.Tensor) *lathe.Tensor {
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
