package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Interpolation: torch.nn.functional.interpolate.
//
//	y := x.Interpolate(lathe.ScaleFactor(2), lathe.Mode("bilinear"), lathe.AlignCorners())
//	z := x.Interpolate(lathe.Size(7, 9), lathe.Mode("bicubic"))

// InterpOption sets an option of Interpolate.
type InterpOption func(*interpOptions)

type interpOptions struct {
	mode         string
	size         []int
	scale        []float64
	alignCorners bool
	recompute    bool
}

// Mode sets the interpolation mode, by PyTorch's name: "nearest" (the
// default), "nearest-exact", "linear" (3-d input), "bilinear" (4-d),
// "bicubic" (4-d) or "trilinear" (5-d). Nearest modes take 3-, 4- or 5-d
// input.
func Mode(m string) InterpOption { return func(o *interpOptions) { o.mode = m } }

// Size sets the output's spatial sizes: one for every spatial dim, or one
// per dim. Give Size or ScaleFactor, not both.
func Size(s ...int) InterpOption { return func(o *interpOptions) { o.size = s } }

// ScaleFactor sets the output's spatial sizes to floor(input size · f):
// one factor for every spatial dim, or one per dim. As in PyTorch, the
// factor itself (not the ratio of the sizes it gives) maps output
// coordinates to input ones, unless RecomputeScaleFactor is set; but, as
// PyTorch's nearest_idx, "nearest" copies a dim whose size the factor
// leaves as it was (3 by 1.25) and halves the index where it doubles it.
func ScaleFactor(f ...float64) InterpOption { return func(o *interpOptions) { o.scale = f } }

// AlignCorners makes the linear modes and bicubic map the centres of the
// corner pixels of input and output onto each other, instead of their outer
// edges (PyTorch's align_corners=True). Nearest modes refuse it.
func AlignCorners() InterpOption { return func(o *interpOptions) { o.alignCorners = true } }

// RecomputeScaleFactor makes the scale that maps coordinates the ratio of
// the output and input sizes, not the ScaleFactor given (PyTorch's
// recompute_scale_factor=True).
func RecomputeScaleFactor() InterpOption { return func(o *interpOptions) { o.recompute = true } }

// interpModes gives each mode its op, the input rank it needs (0: 3 to 5)
// and whether it is nearest-exact.
var interpModes = map[string]struct {
	op    *dispatch.Op[ops.Interp]
	rank  int
	exact bool
}{
	"nearest":       {ops.UpsampleNearest.Forward, 0, false},
	"nearest-exact": {ops.UpsampleNearest.Forward, 0, true},
	"linear":        {ops.UpsampleLinear.Forward, 3, false},
	"bilinear":      {ops.UpsampleLinear.Forward, 4, false},
	"trilinear":     {ops.UpsampleLinear.Forward, 5, false},
	"bicubic":       {ops.UpsampleBicubic.Forward, 4, false},
}

