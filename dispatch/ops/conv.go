package ops

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// Convolution over 1, 2 or 3 spatial dims, and unfold/fold (im2col/col2im).
//
// conv(x, w) is PyTorch's convolution without bias (the root package adds
// the bias as a broadcast add, whose gradient is a sum). Its two backward
// passes are ops of their own, as aten's convolution_backward is:
// conv_input_backward(g, w) is the gradient with respect to x (a transposed
// convolution, which is also ConvTranspose's forward) and
// conv_weight_backward(x, g) the gradient with respect to w. Each of the
// three is bilinear in its two arguments, so each one's gradient rule is the
// other two (autodiff/rules_conv.go), and second derivatives follow.

// ConvParams is the attribute of conv, conv_input_backward and
// conv_weight_backward. Window holds stride, padding and dilation; its
// Kernel is taken from w's shape by conv and conv_input_backward (which
// have w) and must be given to conv_weight_backward (which makes w's
// gradient). InputSize is the spatial size of x that conv_input_backward
// gives back: with a stride above 1, several input sizes have the same
// output size, so it cannot be inferred (transposed convolution's
// output_padding picks one).
type ConvParams struct {
	Window    layout.Window
	Groups    int
	InputSize []int
}

// UnfoldParams is the attribute of unfold and fold (PyTorch's F.unfold and
// F.fold): the window, and for fold the spatial size of the image it
// builds.
type UnfoldParams struct {
	Window     layout.Window
	OutputSize []int
}

// The convolution ops.
var (
	Conv               = dispatch.Register(&dispatch.Op[ConvParams]{Schema: schema("conv", "x", "w"), Infer: convInfer})
	ConvInputBackward  = dispatch.Register(&dispatch.Op[ConvParams]{Schema: schema("conv_input_backward", "g", "w"), Infer: convInputBackwardInfer})
	ConvWeightBackward = dispatch.Register(&dispatch.Op[ConvParams]{Schema: schema("conv_weight_backward", "x", "g"), Infer: convWeightBackwardInfer})
	Unfold             = dispatch.Register(&dispatch.Op[UnfoldParams]{Schema: schema("unfold", "x"), Infer: unfoldInfer})
	Fold               = dispatch.Register(&dispatch.Op[UnfoldParams]{Schema: schema("fold", "x"), Infer: foldInfer})
)

// WindowFor is a's window with the kernel size set from a weight shape
// (out channels, in channels per group, k1, ..., kd).
func (a ConvParams) WindowFor(wshape []int) layout.Window {
	win := a.Window
	win.Kernel = slices.Clone(wshape[2:])
	return win
}

func checkGroups(a ConvParams) error {
	if a.Groups < 1 {
		return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "groups", Detail: "is " + itoa(a.Groups) + ", below 1", Found: itoa(a.Groups),
			Fix: "use groups of at least 1"}
	}
	return nil
}

// checkRank refuses a tensor that is not (N, C, d1..dk) with k in 1..3, or
// whose rank is not want when want is set.
func checkRank(t *dispatch.Tensor, arg string, want int) error {
	r := t.Rank()
	if want == 0 && (r < 3 || r > 5) || want != 0 && r != want {
		exp := "3, 4 or 5 dims (N, C, then 1 to 3 spatial dims)"
		if want != 0 {
			exp = itoa(want) + " dims"
		}
		return &dispatch.Error{Kind: dispatch.ErrShape, Arg: arg, Expected: exp, Found: dispatch.FormatShape(t.Shape),
			Detail: "has shape " + dispatch.FormatShape(t.Shape) + " but needs " + exp,
			Fix:    "add a batch dim with Unsqueeze(0), or reshape it"}
	}
	return nil
}

// checkFloats refuses non-float arguments and mixed dtypes.
func checkFloats(in []*dispatch.Tensor, names []string) error {
	for i, t := range in {
		if err := checkDType(t, names[i], Floats); err != nil {
			return err
		}
	}
	return sameDType(in, func(i int) string { return names[i] }, 0)
}

