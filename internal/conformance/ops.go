package conformance

import "github.com/lathe-ml/lathe"

// opFunc runs one op key's lathe call on a case's inputs. It returns the
// results (one, or the pieces of split and chunk) and the error of the call.
type opFunc func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error)

// ops maps each op key of the JSON cases to its lathe call. This file holds
// the elementwise ops; ops_tensor.go adds the rest.
var ops = map[string]opFunc{
	"neg": unary((*lathe.Tensor).Neg), "abs": unary((*lathe.Tensor).Abs), "sign": unary((*lathe.Tensor).Sign),
	"exp": unary((*lathe.Tensor).Exp), "log": unary((*lathe.Tensor).Log), "log1p": unary((*lathe.Tensor).Log1p),
	"expm1": unary((*lathe.Tensor).Expm1), "sqrt": unary((*lathe.Tensor).Sqrt), "rsqrt": unary((*lathe.Tensor).Rsqrt),
	"square": unary((*lathe.Tensor).Square), "reciprocal": unary((*lathe.Tensor).Reciprocal),
	"sin": unary((*lathe.Tensor).Sin), "cos": unary((*lathe.Tensor).Cos), "tanh": unary((*lathe.Tensor).Tanh),
	"sigmoid": unary((*lathe.Tensor).Sigmoid), "relu": unary((*lathe.Tensor).ReLU), "silu": unary((*lathe.Tensor).SiLU),
	"softplus": unary((*lathe.Tensor).Softplus), "erf": unary((*lathe.Tensor).Erf),
	"floor": unary((*lathe.Tensor).Floor), "ceil": unary((*lathe.Tensor).Ceil), "round": unary((*lathe.Tensor).Round),
	"gelu": unary((*lathe.Tensor).GELU), "gelu_tanh": unary((*lathe.Tensor).GELUTanh),
	"tan": unary((*lathe.Tensor).Tan), "asin": unary((*lathe.Tensor).Asin), "acos": unary((*lathe.Tensor).Acos),
	"atan": unary((*lathe.Tensor).Atan), "sinh": unary((*lathe.Tensor).Sinh), "cosh": unary((*lathe.Tensor).Cosh),
	"asinh": unary((*lathe.Tensor).Asinh), "acosh": unary((*lathe.Tensor).Acosh), "atanh": unary((*lathe.Tensor).Atanh),
	"logical_not": unary((*lathe.Tensor).LogicalNot),
	"leaky_relu": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].LeakyReLU(a.Float("slope")))
	},
	"softplus_with": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].SoftplusWith(a.Float("beta"), a.Float("threshold")))
	},
	"clamp": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Clamp(a.Float("lo"), a.Float("hi")))
	},

	"add": binary((*lathe.Tensor).Add), "sub": binary((*lathe.Tensor).Sub), "mul": binary((*lathe.Tensor).Mul),
	"div": binary((*lathe.Tensor).Div), "pow": binary((*lathe.Tensor).Pow),
	"maximum": binary((*lathe.Tensor).Maximum), "minimum": binary((*lathe.Tensor).Minimum),
	"atan2": binary((*lathe.Tensor).Atan2),
	"add_scaled": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].AddScaled(in[1], a.Float("alpha")))
	},
	"remainder": binary((*lathe.Tensor).Remainder), "fmod": binary((*lathe.Tensor).FMod),
	"eq": binary((*lathe.Tensor).Eq), "ne": binary((*lathe.Tensor).Ne), "lt": binary((*lathe.Tensor).Lt),
	"le": binary((*lathe.Tensor).Le), "gt": binary((*lathe.Tensor).Gt), "ge": binary((*lathe.Tensor).Ge),
	"logical_and": binary((*lathe.Tensor).LogicalAnd), "logical_or": binary((*lathe.Tensor).LogicalOr),
	"where": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.Where(in[0], in[1], in[2]))
	},

	"add_scalar": scalar((*lathe.Tensor).AddScalar), "sub_scalar": scalar((*lathe.Tensor).SubScalar),
	"mul_scalar": scalar((*lathe.Tensor).MulScalar), "div_scalar": scalar((*lathe.Tensor).DivScalar),
	"pow_scalar":     scalar((*lathe.Tensor).PowScalar),
	"maximum_scalar": scalar((*lathe.Tensor).MaximumScalar), "minimum_scalar": scalar((*lathe.Tensor).MinimumScalar),
	"eq_scalar": scalar((*lathe.Tensor).EqScalar), "ne_scalar": scalar((*lathe.Tensor).NeScalar),
	"lt_scalar": scalar((*lathe.Tensor).LtScalar), "le_scalar": scalar((*lathe.Tensor).LeScalar),
	"gt_scalar": scalar((*lathe.Tensor).GtScalar), "ge_scalar": scalar((*lathe.Tensor).GeScalar),
	"remainder_scalar": scalar((*lathe.Tensor).RemainderScalar), "fmod_scalar": scalar((*lathe.Tensor).FModScalar),

	"cast":       func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(in[0].Cast(a.DType("dtype"))) },
	"contiguous": unary((*lathe.Tensor).Contiguous),
}

func one(t *lathe.Tensor) ([]*lathe.Tensor, error) { return []*lathe.Tensor{t}, t.Err() }

func unary(f func(*lathe.Tensor) *lathe.Tensor) opFunc {
	return func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(f(in[0])) }
}

func binary(f func(x, y *lathe.Tensor) *lathe.Tensor) opFunc {
	return func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(f(in[0], in[1])) }
}

func scalar(f func(*lathe.Tensor, float64) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(f(in[0], a.Float("s"))) }
}
