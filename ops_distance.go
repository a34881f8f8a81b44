package lathe

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Distances and normalisation along a dim: cosine_similarity,
// pairwise_distance and normalize, as torch.nn.functional's (torch 1.13's
// aten/src/ATen/native/Distance.cpp and torch/nn/functional.py). Each is a
// composite of vector_norm (ops_vector_norm.go) and elementwise ops, so
// that it runs on every device and autodiff differentiates it to any order.

type distanceAttrs struct {
	dim  int
	p    float64
	eps  float64
	keep bool
}

var (
	opCosineSimilarity = composite("cosine_similarity", []string{"x1", "x2"}, func(in []*Tensor, a distanceAttrs) *Tensor {
		const op = "cosine_similarity"
		x1, x2, err := distancePair(op, in[0], in[1])
		if err != nil {
			return failed(err)
		}
		shape, _ := ops.BroadcastShapes(x1.t.Shape, x2.t.Shape)
		dim, derr := wrapDim(a.dim, len(shape))
		if derr != nil {
			return failed(derr)
		}
		return inFloat32([]*Tensor{x1, x2}, func(in []*Tensor) *Tensor {
			x1, x2 := in[0], in[1]
			if !slices.Equal(x1.t.Shape, shape) {
				x1 = x1.Expand(shape...)
			}
			if !slices.Equal(x2.t.Shape, shape) {
				x2 = x2.Expand(shape...)
			}
			// torch divides each by its norm first, the norms clamped to
			// ≥ eps under no_grad: the value is clamped, the gradient is
			// the norm's own.
			n1 := clampNoGrad(x1.NormKeepDim(2, dim), a.eps)
			n2 := clampNoGrad(x2.NormKeepDim(2, dim), a.eps)
			return x1.Div(n1).Mul(x2.Div(n2)).Sum(dim)
		})
	})
	opPairwiseDistance = composite("pairwise_distance", []string{"x1", "x2"}, func(in []*Tensor, a distanceAttrs) *Tensor {
		const op = "pairwise_distance"
		if _, ok := ops.BroadcastShapes(in[0].t.Shape, in[1].t.Shape); !ok {
			return failed(broadcastError(in[0], in[1], "x2", "x1"))
		}
		if math.IsNaN(a.p) {
			return failed(&Error{Kind: ErrValue, Arg: "p", Detail: "is NaN", Fix: "give a number, or math.Inf(1) for the max norm"})
		}
		// torch: norm(x1 - x2 + eps, p) over the last dim of the larger
		// input; the difference of integers computes in float32.
		d := in[0].Sub(in[1])
		if d.err != nil {
			return d
		}
		if !d.t.DType.IsFloat() {
			d = d.Cast(dispatch.DefaultFloat)
		}
		d = d.AddScalar(a.eps)
		if a.keep {
			return d.NormKeepDim(a.p, -1)
		}
		return d.Norm(a.p, -1)
	})
	opNormalize = composite("normalize", []string{"x"}, func(in []*Tensor, a distanceAttrs) *Tensor {
		x := in[0]
		if err := floatArg(x, "x"); err != nil {
			return failed(err)
		}
		if math.IsNaN(a.p) {
			return failed(&Error{Kind: ErrValue, Arg: "p", Detail: "is NaN", Fix: "give a number, or math.Inf(1) for the max norm"})
		}
		dim, derr := wrapDim(a.dim, x.t.Rank())
		if derr != nil {
			return failed(derr)
		}
		// torch: x / norm(x, p, dim, keepdim=True).clamp_min(eps), the
		// clamp's gradient 0 where it clamps.
		return x.Div(x.NormKeepDim(a.p, dim).Clamp(a.eps, math.Inf(1)))
	})
)

// clampNoGrad is max(n, eps) with the gradient of n, as torch's clamp_min_
// under no_grad: n plus a constant (the detached difference).
func clampNoGrad(n *Tensor, eps float64) *Tensor {
	if n.err != nil {
		return n
	}
	d := n.joined(n.Detach())
	return n.Add(d.Clamp(eps, math.Inf(1)).Sub(d))
}