// checkConvWeight checks w (O, C/groups, k...) against c input channels
// and groups; rank is x's.
func checkConvWeight(w *dispatch.Tensor, rank, c, groups int) error {
	if err := checkRank(w, "w", rank); err != nil {
		return err
	}
	o := w.Shape[0]
	switch {
	case c%groups != 0:
		return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "groups", Detail: "is " + itoa(groups) + ", which does not divide the " + itoa(c) + " input channels",
			Fix: "use a groups value that divides both channel counts"}
	case o%groups != 0:
		return &dispatch.Error{Kind: dispatch.ErrShape, Arg: "w", Detail: "has " + itoa(o) + " output channels (shape " + dispatch.FormatShape(w.Shape) +
			"), not a multiple of groups " + itoa(groups), Fix: "use a weight whose dim 0 is a multiple of groups"}
	case w.Shape[1]*groups != c:
		return &dispatch.Error{Kind: dispatch.ErrShape, Arg: "w", Expected: itoa(c / groups), Found: itoa(w.Shape[1]),
			Detail: "has shape " + dispatch.FormatShape(w.Shape) + ": dim 1 must be the input channels over groups, " +
				itoa(c) + "/" + itoa(groups) + " = " + itoa(c/groups), Fix: "give a weight of shape (out, in/groups, k...)"}
	}
	return nil
}

func convInfer(in []*dispatch.Tensor, a ConvParams) (dispatch.DType, []int, error) {
	if err := checkGroups(a); err != nil {
		return 0, nil, err
	}
	x, w := in[0], in[1]
	if err := checkFloats(in, []string{"x", "w"}); err != nil {
		return 0, nil, err
	}
	if err := checkRank(x, "x", 0); err != nil {
		return 0, nil, err
	}
	if err := checkConvWeight(w, x.Rank(), x.Shape[1], a.Groups); err != nil {
		return 0, nil, err
	}
	win := a.WindowFor(w.Shape)
	if err := win.Check("x", x.Shape[2:], false); err != nil {
		return 0, nil, err
	}
	return x.DType, append([]int{x.Shape[0], w.Shape[0]}, win.OutShape(x.Shape[2:])...), nil
}

// checkConvGrad checks that g is conv's output for an input of spatial
// size size: (n, o, out...).
func checkConvGrad(g *dispatch.Tensor, win layout.Window, n, o int, size []int) error {
	want := append([]int{n, o}, win.OutShape(size)...)
	if !slices.Equal(g.Shape, want) {
		return &dispatch.Error{Kind: dispatch.ErrShape, Arg: "g", Expected: dispatch.FormatShape(want), Found: dispatch.FormatShape(g.Shape),
			Detail: "has shape " + dispatch.FormatShape(g.Shape) + " but the convolution's output is " + dispatch.FormatShape(want),
			Fix:    "pass a gradient of the convolution output's shape"}
	}
	return nil
}

func convInputBackwardInfer(in []*dispatch.Tensor, a ConvParams) (dispatch.DType, []int, error) {
	if err := checkGroups(a); err != nil {
		return 0, nil, err
	}
	g, w := in[0], in[1]
	if err := checkFloats(in, []string{"g", "w"}); err != nil {
		return 0, nil, err
	}
	if err := checkRank(g, "g", 0); err != nil {
		return 0, nil, err
	}
	if err := checkRank(w, "w", g.Rank()); err != nil {
		return 0, nil, err
	}
	if w.Shape[0] != g.Shape[1] {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "w", Expected: itoa(g.Shape[1]), Found: itoa(w.Shape[0]),
			Detail: "has shape " + dispatch.FormatShape(w.Shape) + " but g has " + itoa(g.Shape[1]) + " channels (shape " + dispatch.FormatShape(g.Shape) + ")",
			Fix:    "give a weight whose dim 0 is g's channel count"}
	}
	if w.Shape[0]%a.Groups != 0 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "groups", Detail: "is " + itoa(a.Groups) + ", which does not divide the " + itoa(w.Shape[0]) + " channels of g",
			Fix: "use a groups value that divides both channel counts"}
	}
	if len(a.InputSize) != g.Rank()-2 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "input_size", Expected: itoa(g.Rank()-2) + " sizes", Found: dispatch.FormatShape(a.InputSize),
			Detail: "is " + dispatch.FormatShape(a.InputSize) + " but g has " + itoa(g.Rank()-2) + " spatial dims", Fix: "give one size per spatial dim"}
	}
	win := a.WindowFor(w.Shape)
	if err := win.Check("input_size", a.InputSize, false); err != nil {
		return 0, nil, err
	}
	if err := checkConvGrad(g, win, g.Shape[0], w.Shape[0], a.InputSize); err != nil {
		return 0, nil, err
	}
	return g.DType, append([]int{g.Shape[0], w.Shape[1] * a.Groups}, a.InputSize...), nil
}

