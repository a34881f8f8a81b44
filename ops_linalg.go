package lathe

import (
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
// [out, in] and b, if not nil, [out]. It is one op (so that Autocast casts
// the bias with x and w, as torch's linear), made of MatMul and Add; in
// float16 and bfloat16 the bias is added in float32 and the sum rounded
// once, as a fused addmm.
func (x *Tensor) Linear(w, b *Tensor) *Tensor {
	if b == nil {
		return apply(opLinear, none, x, w)
	}
	return apply(opLinearBias, none, x, w, b)
}

// linearDTypes refuses a Linear whose x, w and b (when given) differ in
// dtype, naming x against the weight, and the bias against the weight:
// the weights are the model's, so the fix is to cast x (an int64 batch
// into a float32 layer) or the one odd bias, where the error named the
// bias and told to cast it to x's integer dtype.
func linearDTypes(op string, in []*Tensor) *Error {
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
	return nil
}

var (
	// The intermediates go with the graph (composite), the weight's
	// transposed view too: it holds the weight's buffer, which an
	// optimizer's step replaces, so that until a collection found the view
	// the old weight could not go back to the pool, and each step took new
	// memory for the new one.
	opLinear = compositeVariant("linear", "no_bias", []string{"x", "w"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		if err := linearDTypes("linear", in); err != nil {
			return failed(err)
		}
		return in[0].MatMul(in[1].MT())
	})
	opLinearBias = composite("linear", []string{"x", "w", "b"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		x, b := in[0], in[2]
		if err := linearDTypes("linear", in); err != nil {
			return failed(err)
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
