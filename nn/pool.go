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

// ForwardWithIndices max-pools x and returns also the index of each
// maximum within its (n, c) plane, Int64 (torch's return_indices=True),
// which MaxUnpool2d takes.
func (m *MaxPool2d) ForwardWithIndices(x *lathe.Tensor) (values, indices *lathe.Tensor) {
	if m.failed != nil {
		return m.fail(), m.fail()
	}
	return x.MaxPool2dWithIndices(m.Kernel, m.Options...)
}

// MaxPool1d is max pooling over (N, C, L) or (C, L) inputs as a module
// (torch.nn.MaxPool1d): Kernel and the options of lathe.Tensor.MaxPool1d
// (Stride, defaulting to the kernel, Padding, Dilation, CeilMode).
type MaxPool1d struct {
	parameterless
	Kernel  int
	Options []lathe.WindowOption
}

// NewMaxPool1d makes a MaxPool1d layer. Options: Stride, Padding,
// Dilation, CeilMode.
func NewMaxPool1d(kernel int, opts ...Option) *MaxPool1d {
	w, p := poolOptions("MaxPool1d", opts)
	return &MaxPool1d{parameterless: p, Kernel: kernel, Options: w}
}

// Forward max-pools x.
func (m *MaxPool1d) Forward(x *lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	return x.MaxPool1d(m.Kernel, m.Options...)
}

// ForwardWithIndices is Forward that returns also the index of each
// maximum within its (n, c) row, Int64 (torch's return_indices=True).
func (m *MaxPool1d) ForwardWithIndices(x *lathe.Tensor) (values, indices *lathe.Tensor) {
	if m.failed != nil {
		return m.fail(), m.fail()
	}
	return x.MaxPool1dWithIndices(m.Kernel, m.Options...)
}

// MaxPool3d is max pooling over (N, C, D, H, W) or (C, D, H, W) inputs as
// a module (torch.nn.MaxPool3d): Kernel and the options of
// lathe.Tensor.MaxPool3d (Stride, defaulting to the kernel, Padding,
// Dilation, CeilMode, KernelSize).
type MaxPool3d struct {
	parameterless
	Kernel  int
	Options []lathe.WindowOption
}

// NewMaxPool3d makes a MaxPool3d layer. Options: Stride, Padding,
// Dilation, CeilMode, KernelSize.
func NewMaxPool3d(kernel int, opts ...Option) *MaxPool3d {
	w, p := poolOptions("MaxPool3d", opts)
	return &MaxPool3d{parameterless: p, Kernel: kernel, Options: w}
}

// Forward max-pools x.
func (m *MaxPool3d) Forward(x *lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	return x.MaxPool3d(m.Kernel, m.Options...)
}

// ForwardWithIndices is Forward that returns also the index of each
// maximum within its (n, c) volume, Int64 (torch's return_indices=True).
func (m *MaxPool3d) ForwardWithIndices(x *lathe.Tensor) (values, indices *lathe.Tensor) {
	if m.failed != nil {
		return m.fail(), m.fail()
	}
	return x.MaxPool3dWithIndices(m.Kernel, m.Options...)
}

// AvgPool1d is average pooling over (N, C, L) or (C, L) inputs as a module
// (torch.nn.AvgPool1d): Kernel and the options of lathe.Tensor.AvgPool1d
// (Stride, Padding, CeilMode, ExcludePadding).
type AvgPool1d struct {
	parameterless
	Kernel  int
	Options []lathe.WindowOption
}

// NewAvgPool1d makes an AvgPool1d layer. Options: Stride, Padding,
// CeilMode, ExcludePadding (torch's AvgPool1d has no divisor_override).
func NewAvgPool1d(kernel int, opts ...Option) *AvgPool1d {
	w, p := poolOptions("AvgPool1d", opts)
	return &AvgPool1d{parameterless: p, Kernel: kernel, Options: w}
}

// Forward average-pools x.
func (m *AvgPool1d) Forward(x *lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	return x.AvgPool1d(m.Kernel, m.Options...)
}

// AvgPool3d is average pooling over (N, C, D, H, W) or (C, D, H, W)
// inputs as a module (torch.nn.AvgPool3d): Kernel and the options of
// lathe.Tensor.AvgPool3d (Stride, Padding, CeilMode, ExcludePadding,
// Divisor, KernelSize).
type AvgPool3d struct {
	parameterless
	Kernel  int
	Options []lathe.WindowOption
}

