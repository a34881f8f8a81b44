package ops

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// Elementwise ops: unary, binary with NumPy broadcasting, where, cast and
// contiguous. Their schemas differ only in the dtypes they take and give,
// so each is a line in a table.

// Params holds the scalar attributes of the unary ops: leaky_relu's slope
// (A), clamp's bounds (A, B; ±Inf where there is none), softplus's beta
// (A) and threshold (B). The other unary ops take the zero value.
type Params struct{ A, B float64 }

// CastTo is the attribute of cast.
type CastTo struct{ DType dispatch.DType }

// The unary ops.
var (
	Neg, Abs, Sign, Square, ReLU              = unary("neg", Numeric), unary("abs", Numeric), unary("sign", Numeric), unary("square", Numeric), unary("relu", Numeric)
	Floor, Ceil, Round, Clamp                 = unary("floor", Numeric), unary("ceil", Numeric), unary("round", Numeric), unary("clamp", Numeric)
	Exp, Log, Log1p, Expm1, Sqrt, Rsqrt       = unary("exp", Floats), unary("log", Floats), unary("log1p", Floats), unary("expm1", Floats), unary("sqrt", Floats), unary("rsqrt", Floats)
	Reciprocal, Sin, Cos, Tanh, Sigmoid       = unary("reciprocal", Floats), unary("sin", Floats), unary("cos", Floats), unary("tanh", Floats), unary("sigmoid", Floats)
	LeakyReLU, GELU, GELUTanh, SiLU, Softplus = unary("leaky_relu", Floats), unary("gelu", Floats), unary("gelu_tanh", Floats), unary("silu", Floats), unary("softplus", Floats)
	Erf, Erfc                                 = unary("erf", Floats), unary("erfc", Floats)
	Asin, Acos, Atan, Tan                     = unary("asin", Floats), unary("acos", Floats), unary("atan", Floats), unary("tan", Floats)
	Sinh, Cosh, Asinh, Acosh, Atanh           = unary("sinh", Floats), unary("cosh", Floats), unary("asinh", Floats), unary("acosh", Floats), unary("atanh", Floats)
)

// LogicalNot is true where x is zero.
var LogicalNot = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: dispatch.Schema{Name: "logical_not", Args: []string{"x"}},
	Infer: func(in []*dispatch.Tensor, _ dispatch.None) (dispatch.DType, []int, error) {
		return dispatch.Bool, clone(in[0].Shape), nil
	}})

// The binary ops. Logical ops treat any nonzero value as true, as PyTorch
// does, so their arguments need not share a dtype.
var (
	Add, Sub, Mul, Div, Pow = binary("add", Numeric, false), binary("sub", Numeric, false), binary("mul", Numeric, false), binary("div", Floats, false), withChecks(binary("pow", Numeric, false), powChecks)
	Maximum, Minimum, Atan2 = binary("maximum", Numeric, false), binary("minimum", Numeric, false), binary("atan2", Floats, false)
	Eq, Ne, Lt, Le, Gt, Ge  = binary("eq", AllTypes, true), binary("ne", AllTypes, true), binary("lt", Numeric, true), binary("le", Numeric, true), binary("gt", Numeric, true), binary("ge", Numeric, true)
	LogicalAnd, LogicalOr   = binary("logical_and", AllTypes, true), binary("logical_or", AllTypes, true)
	Remainder, FMod         = withChecks(binary("remainder", Numeric, false), divisorChecks("rhs")), withChecks(binary("fmod", Numeric, false), divisorChecks("rhs"))
)

