package dispatch

import (
	"math"
	"strconv"
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

// Filters of the upsample ops, by op name.
const (
	FilterNearest = iota
	FilterLinear
	FilterCubic
)

// UpsampleFilter gives the filter of an upsample op (forward or backward) by
// name, and whether it is the backward op.
func UpsampleFilter(op string) (filter int, backward bool) {
	switch op {
	case "upsample_nearest":
		return FilterNearest, false
	case "upsample_linear":
		return FilterLinear, false
	case "upsample_bicubic":
		return FilterCubic, false
	case "upsample_nearest_backward":
		return FilterNearest, true
	case "upsample_linear_backward":
		return FilterLinear, true
	case "upsample_bicubic_backward":
		return FilterCubic, true
	}
	return -1, false
}

func init() {
	for _, name := range []string{"upsample_nearest", "upsample_linear", "upsample_bicubic"} {
		Register(&Op{Name: name, Args: []string{"x"}, Infer: upsampleInfer(name, false)})
		Register(&Op{Name: name + "_backward", Args: []string{"grad"}, Infer: upsampleInfer(name+"_backward", true)})
	}
}

func upsampleInfer(name string, backward bool) func([]*Tensor, any) (DType, []int, error) {
	filter, _ := UpsampleFilter(name)
	arg := "x"
	if backward {
		arg = "grad"
	}
	return func(in []*Tensor, attrs any) (DType, []int, error) {
		x := in[0]
		a, ok := attrs.(Interp)
		if !ok {
			return 0, nil, &Error{Kind: ErrValue, Arg: "attrs", Detail: "is not a dispatch.Interp", Fix: "pass dispatch.Interp{Size: ...}"}
		}
		if err := checkDType(x, arg, Floats); err != nil {
			return 0, nil, err
		}
		if x.Rank() < 3 {
			return 0, nil, &Error{Kind: ErrShape, Arg: arg, Found: FormatShape(x.Shape),
				Detail: "has shape " + FormatShape(x.Shape) + ", but interpolation needs (N, C, d1, ...) with at least one spatial dim",
				Fix:    "add the batch and channel dims, e.g. with Unsqueeze(0)"}
		}
		k := x.Rank() - 2
		spatial := x.Shape[2:]
		if err := checkSizes("size", a.Size, k); err != nil {
			return 0, nil, err
		}
		if a.Scales != nil && len(a.Scales) != k {
			return 0, nil, CountError("scale_factor", len(a.Scales), k)
		}
		for _, s := range a.Scales {
			if !(s >= 0) || math.IsInf(s, 0) {
				return 0, nil, &Error{Kind: ErrValue, Arg: "scale_factor", Found: strconv.FormatFloat(s, 'g', -1, 64),
					Detail: "has " + strconv.FormatFloat(s, 'g', -1, 64) + ", not a positive finite scale", Fix: "use scales above 0"}
			}
		}
		if a.AlignCorners && filter == FilterNearest {
			return 0, nil, &Error{Kind: ErrValue, Arg: "align_corners",
				Detail: "is set, but nearest interpolation has no corners to align",
				Fix:    "use align_corners only with linear, bilinear, bicubic or trilinear"}
		}
		if a.Exact && filter != FilterNearest {
			return 0, nil, &Error{Kind: ErrValue, Arg: "exact", Detail: "is set on " + name, Fix: "use exact only with upsample_nearest"}
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
				return 0, nil, &Error{Kind: ErrShape, Arg: arg, Expected: FormatShape(a.Size), Found: FormatShape(spatial),
					Detail: "has spatial size " + FormatShape(spatial) + " but the forward output's was " + FormatShape(a.Size),
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
		return CountError(arg, len(sizes), k)
	}
	for _, s := range sizes {
		if s < 1 {
			kind := ErrValue
			if arg == "x" || arg == "grad" {
				kind = ErrShape
			}
			return &Error{Kind: kind, Arg: arg, Found: FormatShape(sizes),
				Detail: "has spatial sizes " + FormatShape(sizes) + ": input and output sizes must be at least 1",
				Fix:    "use sizes (or scale factors) that give every spatial dim at least one element"}
		}
	}
	return nil
}
