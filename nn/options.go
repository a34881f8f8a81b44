package nn

import "github.com/lathe-ml/lathe"

// The options of the windowed layers (Conv2d, MaxPool2d, AvgPool2d) and of
// Upsample are lathe's, named as PyTorch names the arguments; each nn
// option below hands its value to the lathe option of the same name, which
// the layer passes to its op in Forward. The op checks their values, so a
// bad one fails Forward's result with an ErrValue that names it; an option
// the layer does not take at all fails the layer when it is built.

func window(name string, w lathe.WindowOption) Option {
	return windowRecorded(name, w, func(*options) {})
}

// windowRecorded is window for an option whose value the layer reads
// itself too (the convolutions' checks, and their padding modes): record
// keeps it in the options.
func windowRecorded(name string, w lathe.WindowOption, record func(*options)) Option {
	return Option{name, func(o *options) {
		o.window = append(o.window, w)
		o.windowArgs = append(o.windowArgs, name)
		record(o)
	}}
}

func interp(name string, i lathe.InterpOption) Option {
	return Option{name, func(o *options) { o.interp = append(o.interp, i) }}
}

// Stride sets the step of a convolution's or pooling's window (torch's
// stride; one value for both dims or one per dim).
func Stride(s ...int) Option {
	s = append([]int(nil), s...)
	return windowRecorded("stride", lathe.Stride(s...), func(o *options) { o.stride = s })
}

// Padding sets the zero padding on both sides of each spatial dim (torch's
// padding).
func Padding(p ...int) Option {
	p = append([]int(nil), p...)
	return windowRecorded("padding", lathe.Padding(p...), func(o *options) { o.padding, o.paddingSame = p, false })
}

// PaddingSame pads a stride-1 convolution so that its output keeps the
// input's spatial size (torch's padding="same").
func PaddingSame() Option {
	return windowRecorded("padding", lathe.PaddingSame(), func(o *options) { o.padding, o.paddingSame = nil, true })
}

// Dilation sets the spacing between window elements (torch's dilation).
func Dilation(d ...int) Option {
	d = append([]int(nil), d...)
	return windowRecorded("dilation", lathe.Dilation(d...), func(o *options) { o.dilation = d })
}

// PaddingMode sets how a convolution pads its input, by torch's name
// (padding_mode): "zeros" (the default), or "reflect", "replicate" or
// "circular", which pad x by the layer's Padding (or PaddingSame's
// amounts) in that mode of lathe's Pad before a convolution without
// padding, as torch's layers do. A transposed convolution takes only
// "zeros", as torch's.
func PaddingMode(m string) Option {
	return Option{"padding_mode", func(o *options) { o.paddingMode = m }}
}

// OutputPadding adds to one side of each spatial dim of a transposed
// convolution's output (torch's output_padding: one value for every dim or
// one per dim), each value below the stride or the dilation of its dim.
func OutputPadding(p ...int) Option { return window("output_padding", lathe.OutputPadding(p...)) }

// Groups splits a convolution's channels into g groups (torch's groups; g
// equal to in is a depthwise convolution).
func Groups(g int) Option {
	return Option{"groups", func(o *options) { o.groups, o.groupsSet = g, true }}
}

// KernelSize gives a convolution's or pooling's window one size per dim, in
// place of the constructor's square kernel: NewConv2d(3, 8, 0,
// KernelSize(3, 5)) is torch's Conv2d(3, 8, (3, 5)).
func KernelSize(k ...int) Option {
	return Option{"kernel_size", func(o *options) { o.kernel = append([]int(nil), k...) }}
}

// CeilMode rounds a pooling's output size up (torch's ceil_mode).
func CeilMode() Option { return window("ceil_mode", lathe.CeilMode()) }

// ExcludePadding makes average pooling divide by the input elements in
// each window (torch's count_include_pad=False).
func ExcludePadding() Option { return window("count_include_pad", lathe.ExcludePadding()) }

// Divisor makes average pooling divide every window's sum by d (torch's
// divisor_override).
func Divisor(d int) Option { return window("divisor_override", lathe.Divisor(d)) }

// ScaleFactor sets Upsample's output size as the input's times f (torch's
// scale_factor; one value or one per spatial dim).
func ScaleFactor(f ...float64) Option { return interp("scale_factor", lathe.ScaleFactor(f...)) }

// Size sets Upsample's output spatial size (torch's size).
func Size(s ...int) Option { return interp("size", lathe.Size(s...)) }

// Mode sets Upsample's interpolation by torch's name for it, "nearest" (the
// default), "bilinear" and the others lathe.Mode lists (torch's mode), and
// an EmbeddingBag's reduction, "sum", "mean" (its default) or "max".
func Mode(m string) Option {
	return Option{"mode", func(o *options) { o.interp, o.bagMode = append(o.interp, lathe.Mode(m)), m }}
}

// AlignCorners aligns the corner pixels of input and output (torch's
// align_corners=True).
func AlignCorners() Option { return interp("align_corners", lathe.AlignCorners()) }

// RecomputeScaleFactor computes the scale from the output size (torch's
// recompute_scale_factor=True).
func RecomputeScaleFactor() Option {
	return interp("recompute_scale_factor", lathe.RecomputeScaleFactor())
}

// The options of the normalisation layers, as torch's keywords.

// NoAffine leaves out a normalisation layer's weight and bias (torch's
// affine=False; LayerNorm's elementwise_affine=False): its state dict then
// holds only its buffers, if any.
func NoAffine() Option {
	return Option{"affine", func(o *options) { o.affine, o.affineSet = false, true }}
}

// Affine gives an instance norm layer a weight and a bias (torch's
// affine=True; the batch norms, GroupNorm and LayerNorm have them unless
// NoAffine).
func Affine() Option {
	return Option{"affine", func(o *options) { o.affine, o.affineSet = true, true }}
}

// TrackRunningStats gives an instance norm layer running statistics
// (torch's track_running_stats=True), which it normalises by in
// evaluation mode (the batch norms have them unless NoRunningStats).
func TrackRunningStats() Option {
	return Option{"track_running_stats", func(o *options) { o.runningStats, o.runningStatsSet = true, true }}
}

// NoRunningStats makes a batch norm layer keep no running statistics
// (torch's track_running_stats=False): it has no buffers at all and
// normalises by the batch's statistics in evaluation mode too.
func NoRunningStats() Option {
	return Option{"track_running_stats", func(o *options) { o.runningStats, o.runningStatsSet = false, true }}
}

// CumulativeAverage makes a batch norm layer's running statistics the
// plain average over every batch seen (torch's momentum=None): step n
// weighs its batch by 1/n, n counted by num_batches_tracked.
func CumulativeAverage() Option {
	return Option{"momentum", func(o *options) { o.cumulative = true }}
}

// The options of Embedding, as torch's keywords.

// PaddingIdx makes row i of an Embedding its padding row (torch's
// padding_idx; a negative i counts from the end): made zeros, and never
// given a gradient.
func PaddingIdx(i int) Option {
	return Option{"padding_idx", func(o *options) { o.paddingIdx, o.paddingIdxSet = i, true }}
}

// MaxNorm makes an Embedding or EmbeddingBag renormalise each row it
// looks up whose norm exceeds m to norm m, in its weight, before the
// lookup (torch's max_norm).
func MaxNorm(m float64) Option {
	return Option{"max_norm", func(o *options) { o.maxNorm, o.maxNormSet = m, true }}
}

// NormType sets the p of MaxNorm's p-norm (torch's norm_type; 2 by
// default).
func NormType(p float64) Option {
	return Option{"norm_type", func(o *options) { o.normType, o.normTypeSet = p, true }}
}