// NewAvgPool3d makes an AvgPool3d layer. Options: Stride, Padding,
// CeilMode, ExcludePadding, Divisor, KernelSize.
func NewAvgPool3d(kernel int, opts ...Option) *AvgPool3d {
	w, p := poolOptions("AvgPool3d", opts)
	return &AvgPool3d{parameterless: p, Kernel: kernel, Options: w}
}

// Forward average-pools x.
func (m *AvgPool3d) Forward(x *lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	return x.AvgPool3d(m.Kernel, m.Options...)
}

// AdaptiveAvgPool1d averages each (n, c) row down to length Size
// (torch.nn.AdaptiveAvgPool1d).
type AdaptiveAvgPool1d struct {
	activation
	Size int
}

// NewAdaptiveAvgPool1d makes an AdaptiveAvgPool1d layer.
func NewAdaptiveAvgPool1d(size int) *AdaptiveAvgPool1d { return &AdaptiveAvgPool1d{Size: size} }

// Forward average-pools x to Size.
func (m *AdaptiveAvgPool1d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return x.AdaptiveAvgPool1d(m.Size)
}

// AdaptiveAvgPool3d averages each (n, c) volume down to Size, one value
// for every dim or one per dim (torch.nn.AdaptiveAvgPool3d).
type AdaptiveAvgPool3d struct {
	activation
	Size []int
}

// NewAdaptiveAvgPool3d makes an AdaptiveAvgPool3d layer.
func NewAdaptiveAvgPool3d(size ...int) *AdaptiveAvgPool3d {
	return &AdaptiveAvgPool3d{Size: append([]int(nil), size...)}
}

// Forward average-pools x to Size.
func (m *AdaptiveAvgPool3d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return x.AdaptiveAvgPool3d(m.Size...)
}

// AdaptiveMaxPool2d takes the maximum of each (n, c) plane over
// AdaptiveAvgPool2d's windows, down to Size, one value for both dims or
// one per dim (torch.nn.AdaptiveMaxPool2d).
type AdaptiveMaxPool2d struct {
	activation
	Size []int
}

// NewAdaptiveMaxPool2d makes an AdaptiveMaxPool2d layer.
func NewAdaptiveMaxPool2d(size ...int) *AdaptiveMaxPool2d {
	return &AdaptiveMaxPool2d{Size: append([]int(nil), size...)}
}

// Forward max-pools x to Size.
func (m *AdaptiveMaxPool2d) Forward(x *lathe.Tensor) *lathe.Tensor {
	return x.AdaptiveMaxPool2d(m.Size...)
}

// ForwardWithIndices is Forward that returns also the index of each
// maximum within its (n, c) plane, Int64 (torch's return_indices=True).
func (m *AdaptiveMaxPool2d) ForwardWithIndices(x *lathe.Tensor) (values, indices *lathe.Tensor) {
	return x.AdaptiveMaxPool2dWithIndices(m.Size...)
}

// MaxUnpool2d is the partial inverse of MaxPool2d as a module
// (torch.nn.MaxUnpool2d): each value of x written at its index into zeros
// of the pooled input's size. Kernel and the options (Stride, defaulting
// to the kernel, Padding) are the pooling's.
type MaxUnpool2d struct {
	parameterless
	Kernel  int
	Options []lathe.WindowOption
}

// NewMaxUnpool2d makes a MaxUnpool2d layer. Options: Stride, Padding,
// KernelSize.
func NewMaxUnpool2d(kernel int, opts ...Option) *MaxUnpool2d {
	w, p := poolOptions("MaxUnpool2d", opts)
	return &MaxUnpool2d{parameterless: p, Kernel: kernel, Options: w}
}

// Forward fails: unpooling takes the pooling's indices too
// (ForwardIndices).
func (m *MaxUnpool2d) Forward(*lathe.Tensor) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	return lathe.Failed(nnError("max_unpool2d", lathe.ErrValue, "indices", "is missing: Forward takes one tensor",
		"call ForwardIndices(x, indices), indices from MaxPool2d's ForwardWithIndices"))
}

// ForwardIndices unpools x at indices (MaxPool2d's ForwardWithIndices);
// size, where given, is the spatial size of the result (torch's
// output_size), one a pooling with this stride can have come from.
func (m *MaxUnpool2d) ForwardIndices(x, indices *lathe.Tensor, size ...int) *lathe.Tensor {
	if m.failed != nil {
		return m.fail()
	}
	opts := m.Options
	if len(size) > 0 {
		opts = append(append([]lathe.WindowOption(nil), opts...), lathe.OutputSize(size...))
	}
	return x.MaxUnpool2d(indices, m.Kernel, opts...)
}