// The integer ops, as torch's on the cpu: bitwise and, or and xor; the
// shifts, C's on x86, whose count is taken mod the operand's width (32
// for int32 and the 8-bit dtypes, which compute in int32; 64 for int64),
// arithmetic to the right; floor division, Python's //, which wraps for
// the least integer over -1; and gcd, Euclid's on |x| and |y| (torch's
// calc_gcd, so a least integer's absolute value wraps).
var (
	BitwiseAnd, BitwiseOr, BitwiseXor = intBinary("bitwise_and"), intBinary("bitwise_or"), intBinary("bitwise_xor")
	ShiftLeft, ShiftRight             = intBinary("bitwise_left_shift"), intBinary("bitwise_right_shift")
	FloorDivide, Gcd                  = withChecks(intBinary("floor_divide"), divisorChecks("y")), intBinary("gcd")
)

// The backward ops of the activations: grad·f'(x) in one kernel, for f
// gelu, gelu_tanh, silu and relu, as PyTorch's gelu_backward (with
// approximate "none" and "tanh"), silu_backward and threshold_backward at
// 0 (derivatives.yaml). Only gradient rules call them: they are not part
// of the public API. Without them a rule is a chain of ops (a dozen for
// gelu; a compare, a scalar and a where for relu), each with a tensor of
// its own.
var (
	GELUBackward     = backward("gelu_backward")
	GELUTanhBackward = backward("gelu_tanh_backward")
	SiLUBackward     = backward("silu_backward")
	ReLUBackward     = backward("relu_backward")
)

// Where is where(cond, x, y): x where cond is true, else y, broadcast.
var Where = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: dispatch.Schema{Name: "where", Args: []string{"cond", "x", "y"}}, Infer: whereInfer})

// Cast converts to another dtype.
var Cast = dispatch.Register(&dispatch.Op[CastTo]{Schema: dispatch.Schema{Name: "cast", Args: []string{"x"}}, Infer: castInfer})

// Contiguous copies into row-major order.
var Contiguous = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: dispatch.Schema{Name: "contiguous", Args: []string{"x"}},
	Infer: func(in []*dispatch.Tensor, _ dispatch.None) (dispatch.DType, []int, error) {
		return in[0].DType, clone(in[0].Shape), nil
	}})

// UnaryOp is a unary op and the dtypes it takes.
type UnaryOp struct {
	*dispatch.Op[Params]
	DTypes dispatch.DTypeSet
}

// BinaryOp is a binary op, the dtypes it takes and whether it gives Bool.
type BinaryOp struct {
	*dispatch.Op[dispatch.None]
	DTypes dispatch.DTypeSet
	Bool   bool
}

// UnaryOps and BinaryOps list the families, for backends that register a
// kernel per op from one template: an op added here is missed by none.
var (
	UnaryOps  []UnaryOp
	BinaryOps []BinaryOp
)

// The dtype sets of the schemas.
const (
	Floats   = dispatch.Floats
	Ints     = dispatch.Ints
	Numeric  = dispatch.Numeric
	AllTypes = dispatch.AllTypes
	Indices  = dispatch.Indices
)

func unary(name string, allowed dispatch.DTypeSet) *dispatch.Op[Params] {
	op := dispatch.Register(&dispatch.Op[Params]{Schema: dispatch.Schema{Name: name, Args: []string{"x"}},
		Infer: func(in []*dispatch.Tensor, _ Params) (dispatch.DType, []int, error) {
			if err := checkDType(in[0], "x", allowed); err != nil {
				return 0, nil, err
			}
			return in[0].DType, clone(in[0].Shape), nil
		}})
	UnaryOps = append(UnaryOps, UnaryOp{op, allowed})
	return op
}

func binary(name string, allowed dispatch.DTypeSet, boolResult bool) *dispatch.Op[dispatch.None] {
	return binaryArgs(name, [2]string{"lhs", "rhs"}, allowed, boolResult)
}

// intBinary is a binary op of integers, (x, y), as lathe's integer
// functions (BitwiseAnd, ...) name their arguments.
func intBinary(name string) *dispatch.Op[dispatch.None] {
	return binaryArgs(name, [2]string{"x", "y"}, Ints, false)
}

