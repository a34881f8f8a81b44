package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the everyday ops that lathe builds as composites
// (moreops.json and grad_moreops.json, made by build/torchref/moreops.py):
// the value tests, nan_to_num, any and all; lerp, outer, diagonal, diag,
// trace and roll; the activations; median, kthvalue and quantile. Keys
// with "square": true square the result, so that the Hessian-vector
// product of an op linear in x is not zero.

func init() {
	for k, f := range compositeOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_moreops.go and another table")
		}
		ops[k] = f
	}
}

// truthOf is any or all over the case's dims, keeping them where it says.
func truthOf(f, keep func(*lathe.Tensor, ...int) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Has("keepdim") && a.Bool("keepdim") {
			return one(keep(in[0], a.Ints("dims")...))
		}
		return one(f(in[0], a.Ints("dims")...))
	}
}

var compositeOps = map[string]opFunc{
	"isnan": unary((*lathe.Tensor).IsNaN), "isinf": unary((*lathe.Tensor).IsInf),
	"isposinf": unary((*lathe.Tensor).IsPosInf), "isneginf": unary((*lathe.Tensor).IsNegInf),
	"isfinite": unary((*lathe.Tensor).IsFinite), "nan_to_num": unary((*lathe.Tensor).NanToNum),
	"nan_to_num_with": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].NanToNumWith(a.Float("nan"), a.Float("posinf"), a.Float("neginf")))
	},
	"any": truthOf((*lathe.Tensor).Any, (*lathe.Tensor).AnyKeepDim),
	"all": truthOf((*lathe.Tensor).All, (*lathe.Tensor).AllKeepDim),

	"lerp": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(in[0].Lerp(in[1], in[2])) },
	"lerp_scalar": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].LerpScalar(in[1], a.Float("weight")))
	},
	"outer": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(in[0].Outer(in[1])) },
	"diagonal": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].Diagonal(a.Int("offset"), a.Int("dim1"), a.Int("dim2"))
	}),
	"diag":  squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Diag(a.Int("diagonal")) }),
	"trace": unary((*lathe.Tensor).Trace),
	"roll": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].Roll(a.Ints("shifts"), a.Ints("dims")...)
	}),

	"elu":         func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(in[0].ELU(a.Float("alpha"))) },
	"selu":        unary((*lathe.Tensor).SELU),
	"celu":        func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(in[0].CELU(a.Float("alpha"))) },
	"relu6":       unary((*lathe.Tensor).ReLU6),
	"hardsigmoid": unary((*lathe.Tensor).Hardsigmoid),
	"hardswish":   unary((*lathe.Tensor).Hardswish),
	"mish":        unary((*lathe.Tensor).Mish),
	"softsign":    unary((*lathe.Tensor).Softsign),
	"logsigmoid":  unary((*lathe.Tensor).LogSigmoid),
	"hardtanh": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Hardtanh(a.Float("min_val"), a.Float("max_val")))
	},
	"threshold": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Threshold(a.Float("threshold"), a.Float("value")))
	},

	"median":            unary((*lathe.Tensor).Median),
	"median_dim":        both(medianOf),
	"median_dim_values": valuesOnly(medianOf),
	"kthvalue":          both(kthOf),
	"kthvalue_values":   valuesOnly(kthOf),
	"quantile": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		if a.Bool("keepdim") {
			return in[0].QuantileKeepDim(a.Float("q"), a.Str("interpolation"), a.Ints("dims")...)
		}
		return in[0].Quantile(a.Float("q"), a.Str("interpolation"), a.Ints("dims")...)
	}),
}

func medianOf(a *Attrs, x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
	return x.MedianDim(a.Int("dim"), a.Bool("keepdim"))
}

func kthOf(a *Attrs, x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
	return x.Kthvalue(a.Int("k"), a.Int("dim"), a.Bool("keepdim"))
}
