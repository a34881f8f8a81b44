package conformance

import "github.com/lathe-ml/lathe"

// The table entries of torch's arithmetic, statistics and integer
// functions that lathe builds as composites (mathextra.json and
// grad_mathextra.json, made by build/torchref/mathextra.py): addmm, addmv,
// addr, baddbmm, addbmm, addcmul and addcdiv; var_mean, std_mean, cov and
// corrcoef; the bitwise functions, the shifts, gcd, lcm, floor_divide and
// logical_xor; signbit, xlog1py, ldexp, frexp, mvlgamma, isin, renorm,
// nanquantile and nanmedian.

func init() {
	for k, f := range mathExtraOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_mathextra.go and another table")
		}
		ops[k] = f
	}
}

// blasOf is an addmm-like op with the case's beta and alpha.
func blasOf(f func(c, a, b *lathe.Tensor, beta, alpha float64) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(f(in[0], in[1], in[2], a.Float("beta"), a.Float("alpha")))
	}
}

// pointwiseOf is addcmul or addcdiv with the case's value.
func pointwiseOf(f func(x, t1, t2 *lathe.Tensor, value float64) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(f(in[0], in[1], in[2], a.Float("value")))
	}
}

// statMeanOf is var_mean or std_mean over the case's dims.
func statMeanOf(f, keep func(*lathe.Tensor, bool, ...int) (*lathe.Tensor, *lathe.Tensor)) func(*Attrs, *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
	return func(a *Attrs, x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
		if a.Bool("keepdim") {
			return keep(x, a.Bool("unbiased"), a.Ints("dims")...)
		}
		return f(x, a.Bool("unbiased"), a.Ints("dims")...)
	}
}

var (
	varMeanOf = statMeanOf((*lathe.Tensor).VarMean, (*lathe.Tensor).VarMeanKeepDim)
	stdMeanOf = statMeanOf((*lathe.Tensor).StdMean, (*lathe.Tensor).StdMeanKeepDim)
)

var mathExtraOps = map[string]opFunc{
	"addmm":   blasOf(lathe.Addmm),
	"addmv":   blasOf(lathe.Addmv),
	"addr":    blasOf(lathe.Addr),
	"baddbmm": blasOf(lathe.Baddbmm),
	"addbmm":  blasOf(lathe.Addbmm),
	"addcmul": pointwiseOf(lathe.Addcmul),
	"addcdiv": pointwiseOf(lathe.Addcdiv),

	"var_mean":     both(varMeanOf),
	"std_mean":     both(stdMeanOf),
	"var_mean_var": valuesOnly(varMeanOf),
	"var_mean_mean": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		_, m := varMeanOf(a, in[0])
		return one(m)
	},
	"cov": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		var fw, aw *lathe.Tensor
		rest := in[1:]
		if a.Bool("fw") {
			fw, rest = rest[0], rest[1:]
		}
		if a.Bool("aw") {
			aw = rest[0]
		}
		return one(in[0].Cov(a.Int("correction"), fw, aw))
	},
	"corrcoef": unary((*lathe.Tensor).Corrcoef),

	"bitwise_and":         binary((*lathe.Tensor).BitwiseAnd),
	"bitwise_or":          binary((*lathe.Tensor).BitwiseOr),
	"bitwise_xor":         binary((*lathe.Tensor).BitwiseXor),
	"bitwise_not":         unary((*lathe.Tensor).BitwiseNot),
	"bitwise_left_shift":  binary((*lathe.Tensor).BitwiseLeftShift),
	"bitwise_right_shift": binary((*lathe.Tensor).BitwiseRightShift),
	"gcd":                 binary((*lathe.Tensor).Gcd),
	"lcm":                 binary((*lathe.Tensor).Lcm),
	"floor_divide":        binary((*lathe.Tensor).FloorDivide),
	"logical_xor":         binary((*lathe.Tensor).LogicalXor),

	"signbit": unary((*lathe.Tensor).Signbit),
	"xlog1py": binary((*lathe.Tensor).Xlog1py),
	"ldexp":   binary((*lathe.Tensor).Ldexp),
	"frexp":   func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return pair(in[0].Frexp()) },
	"frexp_mantissa": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		m, e := in[0].Frexp()
		e.Release()
		return one(m)
	},
	"mvlgamma": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(in[0].Mvlgamma(a.Int("p"))) },
	"isin": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.Isin(in[0], in[1], a.Bool("invert")))
	},
	"renorm": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Renorm(a.Float("p"), a.Int("dim"), a.Float("maxnorm")))
	},
	"nanquantile": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Bool("keepdim") {
			return one(in[0].NanQuantileKeepDim(a.Float("q"), a.Str("interpolation"), a.Ints("dims")...))
		}
		return one(in[0].NanQuantile(a.Float("q"), a.Str("interpolation"), a.Ints("dims")...))
	},
	"nanmedian": unary((*lathe.Tensor).NanMedian),
	"histogram": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		var w *lathe.Tensor
		if len(in) > 1 {
			w = in[1]
		}
		if r := a.Floats("range"); len(r) == 2 {
			return pair(in[0].HistogramRange(a.Int("bins"), r[0], r[1], w, a.Bool("density")))
		}
		return pair(in[0].Histogram(a.Int("bins"), w, a.Bool("density")))
	},
	"nanmedian_dim":        both(nanMedianOf),
	"nanmedian_dim_values": valuesOnly(nanMedianOf),
}

func nanMedianOf(a *Attrs, x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
	return x.NanMedianDim(a.Int("dim"), a.Bool("keepdim"))
}
