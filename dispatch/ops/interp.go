package ops

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// Interpolation (torch.nn.functional.interpolate) resamples the spatial
// dims of an (N, C, d1, ..., dk) tensor. There is one op per kind of
// filter, each with a backward op of its own, as PyTorch has
// (upsample_bilinear2d and upsample_bilinear2d_backward, ...):
//
//	upsample_nearest   nearest and nearest-exact (Interp.Exact)
//	upsample_linear    linear, bilinear and trilinear, by the number of spatial dims
//	upsample_bicubic   bicubic (Keys' kernel, A = -0.75, indices clamped at the border)
//
// and upsample_<filter>_backward, which scatter-adds an output gradient back
// to the input's size. Every one of them is linear in its tensor argument, so
// the gradient of a forward op is its backward op and the gradient of a
// backward op is the forward op again (derivatives.yaml: upsample_*_backward,
// grad_output: upsample_*(grad, ...)); that makes second derivatives work.
//
// The ops take any number k ≥ 1 of spatial dims; the root package's
// Interpolate holds each mode to the rank PyTorch gives it.

// Interp is the attribute of the upsample ops. Sizes and scales have one
// entry per spatial dim.
type Interp struct {
	// Size is the output's spatial sizes (the forward op's output; the
	// backward op's incoming gradient).
	Size []int
	// Scales are the scale factors the caller gave (output over input),
	// used as they are to map output coordinates to input ones, as PyTorch
	// does when recompute_scale_factor is not set. Nil or a zero entry
	// means input size over output size.
	Scales []float64
	// AlignCorners maps the corner pixels' centres onto each other
	// (linear and bicubic only).
	AlignCorners bool
	// Exact selects nearest-exact: the source pixel is the one whose centre
	// is nearest, where nearest takes floor(dst·scale) (upsample_nearest only).
	Exact bool
	// InputSize is the forward input's spatial sizes (backward ops only).
	InputSize []int
}

// Upsample is one filter's pair of ops: the forward one and its backward
// one, which scatter-adds an output gradient back to the input's size.
type Upsample struct {
	Filter   int // layout.FilterNearest, FilterLinear or FilterCubic
	Forward  *dispatch.Op[Interp]
	Backward *dispatch.Op[Interp]
}

// The upsample ops, one pair per filter.
var (
	UpsampleNearest = upsample("upsample_nearest", layout.FilterNearest)
	UpsampleLinear  = upsample("upsample_linear", layout.FilterLinear)
	UpsampleBicubic = upsample("upsample_bicubic", layout.FilterCubic)
)

// Upsamples lists the pairs, for backends that register them from one
// template.
var Upsamples []Upsample

func upsample(name string, filter int) Upsample {
	u := Upsample{Filter: filter,
		Forward:  dispatch.Register(&dispatch.Op[Interp]{Schema: schema(name, "x"), Infer: upsampleInfer(name, filter, false)}),
		Backward: dispatch.Register(&dispatch.Op[Interp]{Schema: schema(name+"_backward", "grad"), Infer: upsampleInfer(name+"_backward", filter, true)}),
	}
	Upsamples = append(Upsamples, u)
	return u
}

func upsampleInfer(name string, filter int, backward bool) func([]*dispatch.Tensor, Interp) (dispatch.DType, []int, error) {
	arg := "x"
	if backward {
		arg = "grad"
	}
	return func(in []*dispatch.Tensor, a Interp) (dispatch.DType, []int, error) {
		x := in[0]
		if err := checkDType(x, arg, Floats); err != nil {
			return 0, nil, err
		}
		if x.Rank() < 3 {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: arg, Found: dispatch.FormatShape(x.Shape),
				Detail: "has shape " + dispatch.FormatShape(x.Shape) + ", but interpolation needs (N, C, d1, ...) with at least one spatial dim",
				Fix:    "add the batch and channel dims, e.g. with Unsqueeze(0)"}
		}
		k := x.Rank() - 2
		spatial := x.Shape[2:]
		if err := checkSizes("size", a.Size, k); err != nil {
			return 0, nil, err
		}
		if a.Scales != nil && len(a.Scales) != k {
			return 0, nil, layout.CountError("scale_factor", len(a.Scales), k)
		}
		for _, s := range a.Scales {
			if !(s >= 0) || math.IsInf(s, 0) {
				return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "scale_factor", Found: strconv.FormatFloat(s, 'g', -1, 64),
					Detail: "has " + strconv.FormatFloat(s, 'g', -1, 64) + ", not a positive finite scale", Fix: "use scales above 0"}
			}
		}
		if a.AlignCorners && filter == layout.FilterNearest {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "align_corners",
				Detail: "is set, but nearest interpolation has no corners to align",
				Fix:    "use align_corners only with linear, bilinear, bicubic or trilinear"}
		}
		if a.Exact && filter != layout.FilterNearest {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "exact", Detail: "is set on " + name, Fix: "use exact only with upsample_nearest"}
		}
		if !backward {
			if err := checkSizes(arg, spatial, k); err != nil {
				return 0, nil, err
			}
			return x.DType, append(clone(x.Shape[:2]), a.Size...), nil
		}
		if err := checkSizes("input_size", a.InputSize, k); err != nil {
			return 0, nil, err
		}
		for i, s := range spatial {
			if s != a.Size[i] {
				return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: arg, Expected: dispatch.FormatShape(a.Size), Found: dispatch.FormatShape(spatial),
					Detail: "has spatial size " + dispatch.FormatShape(spatial) + " but the forward output's was " + dispatch.FormatShape(a.Size),
					Fix:    "pass the gradient of the forward op's output"}
			}
		}
		return x.DType, append(clone(x.Shape[:2]), a.InputSize...), nil
	}
}

// checkSizes checks that sizes has k entries, each at least 1 (PyTorch:
// "input and output sizes should be greater than 0").
func checkSizes(arg string, sizes []int, k int) error {
	if len(sizes) != k {
		return layout.CountError(arg, len(sizes), k)
	}
	for _, s := range sizes {
		if s < 1 {
			kind := dispatch.ErrValue
			if arg == "x" || arg == "grad" {
				kind = dispatch.ErrShape
			}
			return &dispatch.Error{Kind: kind, Arg: arg, Found: dispatch.FormatShape(sizes),
				Detail: "has spatial sizes " + dispatch.FormatShape(sizes) + ": input and output sizes must be at least 1",
				Fix:    "use sizes (or scale factors) that give every spatial dim at least one element"}
		}
	}
	return nil
}
