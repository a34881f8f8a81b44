package ops

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// BinaryDType is the dtype in which the binary op computes on operands
// (its lhs and rhs, each a tensor or a Go scalar), as PyTorch's
// TensorIterator does: their dispatch.ResultType, made a float for true
// division and atan2 (torch.div of two int32 tensors is float32). The
// result of op is that dtype, or Bool for a comparison. The logical ops
// take their operands as they are and give InvalidDType. Sub refuses a
// bool operand, as torch's - does. Whether op takes the dtype is left to
// its schema, which sees the operands cast to it.
func BinaryDType(op *dispatch.Op[dispatch.None], operands ...dispatch.Operand) (dispatch.DType, error) {
	switch op {
	case LogicalAnd, LogicalOr:
		return dispatch.InvalidDType, nil
	case Sub:
		for i, o := range operands {
			if o.DType == dispatch.Bool {
				arg := [...]string{"lhs", "rhs"}[min(i, 1)]
				if o.Priority == dispatch.Scalar {
					arg = "scalar"
				}
				return 0, &dispatch.Error{Kind: dispatch.ErrDType, Arg: arg, Found: "bool",
					Detail: "is bool, which sub does not take (as torch's -)",
					Fix:    "invert a mask with LogicalNot, or cast it with .Cast(lathe.Int32)"}
			}
		}
	}
	dt := dispatch.ResultType(operands...)
	if (op == Div || op == Atan2 || op == Zeta) && !dt.IsFloat() {
		dt = dispatch.DefaultFloat
	}
	return dt, nil
}

// ScalarOperand is the operand that the Go scalar v is in a binary op:
// an integer where v has no fraction (2, as Python's 2), a float
// otherwise (2.5, NaN, ±Inf), so that x.AddScalar(1) keeps an int32 x
// int32 and x.AddScalar(2.5) gives float32, as torch's x + 1 and x + 2.5.
// An integer no dtype of the result holds (3e9 for an int32 x) is then
// CheckOperand's ErrValue, as torch's x + 10**20 is an error.
func ScalarOperand(v float64) dispatch.Operand {
	if v == math.Trunc(v) && !math.IsInf(v, 0) {
		return dispatch.Operand{DType: dispatch.Int64, Priority: dispatch.Scalar}
	}
	return dispatch.Operand{DType: dispatch.Float64, Priority: dispatch.Scalar}
}
