package ops

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// grid_sampler is torch.nn.functional.grid_sample: for every point of a
// grid of normalised coordinates in [-1, 1], the input sampled there. One op
// serves both ranks: x is (N, C, H, W) with grid (N, Ho, Wo, 2), or
// (N, C, D, H, W) with grid (N, Do, Ho, Wo, 3); the grid's last dim holds
// (x, y[, z]), x indexing W, the last dim of the input. The output is
// (N, C, Ho, Wo) or (N, C, Do, Ho, Wo).
//
// Its gradient is a composite of differentiable ops (autodiff/rules_grid.go),
// not a backward op with kernels, so second derivatives need no kernel either.

// The sampling modes and padding modes, in PyTorch's numbering
// (GridSampler.h's GridSamplerInterpolation and GridSamplerPadding).
const (
	GridBilinear = 0
	GridNearest  = 1
	GridBicubic  = 2 // 2-d only

	GridZeros      = 0
	GridBorder     = 1
	GridReflection = 2
)

// GridSample is grid_sampler's attribute.
type GridSample struct {
	Mode         int // GridBilinear, GridNearest or GridBicubic
	Padding      int // GridZeros, GridBorder or GridReflection
	AlignCorners bool
}

// GridSampler is the op.
var GridSampler = dispatch.Register(&dispatch.Op[GridSample]{Schema: schema("grid_sampler", "x", "grid"), Infer: gridSamplerInfer})

func gridSamplerInfer(in []*dispatch.Tensor, a GridSample) (dispatch.DType, []int, error) {
	x, grid := in[0], in[1]
	if err := checkDType(x, "x", Floats); err != nil {
		return 0, nil, err
	}
	if err := checkDType(grid, "grid", Floats); err != nil {
		return 0, nil, err
	}
	if grid.DType != x.DType {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrDType, Arg: "grid", Expected: x.DType.String(), Found: grid.DType.String(),
			Detail: "is " + grid.DType.String() + " but x is " + x.DType.String() + "; they must have the same dtype",
			Fix:    "cast grid with .Cast(" + x.DType.GoString() + ")"}
	}
	if a.Mode < GridBilinear || a.Mode > GridBicubic {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "mode", Found: strconv.Itoa(a.Mode),
			Detail: "is " + strconv.Itoa(a.Mode) + ", not a sampling mode", Fix: "use GridBilinear, GridNearest or GridBicubic"}
	}
	if a.Padding < GridZeros || a.Padding > GridReflection {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "padding_mode", Found: strconv.Itoa(a.Padding),
			Detail: "is " + strconv.Itoa(a.Padding) + ", not a padding mode", Fix: "use GridZeros, GridBorder or GridReflection"}
	}
	r := x.Rank()
	if r != 4 && r != 5 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Found: dispatch.FormatShape(x.Shape),
			Detail: "has shape " + dispatch.FormatShape(x.Shape) + ", but grid sampling takes 4-d (N, C, H, W) or 5-d (N, C, D, H, W) input",
			Fix:    "add the batch and channel dims, e.g. with Unsqueeze(0)"}
	}
	k := r - 2
	if a.Mode == GridBicubic && k != 2 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "mode", Found: "bicubic",
			Detail: "is bicubic, which samples 4-d input only, but x is " + strconv.Itoa(r) + "-d",
			Fix:    "use bilinear (trilinear) or nearest for 5-d input"}
	}
	if grid.Rank() != r || grid.Shape[r-1] != k {
		want := "(N, Ho, Wo, 2)"
		if k == 3 {
			want = "(N, Do, Ho, Wo, 3)"
		}
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "grid", Expected: want, Found: dispatch.FormatShape(grid.Shape),
			Detail: "has shape " + dispatch.FormatShape(grid.Shape) + ", but a " + strconv.Itoa(r) + "-d x needs a grid " + want,
			Fix:    "give one " + strconv.Itoa(k) + "-vector of coordinates per output point, last"}
	}
	if grid.Shape[0] != x.Shape[0] {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "grid", Expected: "batch size " + strconv.Itoa(x.Shape[0]), Found: dispatch.FormatShape(grid.Shape),
			Detail: "has batch size " + strconv.Itoa(grid.Shape[0]) + " but x has " + strconv.Itoa(x.Shape[0]),
			Fix:    "give one grid per input of the batch"}
	}
	for _, s := range x.Shape[2:] {
		if s < 1 {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Found: dispatch.FormatShape(x.Shape),
				Detail: "has shape " + dispatch.FormatShape(x.Shape) + ", with an empty spatial dim to sample from",
				Fix:    "give x at least one element in every spatial dim"}
		}
	}
	return x.DType, append(clone(x.Shape[:2]), grid.Shape[1:r-1]...), nil
}