// distancePair checks x1 and x2 of cosine_similarity: shapes that
// broadcast, and a float result type (one of them may be an integer or
// bool tensor, which is cast to it, as torch's).
func distancePair(op string, x1, x2 *Tensor) (*Tensor, *Tensor, *Error) {
	if _, ok := ops.BroadcastShapes(x1.t.Shape, x2.t.Shape); !ok {
		return nil, nil, broadcastError(x1, x2, "x2", "x1")
	}
	dt := dispatch.ResultType(dispatch.OperandOf(x1.t), dispatch.OperandOf(x2.t))
	if !dt.IsFloat() {
		return nil, nil, &Error{Kind: ErrDType, Arg: "x1", Found: dt.String(),
			Detail: "and x2 are " + x1.t.DType.String() + " and " + x2.t.DType.String() + ", whose common dtype " + dt.String() + " is no float (torch refuses it too)",
			Fix:    "cast one with .Cast(lathe.Float32)"}
	}
	return x1.promoteTo(op, "x1", dt), x2.promoteTo(op, "x2", dt), nil
}

// broadcastError is the error of t (argument arg), whose shape does not
// broadcast with ref's (argument refArg).
func broadcastError(ref, t *Tensor, arg, refArg string) *Error {
	return &Error{Kind: ErrShape, Arg: arg, Expected: dispatch.FormatShape(ref.t.Shape), Found: dispatch.FormatShape(t.t.Shape),
		Detail: "has shape " + dispatch.FormatShape(t.t.Shape) + ", which does not broadcast with " + refArg + "'s " + dispatch.FormatShape(ref.t.Shape),
		Fix:    "make each dimension equal or 1, e.g. with Reshape or Unsqueeze"}
}

// wrapDim is dim counted from the end where negative, for a tensor of
// rank r (a 0-d tensor takes 0 and -1, as torch's).
func wrapDim(dim, r int) (int, *Error) {
	n := max(r, 1)
	if dim < -n || dim >= n {
		return 0, &Error{Kind: ErrIndex, Arg: "dim", Found: strconv.Itoa(dim),
			Detail: "is " + strconv.Itoa(dim) + ", out of range for a tensor of rank " + strconv.Itoa(r),
			Fix:    "use a dim in [" + strconv.Itoa(-n) + ", " + strconv.Itoa(n) + ")"}
	}
	if dim < 0 {
		dim += n
	}
	if r == 0 {
		return -1, nil // the vector norm of a 0-d tensor takes dim -1
	}
	return dim, nil
}

// CosineSimilarity is Σ x1·x2 / (max(‖x1‖, eps)·max(‖x2‖, eps)) along dim,
// x1 and x2 broadcast, as torch.nn.functional.cosine_similarity (torch's
// defaults: dim 1, eps 1e-8). As torch 1.13's, each is divided by its
// clamped norm before the product, and the clamp has the gradient of the
// norm (it is torch's clamp under no_grad). An integer or bool argument is
// cast to the other's float dtype; two of them are refused. float16 and
// bfloat16 are computed in float32 and rounded once (torch's cpu refuses
// them).
func CosineSimilarity(x1, x2 *Tensor, dim int, eps float64) *Tensor {
	return apply(opCosineSimilarity, distanceAttrs{dim: dim, eps: eps}, x1, x2)
}

// PairwiseDistance is the p-norm of x1 - x2 + eps over the last dim (of
// the larger of the two ranks), x1 and x2 broadcast, as
// torch.nn.functional.pairwise_distance (torch's defaults: p 2, eps
// 1e-6, keepdim false); keepdim keeps that dim as size 1. p is any order
// that Norm takes. Integer inputs compute in float32, as torch's.
func PairwiseDistance(x1, x2 *Tensor, p, eps float64, keepdim bool) *Tensor {
	return apply(opPairwiseDistance, distanceAttrs{p: p, eps: eps, keep: keepdim}, x1, x2)
}

// Normalize is x / max(‖x‖_p, eps) along dim, as
// torch.nn.functional.normalize (torch's defaults: p 2, dim 1, eps
// 1e-12); x must be a float tensor. The gradient of the clamp is 0 where
// it clamps, as torch's.
func (x *Tensor) Normalize(p float64, dim int, eps float64) *Tensor {
	return apply(opNormalize, distanceAttrs{p: p, dim: dim, eps: eps}, x)
}
