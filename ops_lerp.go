package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Linear interpolation, as torch.lerp, with torch's two-sided formula
// (aten/src/ATen/native/Lerp.h): where |w| < 0.5 it is x + w·(end-x), else
// end - (end-x)·(1-w), which is exact at both ends and monotone; float16
// and bfloat16 are computed in float32 and rounded once, as torch's. Both
// branches have the gradients of torch's rule (derivatives.yaml "lerp":
// grad·(1-w), grad·w, grad·(end-x)), routed by where.

var (
	opLerp = composite("lerp", []string{"x", "end", "weight"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		return inFloat32(in, func(in []*Tensor) *Tensor {
			x, end, w := in[0], in[1], in[2]
			d := end.Sub(x)
			near := x.Add(w.Mul(d))
			far := end.Sub(d.Mul(w.MulScalar(-1).AddScalar(1)))
			return Where(w.Abs().LtScalar(0.5), near, far)
		})
	})
	opLerpScalar = compositeVariant("lerp", "scalar", []string{"x", "end"}, func(in []*Tensor, w float64) *Tensor {
		return inFloat32(in, func(in []*Tensor) *Tensor { return lerpScalar(in[0], in[1], w) })
	})
)

// lerpScalar is lerp with a number weight, in x's dtype (float32 for the
// 16-bit ones: opLerpScalar).
func lerpScalar(x, end *Tensor, w float64) *Tensor {
	d := end.Sub(x)
	if math.Abs(w) < 0.5 {
		return x.Add(d.MulScalar(w))
	}
	// 1-w as torch computes it, in float32 for the narrower dtypes
	// (their opmath type), where it is exact for w in [0.5, 1].
	v := 1 - w
	if x.t.DType != Float64 {
		v = float64(1 - float32(w))
	}
	return end.Sub(d.MulScalar(v))
}

// Lerp is x + weight·(end-x), broadcast, as torch.lerp(x, end, weight) with
// a tensor weight. x, end and weight must have one float dtype (torch does
// not promote: another is ErrDType).
func (x *Tensor) Lerp(end, weight *Tensor) *Tensor {
	if err := lerpDTypes(x, end, weight); err != nil {
		return failed(err)
	}
	return apply(opLerp, none, x, end, weight)
}

// LerpScalar is x + weight·(end-x), broadcast, as torch.lerp(x, end,
// weight) with a number weight; x and end must have one float dtype.
func (x *Tensor) LerpScalar(end *Tensor, weight float64) *Tensor {
	if err := lerpDTypes(x, end); err != nil {
		return failed(err)
	}
	return apply(opLerpScalar, weight, x, end)
}

// lerpDTypes refuses arguments that are not live tensors of x's float
// dtype, naming the first that is not.
func lerpDTypes(x *Tensor, args ...*Tensor) error {
	const op = "lerp"
	if err := x.check(op); err != nil {
		return err
	}
	if !x.t.DType.IsFloat() {
		return errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but lerp interpolates floats (torch has no integer lerp)",
			"cast it with .Cast(lathe.Float32) first")
	}
	for i, a := range args {
		name := opLerp.ArgName(i + 1)
		if err := a.CheckArg(op, name); err != nil {
			return err
		}
		if a.t.DType != x.t.DType {
			return errorf(op, ErrDType, name, "is "+a.t.DType.String()+" but x is "+x.t.DType.String()+" (lerp does not promote, as torch's)",
				"cast it with .Cast("+x.t.DType.GoString()+")")
		}
	}
	// The shapes broadcast together, checked here so that the error names
	// lerp's argument rather than that of an op inside it.
	shape := x.t.Shape
	for i, a := range args {
		s, ok := ops.BroadcastShapes(shape, a.t.Shape)
		if !ok {
			e := errorf(op, ErrShape, opLerp.ArgName(i+1), "has shape "+dispatch.FormatShape(a.t.Shape)+", which does not broadcast with "+
				dispatch.FormatShape(shape), "make each dimension equal or 1, e.g. with Reshape or Unsqueeze")
			e.Expected, e.Found = dispatch.FormatShape(shape), dispatch.FormatShape(a.t.Shape)
			return e
		}
		shape = s
	}
	return nil
}
