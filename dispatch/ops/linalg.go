package ops

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// Linear algebra: matmul with torch.matmul's rules.

// MatMul is torch.matmul.
var MatMul = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: dispatch.Schema{Name: "matmul", Args: []string{"lhs", "rhs"}}, Infer: matmulInfer})

// MatMulWide is MatMul of two float16 or two bfloat16 tensors whose
// result is float32, unrounded: the products are exact in float32 and
// summed there, as a 16-bit product accumulates, and the caller rounds
// once after what it adds (a Linear layer's bias, under autocast: torch's
// addmm with beta 1 rounds once too). A device runs it on its 16-bit
// units where it has them (the cpu's AMX tiles), and otherwise widens the
// arguments to the float32 product.
var MatMulWide = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: dispatch.Schema{Name: "matmul_wide", Args: []string{"lhs", "rhs"}},
	Infer: matmulWideInfer})

// MatMulShapes applies torch.matmul's rules to two shapes: both 1-D is a
// dot product (0-d); a 1-D lhs gets a 1 prepended and a 1-D rhs a 1
// appended, removed again from the result; dims before the last two are
// batch dims and broadcast. It returns the broadcast batch shape, the matrix
// sizes n×k times k×m, and the output shape.
func MatMulShapes(a, b []int) (batch []int, n, k, m int, out []int, err error) {
	if len(a) == 0 || len(b) == 0 {
		arg := "rhs"
		if len(a) == 0 {
			arg = "lhs"
		}
		return nil, 0, 0, 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: arg,
			Detail: "is 0-d, but both arguments need at least 1 dim (shapes " + dispatch.FormatShape(a) + " and " + dispatch.FormatShape(b) + ")",
			Fix:    "use Mul for a product with a scalar"}
	}
	aa, bb := a, b
	if len(a) == 1 {
		aa = []int{1, a[0]}
	}
	if len(b) == 1 {
		bb = []int{b[0], 1}
	}
	n, k = aa[len(aa)-2], aa[len(aa)-1]
	kb, m := bb[len(bb)-2], bb[len(bb)-1]
	if k != kb {
		da, db := strconv.Itoa(len(a)-1), strconv.Itoa(max(len(b)-2, 0))
		return nil, 0, 0, 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "rhs", Expected: strconv.Itoa(k), Found: strconv.Itoa(kb),
			Detail: "has shape " + dispatch.FormatShape(b) + " and lhs has shape " + dispatch.FormatShape(a) +
				": dim " + db + " of rhs (" + strconv.Itoa(kb) + ") must match dim " + da + " of lhs (" + strconv.Itoa(k) + ")",
			Fix: "transpose or reshape one of them so the inner sizes agree"}
	}
	batch, ok := BroadcastShapes(aa[:len(aa)-2], bb[:len(bb)-2])
	if !ok {
		return nil, 0, 0, 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "rhs",
			Detail: "has batch dims " + dispatch.FormatShape(bb[:len(bb)-2]) + " (shape " + dispatch.FormatShape(b) + ") which do not broadcast with lhs's " +
				dispatch.FormatShape(aa[:len(aa)-2]) + " (shape " + dispatch.FormatShape(a) + "): the dims before the last two must be equal or 1",
			Fix: "make each batch dim equal or 1, e.g. with Reshape or Unsqueeze"}
	}
	out = append([]int{}, batch...)
	if len(a) > 1 {
		out = append(out, n)
	}
	if len(b) > 1 {
		out = append(out, m)
	}
	return batch, n, k, m, out, nil
}

func matmulWideInfer(in []*dispatch.Tensor, _ dispatch.None) (dispatch.DType, []int, error) {
	_, shape, err := matmulInfer(in, dispatch.None{})
	if err != nil {
		return 0, nil, err
	}
	if !dispatch.Halves.Has(in[0].DType) {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrDType, Arg: "lhs", Expected: "float16 or bfloat16", Found: in[0].DType.String(),
			Detail: "is " + in[0].DType.String() + " but the wide product takes 16-bit floats", Fix: "call matmul"}
	}
	return dispatch.Float32, shape, nil
}

func matmulInfer(in []*dispatch.Tensor, _ dispatch.None) (dispatch.DType, []int, error) {
	names := func(i int) string { return [...]string{"lhs", "rhs"}[i] }
	for i, t := range in {
		if err := checkDType(t, names(i), Numeric); err != nil {
			return 0, nil, err
		}
	}
	if err := sameDType(in, names, 0); err != nil {
		return 0, nil, err
	}
	_, _, _, _, out, err := MatMulShapes(in[0].Shape, in[1].Shape)
	if err != nil {
		return 0, nil, err
	}
	return in[0].DType, out, nil
}
