package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Linear algebra.

// MatMul is the matrix product with torch.matmul's rules: two 1-D tensors
// give their dot product (0-d); 2-D times 2-D is the matrix product; a 1-D
// x is taken as a row (1×k) and a 1-D y as a column (k×1), the added dim
// removed from the result; with more dims, all but the last two are batch
// dims and broadcast. Both must share a dtype; float32 and float64 run on
// BLAS, integers on a plain loop that wraps on overflow. Shapes that do not
// fit are ErrShape, naming the dims that must match.
func (x *Tensor) MatMul(y *Tensor) *Tensor { return apply(ops.MatMul, none, x, y) }

// Linear is x·wᵀ + b, as torch.nn.functional.linear: x is [..., in], w is
// [out, in] (or [in], for one output whose dim is dropped) and b, if not
// nil, [out] or another shape that broadcasts to the result. It is one op (so that Autocast casts
// the bias with x and w, as torch's linear), made of MatMul and Add; in
// float16 and bfloat16 the bias is added in float32 and the sum rounded
// once, as a fused addmm.
func (x *Tensor) Linear(w, b *Tensor) *Tensor {
	if b == nil {
		return apply(opLinear, none, x, w)
	}
	return apply(opLinearBias, none, x, w, b)
}

// linearArgs refuses a Linear whose x, w and b (when given) differ in
// dtype, naming x against the weight, and the bias against the weight:
// the weights are the model's, so the fix is to cast x (an int64 batch
// into a float32 layer) or the one odd bias, where the error named the
// bias and told to cast it to x's integer dtype. It refuses shapes as
// torch's linear does, naming the argument and the features, where the
// matmul and add inside named their own "lhs" and "rhs" and the weight's
// transposed shape: x of no dims, w of more than 2, x's last dim not w's
// in_features, and b that does not broadcast to the result.
func linearArgs(op string, in []*Tensor) *Error {
	x, w := in[0], in[1]
	if x.t.DType != w.t.DType {
		return errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but the weight \"w\" is "+w.t.DType.String(),
			"cast x with .Cast("+w.t.DType.GoString()+")")
	}
	if len(in) > 2 && in[2].t.DType != w.t.DType {
		b := in[2]
		return errorf(op, ErrDType, "b", "is "+b.t.DType.String()+" but the weight \"w\" is "+w.t.DType.String(),
			"cast it with .Cast("+w.t.DType.GoString()+")")
	}
	xs, ws := x.t.Shape, w.t.Shape
	switch {
	case len(ws) == 0 || len(ws) > 2:
		return errorf(op, ErrShape, "w", "has shape "+dispatch.FormatShape(ws)+", but a weight is [out_features, in_features] (or [in_features])",
			"give a 2-D weight")
	case len(xs) == 0:
		return errorf(op, ErrShape, "x", "is 0-d, but linear maps its last dim, the features", "give x of shape [..., "+strconv.Itoa(ws[len(ws)-1])+"]")
	case xs[len(xs)-1] != ws[len(ws)-1]:
		return errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(xs)+": its last dim, "+strconv.Itoa(xs[len(xs)-1])+
			", is not the in_features of the weight \"w\" "+dispatch.FormatShape(ws)+", "+strconv.Itoa(ws[len(ws)-1]),
			"give x of shape [..., "+strconv.Itoa(ws[len(ws)-1])+"], or a weight of shape [out_features, "+strconv.Itoa(xs[len(xs)-1])+"]")
	}
	if len(in) > 2 {
		out := xs[: len(xs)-1 : len(xs)-1]
		if len(ws) == 2 {
			out = append(out, ws[0])
		}
		if bs := in[2].t.Shape; !broadcastsTo(bs, out) {
			return errorf(op, ErrShape, "b", "has shape "+dispatch.FormatShape(bs)+", which does not broadcast to the result's "+dispatch.FormatShape(out),
				"give a bias of shape ["+strconv.Itoa(ws[0])+"] (out_features)")
		}
	}
	return nil
}

// broadcastsTo reports whether a tensor of shape from expands to shape to
// without to changing: each of from's sizes, aligned to the right, is
// to's or 1, and from has no more dims.
func broadcastsTo(from, to []int) bool {
	if len(from) > len(to) {
		return false
	}
	lead := len(to) - len(from)
	for i, s := range from {
		if s != 1 && s != to[lead+i] {
			return false
		}
	}
	return true
}

var (
	// The intermediates go with the graph (composite), the weight's
	// transposed view too: it holds the weight's buffer, which an
	// optimizer's step replaces, so that until a collection found the view
	// the old weight could not go back to the pool, and each step took new
	// memory for the new one.
	opLinear = compositeVariant("linear", "no_bias", []string{"x", "w"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		if err := linearArgs("linear", in); err != nil {
			return failed(err)
		}
		if in[1].Rank() == 1 {
			return in[0].MatMul(in[1]) // torch's [in_features] weight: one output, its dim dropped
		}
		return in[0].MatMul(in[1].MT())
	})
	opLinearBias = composite("linear", []string{"x", "w", "b"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		x, b := in[0], in[2]
		if err := linearArgs("linear", in); err != nil {
			return failed(err)
		}
		if in[1].Rank() == 1 {
			return x.MatMul(in[1]).Add(b)
		}
		if dispatch.Halves.Has(x.t.DType) && in[1].t.DType == x.t.DType {
			// Add the bias before the one rounding, as a fused addmm (cuBLAS's
			// with beta 1) does: the wide product leaves the sum of the exact
			// products in float32, on the device's 16-bit units where it has
			// them (the cpu's AMX tiles), with no widened copy of x or w.
			wt := in[1].MT()
			product := apply(ops.MatMulWide, none, x, wt)
			bf := b.Cast(Float32)
			return product.Add(bf).Cast(x.t.DType)
		}
		if dispatch.Halves.Has(x.t.DType) {
			// A weight of another dtype: both widened, as before the wide
			// product.
			f := Float32
			xf, wf, bf := x.Cast(f), in[1].Cast(f), b.Cast(f)
			return xf.MatMul(wf.MT()).Add(bf).Cast(x.t.DType)
		}
		return x.MatMul(in[1].MT()).Add(b)
	})
)
