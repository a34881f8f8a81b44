package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// Elementwise ops. Binary ops broadcast as NumPy does and need both
// arguments of one dtype (lathe does not promote); comparisons give Bool.

var (
	opNeg, opAbs, opSign, opSquare, opReLU          = mustOp("neg"), mustOp("abs"), mustOp("sign"), mustOp("square"), mustOp("relu")
	opFloor, opCeil, opRound, opClamp               = mustOp("floor"), mustOp("ceil"), mustOp("round"), mustOp("clamp")
	opExp, opLog, opLog1p, opExpm1, opSqrt, opRsqrt = mustOp("exp"), mustOp("log"), mustOp("log1p"), mustOp("expm1"), mustOp("sqrt"), mustOp("rsqrt")
	opReciprocal, opSin, opCos, opTanh, opSigmoid   = mustOp("reciprocal"), mustOp("sin"), mustOp("cos"), mustOp("tanh"), mustOp("sigmoid")
	opLeakyReLU, opGELU, opGELUTanh, opSiLU         = mustOp("leaky_relu"), mustOp("gelu"), mustOp("gelu_tanh"), mustOp("silu")
	opSoftplus, opErf, opLogicalNot                 = mustOp("softplus"), mustOp("erf"), mustOp("logical_not")

	opAdd, opSub, opMul, opDiv, opPow  = mustOp("add"), mustOp("sub"), mustOp("mul"), mustOp("div"), mustOp("pow")
	opMaximum, opMinimum, opAtan2      = mustOp("maximum"), mustOp("minimum"), mustOp("atan2")
	opEq, opNe, opLt, opLe, opGt, opGe = mustOp("eq"), mustOp("ne"), mustOp("lt"), mustOp("le"), mustOp("gt"), mustOp("ge")
	opLogicalAnd, opLogicalOr, opWhere = mustOp("logical_and"), mustOp("logical_or"), mustOp("where")
)

func (x *Tensor) Neg() *Tensor        { return apply(opNeg, nil, x) }
func (x *Tensor) Abs() *Tensor        { return apply(opAbs, nil, x) }
func (x *Tensor) Sign() *Tensor       { return apply(opSign, nil, x) }
func (x *Tensor) Square() *Tensor     { return apply(opSquare, nil, x) }
func (x *Tensor) ReLU() *Tensor       { return apply(opReLU, nil, x) }
func (x *Tensor) Floor() *Tensor      { return apply(opFloor, nil, x) }
func (x *Tensor) Ceil() *Tensor       { return apply(opCeil, nil, x) }
func (x *Tensor) Round() *Tensor      { return apply(opRound, nil, x) } // half to even, as torch.round
func (x *Tensor) Exp() *Tensor        { return apply(opExp, nil, x) }
func (x *Tensor) Log() *Tensor        { return apply(opLog, nil, x) }
func (x *Tensor) Log1p() *Tensor      { return apply(opLog1p, nil, x) }
func (x *Tensor) Expm1() *Tensor      { return apply(opExpm1, nil, x) }
func (x *Tensor) Sqrt() *Tensor       { return apply(opSqrt, nil, x) }
func (x *Tensor) Rsqrt() *Tensor      { return apply(opRsqrt, nil, x) }
func (x *Tensor) Reciprocal() *Tensor { return apply(opReciprocal, nil, x) }
func (x *Tensor) Sin() *Tensor        { return apply(opSin, nil, x) }
func (x *Tensor) Cos() *Tensor        { return apply(opCos, nil, x) }
func (x *Tensor) Tanh() *Tensor       { return apply(opTanh, nil, x) }
func (x *Tensor) Sigmoid() *Tensor    { return apply(opSigmoid, nil, x) }
func (x *Tensor) SiLU() *Tensor       { return apply(opSiLU, nil, x) }
func (x *Tensor) Erf() *Tensor        { return apply(opErf, nil, x) }

// GELU is x·Φ(x) with Φ the standard normal CDF (PyTorch's approximate="none").
func (x *Tensor) GELU() *Tensor { return apply(opGELU, nil, x) }

// GELUTanh is GELU's tanh approximation (PyTorch's approximate="tanh").
func (x *Tensor) GELUTanh() *Tensor { return apply(opGELUTanh, nil, x) }

// Softplus is log(1+exp(x)), linear above 20 (PyTorch's beta=1, threshold=20).
func (x *Tensor) Softplus() *Tensor { return apply(opSoftplus, nil, x) }

// LeakyReLU is x for x > 0 and slope·x otherwise (PyTorch's default slope is 0.01).
func (x *Tensor) LeakyReLU(slope float64) *Tensor {
	return apply(opLeakyReLU, dispatch.Params{A: slope}, x)
}

