package nn

import "github.com/lathe-ml/lathe"

// Pooling layers: parameterless modules over (N, C, H, W) inputs that hold
// a pooling's size and options (lathe's WindowOption, named as PyTorch
// names the arguments) and apply it in Forward.

// MaxPool2d is max pooling as a module (torch.nn.MaxPool2d): Kernel and the
// options of lathe.Tensor.MaxPool2d (Stride, defaulting to the kernel,
// Padding, Dilation, CeilMode).
type MaxPool2d struct {
	activation
	Kernel  int
	Options []lathe.WindowOption
}

// NewMaxPool2d makes a MaxPool2d layer: NewMaxPool2d(3, lathe.Stride(2),
// lathe.Padding(1)).
func NewMaxPool2d(kernel int, opts ...lathe.WindowOption) *MaxPool2d {
	return &MaxPool2d{Kernel: kernel, Options: opts}
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

// NewAvgPool2d makes an AvgPool2d layer: NewAvgPool2d(2).
func NewAvgPool2d(kernel int, opts ...lathe.WindowOption) *AvgPool2d {
	return &AvgPool2d{Kernel: kernel, Options: opts}
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
