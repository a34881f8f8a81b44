package lathe

import "strconv"

// Convolution and pooling slide a window over the spatial dims of an NC...
// tensor, and share their options, named as PyTorch names its arguments:
//
//	y := x.Conv2d(w, b, lathe.Stride(2), lathe.Padding(1))
//	p := x.MaxPool2d(3, lathe.Stride(2), lathe.CeilMode())
//
// A size option takes one value for every spatial dim or one per dim
// (Stride(2) is Stride(2, 2) on a 2-d op); the op checks the count and the
// values and reports a bad one as ErrValue naming the option.

// WindowOption sets an option of a convolution or pooling op.
type WindowOption func(*windowOptions)

// windowOptions holds what the options set; nil or zero means the op's
// default (PyTorch's).
type windowOptions struct {
	stride        []int // default: 1 for convolution, the kernel size for pooling
	padding       []int // default 0
	samePadding   bool  // Padding("same") for convolution
	dilation      []int // default 1
	outputPadding []int // transposed convolution only; default 0
	groups        int   // convolution only; default 1
	groupsSet     bool  // Groups was given (Groups(0) is an error, not the default)
	ceilMode      bool  // pooling: output sizes rounded up
	excludePad    bool  // avg pooling: count_include_pad=False
	divisor       int   // avg pooling: divisor_override; 0 means none
	divisorSet    bool  // Divisor was given (Divisor(0) is an error, not "none")
	kernel        []int // pooling: KernelSize, a size per dim instead of the op's one
	outputSize    []int // max unpooling: OutputSize
}

// Stride sets the step of the window (PyTorch's stride).
func Stride(s ...int) WindowOption { return func(o *windowOptions) { o.stride = s } }

// Padding sets the implicit zero padding on both sides of each spatial dim
// (PyTorch's padding; pooling pads with -inf for max and with zeros for avg).
func Padding(p ...int) WindowOption { return func(o *windowOptions) { o.padding = p } }

// PaddingSame pads a stride-1 convolution so that its output has the input's
// spatial size (PyTorch's padding="same"; the odd unit goes on the far side).
func PaddingSame() WindowOption { return func(o *windowOptions) { o.samePadding = true } }

// Dilation sets the spacing between window elements (PyTorch's dilation).
func Dilation(d ...int) WindowOption { return func(o *windowOptions) { o.dilation = d } }

// OutputPadding adds size to one side of a transposed convolution's output
// (PyTorch's output_padding; each must be less than the stride or dilation).
func OutputPadding(p ...int) WindowOption { return func(o *windowOptions) { o.outputPadding = p } }

// Groups splits the channels of a convolution into g independent groups;
// g equal to the input channels is a depthwise convolution.
func Groups(g int) WindowOption {
	return func(o *windowOptions) { o.groups, o.groupsSet = g, true }
}

// CeilMode rounds a pooling output size up instead of down, so a last
// partial window that starts inside the input (or its left padding) counts,
// even one longer than the padded input (PyTorch's ceil_mode: a length-3
// input pooled by 4 gives one window of the 3 elements).
func CeilMode() WindowOption { return func(o *windowOptions) { o.ceilMode = true } }

// ExcludePadding makes average pooling divide by the number of input
// elements in each window instead of the window's size (PyTorch's
// count_include_pad=False).
func ExcludePadding() WindowOption { return func(o *windowOptions) { o.excludePad = true } }

// Divisor makes average pooling divide every window's sum by d (PyTorch's
// divisor_override).
func Divisor(d int) WindowOption {
	return func(o *windowOptions) { o.divisor, o.divisorSet = d, true }
}

// KernelSize gives a pooling window one size per spatial dim, in place of
// the op's one size for all: x.MaxPool2d(0, lathe.KernelSize(2, 3)).
func KernelSize(k ...int) WindowOption { return func(o *windowOptions) { o.kernel = k } }

// OutputSize sets the spatial size of a max unpooling's result (PyTorch's
// output_size), which a pooling with stride s can have come from in up to
// s sizes; the default is the smallest.
func OutputSize(s ...int) WindowOption { return func(o *windowOptions) { o.outputSize = s } }

func windowOpts(opts []WindowOption) windowOptions {
	var o windowOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// spatial expands a size option to one value per spatial dim: nil gives def
// for each, one value is repeated, nd values are kept. ok is false for any
// other count.
func spatial(vals []int, nd, def int) (out []int, ok bool) {
	out = make([]int, nd)
	switch len(vals) {
	case 0:
		for i := range out {
			out[i] = def
		}
	case 1:
		for i := range out {
			out[i] = vals[0]
		}
	case nd:
		copy(out, vals)
	default:
		return nil, false
	}
	return out, true
}

func countError(op, arg string, n, k int) *Error {
	e := errorf(op, ErrValue, arg, "has "+strconv.Itoa(n)+" values for "+strconv.Itoa(k)+" spatial dims",
		"give one value, or one per spatial dim")
	e.Expected, e.Found = strconv.Itoa(k), strconv.Itoa(n)
	return e
}