// backward is an activation's backward op, (grad, x), of floats.
func backward(name string) *dispatch.Op[dispatch.None] {
	return binaryArgs(name, [2]string{"grad", "x"}, Floats, false)
}

func binaryArgs(name string, args [2]string, allowed dispatch.DTypeSet, boolResult bool) *dispatch.Op[dispatch.None] {
	names := func(i int) string { return args[i] }
	same := name != "logical_and" && name != "logical_or"
	op := dispatch.Register(&dispatch.Op[dispatch.None]{Schema: dispatch.Schema{Name: name, Args: args[:]},
		Infer: func(in []*dispatch.Tensor, _ dispatch.None) (dispatch.DType, []int, error) {
			for i, t := range in {
				if err := checkDType(t, names(i), allowed); err != nil {
					return 0, nil, err
				}
			}
			if same {
				if err := sameDType(in, names, 0); err != nil {
					return 0, nil, err
				}
			}
			shape, err := broadcastAll(in, names)
			if err != nil {
				return 0, nil, err
			}
			dt := in[0].DType
			if boolResult {
				dt = dispatch.Bool
			}
			return dt, shape, nil
		}})
	BinaryOps = append(BinaryOps, BinaryOp{op, allowed, boolResult})
	return op
}

func whereInfer(in []*dispatch.Tensor, _ dispatch.None) (dispatch.DType, []int, error) {
	names := func(i int) string { return [...]string{"cond", "x", "y"}[i] }
	if err := checkDType(in[0], "cond", 1<<dispatch.Bool); err != nil {
		return 0, nil, err
	}
	if err := sameDType(in, names, 1); err != nil {
		return 0, nil, err
	}
	shape, err := broadcastAll(in, names)
	if err != nil {
		return 0, nil, err
	}
	return in[1].DType, shape, nil
}

func castInfer(in []*dispatch.Tensor, to CastTo) (dispatch.DType, []int, error) {
	if !to.DType.Valid() {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrDType, Arg: "dtype", Detail: "is not a dtype", Fix: "use one of lathe's dtypes, such as lathe.Float32"}
	}
	return to.DType, clone(in[0].Shape), nil
}

func clone(s []int) []int { return append(make([]int, 0, len(s)), s...) }

// withChecks gives op its value checks.
func withChecks[A any](op *dispatch.Op[A], checks func([]*dispatch.Tensor, A) []dispatch.ValueCheck) *dispatch.Op[A] {
	op.Checks = checks
	return op
}

// powChecks refuses a negative exponent of an integer power, which an
// integer result cannot hold (torch refuses it too).
func powChecks(in []*dispatch.Tensor, _ dispatch.None) []dispatch.ValueCheck {
	if !in[1].DType.IsInt() {
		return nil
	}
	return []dispatch.ValueCheck{{Arg: 1, Max: math.MaxInt64, Fail: func(int64) *dispatch.Error { return NegativeExponentError() }}}
}

// divisorChecks refuses an integer divisor of zero, as torch's
// ZeroDivisionError does; a float one gives NaN. arg names the divisor.
func divisorChecks(arg string) func([]*dispatch.Tensor, dispatch.None) []dispatch.ValueCheck {
	return func(in []*dispatch.Tensor, _ dispatch.None) []dispatch.ValueCheck {
		if !in[1].DType.IsInt() {
			return nil
		}
		return []dispatch.ValueCheck{{Arg: 1, Outside: true, Fail: func(int64) *dispatch.Error { return DivisionByZeroError(arg) }}}
	}
}

// DivisionByZeroError is the integer divisions' error for a divisor of
// zero (torch's ZeroDivisionError), which arg names.
func DivisionByZeroError(arg string) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrValue, Arg: arg, Found: "0",
		Detail: "is zero, and an integer cannot be divided by zero (torch raises ZeroDivisionError)",
		Fix:    "make the divisor nonzero, or cast to a float dtype, where it gives NaN"}
}
