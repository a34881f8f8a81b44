package ops

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// Fused batch norm over x [N, C, ...], as PyTorch's native_batch_norm and
// native_batch_norm_backward (aten/src/ATen/native/Normalization.cpp): the
// batch's statistics, the normalisation with its affine, and the gradient of
// all of it, each one pass or two over x, where the composite (the root
// package's batch_norm) takes some twenty elementwise ops each way.
//
// The statistics are an op of their own, whose result the normalisation
// takes as input, rather than extra values that the normalisation returns
// (as attention returns its logsumexp): the caller needs them outside the
// tape (the running-stat update), the normalisation out of training is the
// same kernel fed the running statistics, and y keeps x's shape, so that
// no narrow stands between the op and its consumers (a narrow's gradient is
// a padded copy of the whole gradient).
//
// A float16 or bfloat16 x takes its statistics and parameters in float32,
// as PyTorch's mixed-type batch norm (batch_norm_use_mixed_type in
// Normalization.cpp: a 16-bit activation into a float32 BatchNorm2d under
// autocast): the moments are float32, y keeps x's 16 bits, rounded once,
// and the backward's gradients are float32. Anywhere else every argument
// has x's dtype.
var (
	// BatchNormMoments gives [2, C] of StatsDType(x): row 0 the mean of
	// each channel of x [N, C, ...] over every dim but 1, row 1 its biased
	// variance (NaN for both when N·spatial is 0).
	BatchNormMoments = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: schema("batch_norm_moments", "x"),
		Infer: batchNormMomentsInfer})
	// BatchNormApply is (x - mean)/√(var + eps)·weight + bias, per channel
	// of x [N, C, ...]; mean, var, weight and bias are [C]. Its gradient
	// (autodiff) depends on BatchNormParams.Training: in training mean and
	// var must be x's own batch statistics (BatchNormMoments of x, not
	// recorded), and the gradient of x goes through them as well, as torch's
	// native_batch_norm computes them inside the op; out of training they
	// are constants (the running statistics). Either way they take no
	// gradient of their own.
	BatchNormApply = dispatch.Register(&dispatch.Op[BatchNormParams]{
		Schema: schema("batch_norm_apply", "x", "mean", "var", "weight", "bias"), Infer: batchNormApplyInfer})
	// BatchNormBackward takes x, mean, var, weight (as BatchNormApply) and
	// the gradient of its result (x's dtype), and gives the gradients of x,
	// weight and bias one after the other in one flat tensor of
	// numel(x) + 2·C elements of the statistics' dtype: float32 for a
	// 16-bit x, whose dx the caller rounds to x's dtype.
	BatchNormBackward = dispatch.Register(&dispatch.Op[BatchNormParams]{
		Schema: schema("batch_norm_backward", "x", "mean", "var", "weight", "grad"), Infer: batchNormBackwardInfer})
)

// BatchNormParams are the attributes of BatchNormApply and
// BatchNormBackward: eps, added to the variance, and whether mean and var
// are the batch's own statistics (training) or constants.
type BatchNormParams struct {
	Eps      float64
	Training bool
}

// BatchNormGeometry is x [N, C, ...] read as [N, C, S]: S the product of
// the spatial dims (1 for rank 2).
type BatchNormGeometry struct{ N, C, S int }

// BatchNormShape checks x, a float tensor of rank 2 or more, and returns
// its geometry.
func BatchNormShape(x *dispatch.Tensor) (BatchNormGeometry, error) {
	if err := checkDType(x, "x", Floats); err != nil {
		return BatchNormGeometry{}, err
	}
	if x.Rank() < 2 {
		return BatchNormGeometry{}, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Found: dispatch.FormatShape(x.Shape),
			Detail: "has shape " + dispatch.FormatShape(x.Shape) + " but the op takes [N, C, ...]",
			Fix:    "give a batch dim first and channels second"}
	}
	g := BatchNormGeometry{N: x.Shape[0], C: x.Shape[1], S: 1}
	for _, s := range x.Shape[2:] {
		g.S *= s
	}
	return g, nil
}

