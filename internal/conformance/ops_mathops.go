package conformance

import "github.com/lathe-ml/lathe"

// The table entries of torch's everyday math functions that lathe builds
// as composites (mathops.json and grad_mathops.json, made by
// build/torchref/mathops.py): log2 … rad2deg, the shrinks and the special
// functions erfc, erfinv, lgamma and digamma; xlogy … fmin; nansum,
// nanmean, count_nonzero, amax, amin, isclose, softmin and glu; cross,
// kron, tensordot and cdist. Keys with "square": true square the result, so that
// the Hessian-vector product of an op linear in x is not zero.

func init() {
	for k, f := range mathOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_mathops.go and another table")
		}
		ops[k] = f
	}
}

// reducedBy is a reduction over the case's dims, keeping them where it
// says.
func reducedBy(f, keep func(*lathe.Tensor, ...int) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Has("keepdim") && a.Bool("keepdim") {
			return one(keep(in[0], a.Ints("dims")...))
		}
		return one(f(in[0], a.Ints("dims")...))
	}
}

var mathOps = map[string]opFunc{
	"log2": unary((*lathe.Tensor).Log2), "log10": unary((*lathe.Tensor).Log10), "exp2": unary((*lathe.Tensor).Exp2),
	"trunc": unary((*lathe.Tensor).Trunc), "frac": unary((*lathe.Tensor).Frac), "logit": unary((*lathe.Tensor).Logit),
	"logit_eps": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].LogitEps(a.Float("eps")))
	},
	"sinc":    unary((*lathe.Tensor).Sinc),
	"deg2rad": squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Deg2Rad() }),
	"rad2deg": unary((*lathe.Tensor).Rad2Deg),
	"softshrink": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Softshrink(a.Float("lambd")))
	},
	"hardshrink": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Hardshrink(a.Float("lambd")))
	},
	"tanhshrink": unary((*lathe.Tensor).Tanhshrink),
	"erfc":       unary((*lathe.Tensor).Erfc), "erfinv": unary((*lathe.Tensor).Erfinv),
	"lgamma": unary((*lathe.Tensor).Lgamma), "digamma": unary((*lathe.Tensor).Digamma),

	"xlogy": binary((*lathe.Tensor).Xlogy), "hypot": binary((*lathe.Tensor).Hypot),
	"logaddexp": binary((*lathe.Tensor).LogAddExp), "logaddexp2": binary((*lathe.Tensor).LogAddExp2),
	"copysign": binary((*lathe.Tensor).Copysign), "heaviside": binary((*lathe.Tensor).Heaviside),
	"fmax": binary((*lathe.Tensor).Fmax), "fmin": binary((*lathe.Tensor).Fmin),

	"nansum":  reducedBy((*lathe.Tensor).NanSum, (*lathe.Tensor).NanSumKeepDim),
	"nanmean": reducedBy((*lathe.Tensor).NanMean, (*lathe.Tensor).NanMeanKeepDim),
	"amax":    reducedBy((*lathe.Tensor).Amax, (*lathe.Tensor).AmaxKeepDim),
	"amin":    reducedBy((*lathe.Tensor).Amin, (*lathe.Tensor).AminKeepDim),
	"count_nonzero": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].CountNonzero(a.Ints("dims")...))
	},
	"isclose": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].IsClose(in[1], a.Float("rtol"), a.Float("atol"), a.Bool("equal_nan")))
	},
	"softmin": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(in[0].Softmin(a.Int("dim"))) },
	"glu":     func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(in[0].GLU(a.Int("dim"))) },

	"cross": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Cross(in[1], a.Int("dim")) }),
	"kron":  squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Kron(in[1]) }),
	"tensordot": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].TensorDot(in[1], a.Ints("xdims"), a.Ints("ydims"))
	}),
	"cdist": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Cdist(in[1], a.Float("p")))
	},
}
