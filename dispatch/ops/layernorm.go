package ops

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// Fused layer normalisation (torch's native_layer_norm and
// native_layer_norm_backward). One kernel reads a row for its mean and
// variance and writes (x - mean)·rstd·weight + bias, where the composite of
// mean, sub, mul, rsqrt and add made six full-size temporaries and as many
// passes; the backward is one kernel too.
//
// The inputs are canonical: x [..., D], normalised over its last dim (the
// root package merges a normalized shape of several dims into one), as
// rows of D values, rows the product of the other dims; weight [D] and
// bias [D], always given (the root passes ones and zeros for an op
// without them). x keeps its shape, so that the common call (GPT's, over
// the last dim) makes no view: a view's handle would hold the result's
// buffer until the collector ran, and the next call would take a fresh one
// from the system instead of the pool. The forward saves neither mean nor rstd:
// the backward recomputes them from x, one more pass over a row that it
// reads anyway, so that the forward's result stays a plain tensor of x's
// shape and the recomputation is the forward's own code, bit for bit.
var (
	// LayerNorm gives (x - mean)/√(var + eps)·weight + bias per row of x
	// (along its last dim), with the biased variance, shaped as x.
	LayerNorm = dispatch.Register(&dispatch.Op[LayerNormParams]{
		Schema: schema("native_layer_norm", "x", "weight", "bias"), Infer: layerNormInfer})
	// LayerNormBackward takes x, weight and the gradient of the forward's
	// result, and gives the gradients of x, weight and bias one after the
	// other in one flat tensor of rows·D + 2·D elements (dx row-major, as
	// x's shape).
	LayerNormBackward = dispatch.Register(&dispatch.Op[LayerNormParams]{
		Schema: schema("native_layer_norm_backward", "x", "weight", "grad"), Infer: layerNormBackwardInfer})
)

// LayerNormParams are the attributes of the fused layer norm ops: eps, added
// to the variance (CheckEps).
type LayerNormParams struct {
	Eps float64
}

// LayerNormShapes checks x, weight and a third argument (bias of the
// forward, grad of the backward, of x's shape when rowShaped) and returns
// x's rows (the product of its dims but the last) and D (its last dim).
func LayerNormShapes(x, weight, third *dispatch.Tensor, thirdName string, rowShaped bool, a LayerNormParams) (rows, d int, err error) {
	names := func(i int) string { return [...]string{"x", "weight", thirdName}[i] }
	in := []*dispatch.Tensor{x, weight, third}
	for i, t := range in {
		if err := checkDType(t, names(i), Floats); err != nil {
			return 0, 0, err
		}
	}
	if err := sameDType(in, names, 0); err != nil {
		return 0, 0, err
	}
	if x.Rank() == 0 {
		return 0, 0, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Found: dispatch.FormatShape(x.Shape),
			Detail: "has shape [] but the fused op takes [..., D]",
			Fix:    "call Tensor.LayerNorm, which brings any shape to this one"}
	}
	rows, d = 1, x.Shape[x.Rank()-1]
	for _, s := range x.Shape[:x.Rank()-1] {
		rows *= s
	}
	for i, t := range in[1:] {
		want := []int{d}
		if i == 1 && rowShaped {
			want = x.Shape
		}
		if !equalShapes(t.Shape, want) {
			return 0, 0, &dispatch.Error{Kind: dispatch.ErrShape, Arg: names(i + 1), Expected: dispatch.FormatShape(want),
				Found:  dispatch.FormatShape(t.Shape),
				Detail: "has shape " + dispatch.FormatShape(t.Shape) + " but x " + dispatch.FormatShape(x.Shape) + " needs " + dispatch.FormatShape(want),
				Fix:    "give weight and bias [D] and a gradient of x's shape"}
		}
	}
	if err := CheckEps(a.Eps); err != nil {
		return 0, 0, err
	}
	return rows, d, nil
}

func layerNormInfer(in []*dispatch.Tensor, a LayerNormParams) (dispatch.DType, []int, error) {
	if _, _, err := LayerNormShapes(in[0], in[1], in[2], "bias", false, a); err != nil {
		return 0, nil, err
	}
	return in[0].DType, clone(in[0].Shape), nil
}

func layerNormBackwardInfer(in []*dispatch.Tensor, a LayerNormParams) (dispatch.DType, []int, error) {
	rows, d, err := LayerNormShapes(in[0], in[1], in[2], "grad", true, a)
	if err != nil {
		return 0, nil, err
	}
	n, ok := dispatch.CheckedNumel([]int{rows + 2, d})
	if !ok {
		return 0, nil, dispatch.ShapeError("", []int{rows + 2, d})
	}
	return in[0].DType, []int{n}, nil
}

// CheckEps is every norm's rule for eps, which is added to a variance
// before its square root: at least 0, +Inf included (the normalised values
// are then 0 and the result the bias, as in torch, as a finite eps past
// float32's range gives in a float32 kernel anyway). NaN and a negative
// eps are an ErrValue: the root of a variance smaller than -eps is NaN.
func CheckEps(eps float64) error {
	if eps >= 0 {
		return nil
	}
	return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "eps", Found: strconv.FormatFloat(eps, 'g', -1, 64),
		Detail: "is " + strconv.FormatFloat(eps, 'g', -1, 64), Fix: "use eps ≥ 0, e.g. 1e-5"}
}
