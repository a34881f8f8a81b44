package nn

import "github.com/lathe-ml/lathe"

// The options of the windowed layers (Conv2d, MaxPool2d, AvgPool2d) and of
// Upsample are lathe's, named as PyTorch names the arguments; each nn
// option below hands its value to the lathe option of the same name, which
// the layer passes to its op in Forward. The op checks them, so a bad one
// fails Forward's result with an ErrValue that names it.

func window(w lathe.WindowOption) Option {
	return func(o *options) { o.window = append(o.window, w) }
}

func interp(i lathe.InterpOption) Option {
	return func(o *options) { o.interp = append(o.interp, i) }
}

// Stride sets the step of a convolution's or pooling's window (torch's
// stride; one value for both dims or one per dim).
func Stride(s ...int) Option { return window(lathe.Stride(s...)) }

// Padding sets the zero padding on both sides of each spatial dim (torch's
// padding).
func Padding(p ...int) Option { return window(lathe.Padding(p...)) }

// PaddingSame pads a stride-1 convolution so that its output keeps the
// input's spatial size (torch's padding="same").
func PaddingSame() Option { return window(lathe.PaddingSame()) }

// Dilation sets the spacing between window elements (torch's dilation).
func Dilation(d ...int) Option { return window(lathe.Dilation(d...)) }

// Groups splits a convolution's channels into g groups (torch's groups; g
// equal to in is a depthwise convolution).
func Groups(g int) Option { return func(o *options) { o.groups, o.groupsSet = g, true } }

// KernelSize gives a convolution's or pooling's window one size per dim, in
// place of the constructor's square kernel: NewConv2d(3, 8, 0,
// KernelSize(3, 5)) is torch's Conv2d(3, 8, (3, 5)).
func KernelSize(k ...int) Option { return func(o *options) { o.kernel = append([]int(nil), k...) } }

// CeilMode rounds a pooling's output size up (torch's ceil_mode).
func CeilMode() Option { return window(lathe.CeilMode()) }

// ExcludePadding makes average pooling divide by the input elements in
// each window (torch's count_include_pad=False).
func ExcludePadding() Option { return window(lathe.ExcludePadding()) }

// Divisor makes average pooling divide every window's sum by d (torch's
// divisor_override).
func Divisor(d int) Option { return window(lathe.Divisor(d)) }

// ScaleFactor sets Upsample's output size as the input's times f (torch's
// scale_factor; one value or one per spatial dim).
func ScaleFactor(f ...float64) Option { return interp(lathe.ScaleFactor(f...)) }

// Size sets Upsample's output spatial size (torch's size).
func Size(s ...int) Option { return interp(lathe.Size(s...)) }

// Mode sets Upsample's interpolation by torch's name for it, "nearest" (the
// default), "bilinear" and the others lathe.Mode lists (torch's mode).
func Mode(m string) Option { return interp(lathe.Mode(m)) }

// AlignCorners aligns the corner pixels of input and output (torch's
// align_corners=True).
func AlignCorners() Option { return interp(lathe.AlignCorners()) }

// RecomputeScaleFactor computes the scale from the output size (torch's
// recompute_scale_factor=True).
func RecomputeScaleFactor() Option { return interp(lathe.RecomputeScaleFactor()) }