// StatsDType is the dtype of batch norm's statistics and parameters for an
// x of dtype dt: float32 for the 16-bit floats, dt itself otherwise.
func StatsDType(dt dispatch.DType) dispatch.DType {
	if dispatch.Halves.Has(dt) {
		return dispatch.Float32
	}
	return dt
}

func batchNormMomentsInfer(in []*dispatch.Tensor, _ dispatch.None) (dispatch.DType, []int, error) {
	g, err := BatchNormShape(in[0])
	if err != nil {
		return 0, nil, err
	}
	return StatsDType(in[0].DType), []int{2, g.C}, nil
}

// checkBatchNorm checks the arguments that BatchNormApply and
// BatchNormBackward share: x, then [C] tensors of StatsDType(x), then,
// when withGrad, a grad of x's dtype and shape.
func checkBatchNorm(in []*dispatch.Tensor, a BatchNormParams, names []string, withGrad bool) (BatchNormGeometry, error) {
	g, err := BatchNormShape(in[0])
	if err != nil {
		return g, err
	}
	if err := CheckEps(a.Eps); err != nil {
		return g, err
	}
	channels := in[1:]
	if withGrad {
		channels = in[1 : len(in)-1]
		if err := sameDType([]*dispatch.Tensor{in[0], in[len(in)-1]}, func(i int) string { return []string{"x", "grad"}[i] }, 0); err != nil {
			return g, err
		}
	}
	stats := StatsDType(in[0].DType)
	for i, t := range channels {
		if t.DType != stats {
			detail := "is " + t.DType.String() + " but x is " + in[0].DType.String()
			if stats != in[0].DType {
				detail += ", whose statistics and parameters are " + stats.String()
			}
			return g, &dispatch.Error{Kind: dispatch.ErrDType, Arg: names[i+1], Expected: stats.String(), Found: t.DType.String(),
				Detail: detail, Fix: "cast it with .Cast(" + stats.GoString() + ")"}
		}
	}
	for i, t := range channels {
		if t.Rank() != 1 || t.Shape[0] != g.C {
			want := dispatch.FormatShape([]int{g.C})
			return g, &dispatch.Error{Kind: dispatch.ErrShape, Arg: names[i+1], Expected: want, Found: dispatch.FormatShape(t.Shape),
				Detail: "has shape " + dispatch.FormatShape(t.Shape) + " but x " + dispatch.FormatShape(in[0].Shape) + " has " +
					strconv.Itoa(g.C) + " channels", Fix: "give one value per channel, shape " + want}
		}
	}
	if withGrad {
		gr := in[len(in)-1]
		if !equalShapes(gr.Shape, in[0].Shape) {
			return g, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "grad", Expected: dispatch.FormatShape(in[0].Shape),
				Found: dispatch.FormatShape(gr.Shape), Detail: "has shape " + dispatch.FormatShape(gr.Shape) + " but x is " +
					dispatch.FormatShape(in[0].Shape), Fix: "give the gradient of the forward's result"}
		}
	}
	return g, nil
}

func batchNormApplyInfer(in []*dispatch.Tensor, a BatchNormParams) (dispatch.DType, []int, error) {
	if _, err := checkBatchNorm(in, a, []string{"x", "mean", "var", "weight", "bias"}, false); err != nil {
		return 0, nil, err
	}
	return in[0].DType, append([]int{}, in[0].Shape...), nil
}

func batchNormBackwardInfer(in []*dispatch.Tensor, a BatchNormParams) (dispatch.DType, []int, error) {
	g, err := checkBatchNorm(in, a, []string{"x", "mean", "var", "weight", "grad"}, true)
	if err != nil {
		return 0, nil, err
	}
	n := in[0].Numel()
	if g.C > (math.MaxInt-n)/2 {
		return 0, nil, dispatch.ShapeError("", []int{n, 2 * g.C})
	}
	return StatsDType(in[0].DType), []int{n + 2*g.C}, nil
}