// Clamp limits x to [lo, hi]; pass math.Inf(-1) or math.Inf(1) for no bound.
// NaN stays NaN.
func (x *Tensor) Clamp(lo, hi float64) *Tensor {
	if math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
		return failed(errorf("clamp", ErrValue, "", "needs lo ≤ hi, got lo="+ftoa(lo)+" hi="+ftoa(hi), ""))
	}
	return apply(opClamp, dispatch.Params{A: lo, B: hi}, x)
}

// LogicalNot is true where x is zero (false).
func (x *Tensor) LogicalNot() *Tensor { return apply(opLogicalNot, nil, x) }

func (x *Tensor) Add(y *Tensor) *Tensor     { return apply(opAdd, nil, x, y) }
func (x *Tensor) Sub(y *Tensor) *Tensor     { return apply(opSub, nil, x, y) }
func (x *Tensor) Mul(y *Tensor) *Tensor     { return apply(opMul, nil, x, y) }
func (x *Tensor) Div(y *Tensor) *Tensor     { return apply(opDiv, nil, x, y) }
func (x *Tensor) Pow(y *Tensor) *Tensor     { return apply(opPow, nil, x, y) }
func (x *Tensor) Maximum(y *Tensor) *Tensor { return apply(opMaximum, nil, x, y) }
func (x *Tensor) Minimum(y *Tensor) *Tensor { return apply(opMinimum, nil, x, y) }
func (x *Tensor) Atan2(y *Tensor) *Tensor   { return apply(opAtan2, nil, x, y) }
func (x *Tensor) Eq(y *Tensor) *Tensor      { return apply(opEq, nil, x, y) }
func (x *Tensor) Ne(y *Tensor) *Tensor      { return apply(opNe, nil, x, y) }
func (x *Tensor) Lt(y *Tensor) *Tensor      { return apply(opLt, nil, x, y) }
func (x *Tensor) Le(y *Tensor) *Tensor      { return apply(opLe, nil, x, y) }
func (x *Tensor) Gt(y *Tensor) *Tensor      { return apply(opGt, nil, x, y) }
func (x *Tensor) Ge(y *Tensor) *Tensor      { return apply(opGe, nil, x, y) }

// LogicalAnd and LogicalOr treat nonzero as true and give Bool.
func (x *Tensor) LogicalAnd(y *Tensor) *Tensor { return apply(opLogicalAnd, nil, x, y) }
func (x *Tensor) LogicalOr(y *Tensor) *Tensor  { return apply(opLogicalOr, nil, x, y) }

// Where picks x where cond is true and y elsewhere, broadcasting all three.
func Where(cond, x, y *Tensor) *Tensor { return apply(opWhere, nil, cond, x, y) }

// Scalar forms: the scalar becomes a 0-d tensor of x's dtype on x's device
// and broadcasts. An integer tensor takes only integral scalars.

func (x *Tensor) AddScalar(s float64) *Tensor     { return x.withScalar(opAdd, s) }
func (x *Tensor) SubScalar(s float64) *Tensor     { return x.withScalar(opSub, s) }
func (x *Tensor) MulScalar(s float64) *Tensor     { return x.withScalar(opMul, s) }
func (x *Tensor) DivScalar(s float64) *Tensor     { return x.withScalar(opDiv, s) }
func (x *Tensor) PowScalar(s float64) *Tensor     { return x.withScalar(opPow, s) }
func (x *Tensor) MaximumScalar(s float64) *Tensor { return x.withScalar(opMaximum, s) }
func (x *Tensor) MinimumScalar(s float64) *Tensor { return x.withScalar(opMinimum, s) }
func (x *Tensor) EqScalar(s float64) *Tensor      { return x.withScalar(opEq, s) }
func (x *Tensor) NeScalar(s float64) *Tensor      { return x.withScalar(opNe, s) }
func (x *Tensor) LtScalar(s float64) *Tensor      { return x.withScalar(opLt, s) }
func (x *Tensor) LeScalar(s float64) *Tensor      { return x.withScalar(opLe, s) }
func (x *Tensor) GtScalar(s float64) *Tensor      { return x.withScalar(opGt, s) }
func (x *Tensor) GeScalar(s float64) *Tensor      { return x.withScalar(opGe, s) }

func (x *Tensor) withScalar(op *dispatch.Op, s float64) *Tensor {
	if err := x.check(op.Name); err != nil {
		return failed(err)
	}
	return apply(op, nil, x, x.scalarLike(op.Name, s))
}

// scalarLike makes a 0-d tensor of x's dtype and device holding s.
func (x *Tensor) scalarLike(op string, s float64) *Tensor {
	data, err := filled(op, x.t.DType, 1, s)
	if err != nil {
		return failed(err)
	}
	return upload(op, x.t.Device, data, x.t.DType, []int{})
}

// fullLike makes a tensor of x's dtype and device with the given shape.
func (x *Tensor) fullLike(op string, v float64, shape []int) *Tensor {
	return full(op, x.t.Device, x.t.DType, v, shape)
}