func convWeightBackwardInfer(in []*dispatch.Tensor, a ConvParams) (dispatch.DType, []int, error) {
	if err := checkGroups(a); err != nil {
		return 0, nil, err
	}
	x, g := in[0], in[1]
	if err := checkFloats(in, []string{"x", "g"}); err != nil {
		return 0, nil, err
	}
	if err := checkRank(x, "x", 0); err != nil {
		return 0, nil, err
	}
	if err := checkRank(g, "g", x.Rank()); err != nil {
		return 0, nil, err
	}
	c, o := x.Shape[1], g.Shape[1]
	if c%a.Groups != 0 || o%a.Groups != 0 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "groups", Detail: "is " + itoa(a.Groups) + ", which does not divide the channel counts " +
			itoa(c) + " and " + itoa(o), Fix: "use a groups value that divides both channel counts"}
	}
	win := a.Window
	if err := win.Check("x", x.Shape[2:], false); err != nil {
		return 0, nil, err
	}
	if err := checkConvGrad(g, win, x.Shape[0], o, x.Shape[2:]); err != nil {
		return 0, nil, err
	}
	return x.DType, append([]int{o, c / a.Groups}, win.Kernel...), nil
}

func unfoldInfer(in []*dispatch.Tensor, a UnfoldParams) (dispatch.DType, []int, error) {
	x := in[0]
	if err := checkDType(x, "x", Floats); err != nil {
		return 0, nil, err
	}
	if err := checkRank(x, "x", 4); err != nil {
		return 0, nil, err
	}
	if err := a.Window.Check("x", x.Shape[2:], false); err != nil {
		return 0, nil, err
	}
	// (N, C·k1·k2, L1·L2): products that the count of the output's shape
	// would not see wrap (with N = 0, say).
	windows := a.Window.OutShape(x.Shape[2:])
	cols, ok1 := dispatch.CheckedNumel(append([]int{x.Shape[1]}, a.Window.Kernel...))
	l, ok2 := dispatch.CheckedNumel(windows)
	if !ok1 || !ok2 {
		return 0, nil, dispatch.ShapeError("", slices.Concat(x.Shape[:2], a.Window.Kernel, windows))
	}
	return x.DType, []int{x.Shape[0], cols, l}, nil
}

func foldInfer(in []*dispatch.Tensor, a UnfoldParams) (dispatch.DType, []int, error) {
	x := in[0]
	if err := checkDType(x, "x", Floats); err != nil {
		return 0, nil, err
	}
	if err := checkRank(x, "x", 3); err != nil {
		return 0, nil, err
	}
	if err := a.Window.Check("output_size", a.OutputSize, false); err != nil {
		return 0, nil, err
	}
	k, ok := dispatch.CheckedNumel(a.Window.Kernel)
	if !ok {
		return 0, nil, dispatch.ShapeError("kernel_size", a.Window.Kernel)
	}
	l, ok := dispatch.CheckedNumel(a.Window.OutShape(a.OutputSize))
	if !ok {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "output_size", Found: dispatch.FormatShape(a.OutputSize),
			Detail: "is " + dispatch.FormatShape(a.OutputSize) + ", which has more windows " + dispatch.FormatShape(a.Window.OutShape(a.OutputSize)) + " than an int counts",
			Fix:    "use a smaller output_size or a larger stride"}
	}
	if x.Shape[1]%k != 0 || x.Shape[2] != l {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Found: dispatch.FormatShape(x.Shape),
			Detail: "has shape " + dispatch.FormatShape(x.Shape) + " but needs (N, C·" + itoa(k) + ", " + itoa(l) +
				"): dim 1 a multiple of the kernel's " + itoa(k) + " elements and dim 2 the " + itoa(l) + " windows of output_size " + dispatch.FormatShape(a.OutputSize),
			Fix: "pass what Unfold gives for an image of output_size with the same window"}
	}
	return x.DType, append([]int{x.Shape[0], x.Shape[1] / k}, a.OutputSize...), nil
}