// Interpolate resamples the spatial dims of x, an (N, C, d1, ...) tensor
// of float32 or float64, as torch.nn.functional.interpolate does (without
// antialias): nearest and nearest-exact pick a pixel, the linear modes
// weigh the 2^k pixels around the source point, bicubic the 16 with Keys'
// kernel (a = -0.75), repeating the border pixels. The output keeps N and C
// and has the sizes that Size or ScaleFactor give.
//
// Errors: an unknown mode, AlignCorners with a nearest mode, both or
// neither of Size and ScaleFactor, a wrong count of sizes or factors, or an
// output size below 1 are ErrValue naming the option; an input of the
// wrong rank for the mode is ErrShape.
func (x *Tensor) Interpolate(opts ...InterpOption) *Tensor {
	const op = "interpolate"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	o := interpOptions{mode: "nearest"}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	m, ok := interpModes[o.mode]
	if !ok {
		return failed(errorf(op, ErrValue, "mode", "is "+strconv.Quote(o.mode)+", not a mode lathe knows",
			`use one of "nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear"`))
	}
	if o.alignCorners && m.op == ops.UpsampleNearest.Forward {
		return failed(errorf(op, ErrValue, "align_corners", "is set with mode "+strconv.Quote(o.mode)+
			", but only the interpolating modes have corners to align", "drop AlignCorners, or use a linear mode or bicubic"))
	}
	shape := x.t.Shape
	if r := len(shape); (m.rank == 0 && (r < 3 || r > 5)) || (m.rank != 0 && r != m.rank) {
		want := "3-, 4- or 5-d"
		if m.rank != 0 {
			want = strconv.Itoa(m.rank) + "-d"
		}
		e := errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(shape)+", but mode "+strconv.Quote(o.mode)+
			" needs "+want+" input (N, C, spatial dims...)", modeFix(r))
		e.Found = dispatch.FormatShape(shape)
		return failed(e)
	}
	k := len(shape) - 2
	a := ops.Interp{AlignCorners: o.alignCorners, Exact: m.exact}
	switch {
	case o.size != nil && o.scale != nil:
		return failed(errorf(op, ErrValue, "size", "and scale_factor are both given", "give only one of Size and ScaleFactor"))
	case o.size == nil && o.scale == nil:
		return failed(errorf(op, ErrValue, "size", "and scale_factor are both missing", "give one of Size and ScaleFactor"))
	case o.size != nil:
		size, ok := spatial(o.size, k, 0)
		if !ok {
			return failed(countError(op, "size", len(o.size), k))
		}
		a.Size = size
	default:
		scales, ok := spatialFloats(o.scale, k)
		if !ok {
			return failed(countError(op, "scale_factor", len(o.scale), k))
		}
		a.Size = make([]int, k)
		for i, s := range scales {
			if !(s > 0) || math.IsInf(s, 0) {
				return failed(errorf(op, ErrValue, "scale_factor", "is "+strconv.FormatFloat(s, 'g', -1, 64)+", not a positive finite factor",
					"use factors above 0"))
			}
			// PyTorch: floor(float(input size) · scale), in float64.
			n := math.Floor(float64(shape[2+i]) * s)
			if n > 1<<53 {
				return failed(errorf(op, ErrValue, "scale_factor", "is "+strconv.FormatFloat(s, 'g', -1, 64)+
					", which gives an output size past 2^53", "use a smaller factor"))
			}
			a.Size[i] = int(n)
		}
		if !o.recompute {
			a.Scales = scales
		}
	}
	for _, s := range a.Size {
		if s < 1 {
			arg := "size"
			if o.size == nil {
				arg = "scale_factor"
			}
			return failed(errorf(op, ErrValue, arg, "gives output size "+dispatch.FormatShape(a.Size)+
				" for input "+dispatch.FormatShape(shape)+"; every output size must be at least 1", "use larger sizes or factors"))
		}
	}
	y := apply(m.op, a, x)
	if e, ok := y.err.(*Error); ok && e.Op == m.op.Name {
		// Name the op the caller called.
		c := *e
		c.Op = op
		return failed(&c)
	}
	return y
}

// modeFix says which modes take an input of rank r.
func modeFix(r int) string {
	switch r {
	case 3:
		return `use "nearest", "nearest-exact" or "linear" for 3-d input`
	case 4:
		return `use "nearest", "nearest-exact", "bilinear" or "bicubic" for 4-d input`
	case 5:
		return `use "nearest", "nearest-exact" or "trilinear" for 5-d input`
	}
	return "give an (N, C, ...) tensor with 1 to 3 spatial dims, e.g. reshaped with Reshape or Unsqueeze"
}

// spatialFloats is spatial for scale factors: one value is repeated, k are
// kept, any other count is refused.
func spatialFloats(vals []float64, k int) ([]float64, bool) {
	switch len(vals) {
	case 1:
		out := make([]float64, k)
		for i := range out {
			out[i] = vals[0]
		}
		return out, true
	case k:
		return append([]float64{}, vals...), true
	}
	return nil, false
}
