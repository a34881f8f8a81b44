package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the shape, product and small math functions of
// ops_shapes3.go (shapes3.json and grad_shapes3.json, made by
// build/torchref/shapes3.py): select, t, movedim, swapaxes, ravel, the
// *_as methods, unflatten, msort, positive, clamp_min, clamp_max,
// aminmax, sgn, rsub; the atleast family, broadcast_tensors, the splits,
// diagflat, combinations, the products, dist, float_power and the
// trapezoid rules. Keys with "square": true square the result, so that
// the Hessian-vector product of an op linear in x is not zero.

func init() {
	for k, f := range shapes3Ops {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_shapes3.go and another table")
		}
		ops[k] = f
	}
}

// splitOf is hsplit, vsplit or dsplit, by indices where the case has
// them, else by sections.
func splitOf(by func(*lathe.Tensor, int) ([]*lathe.Tensor, error), at func(*lathe.Tensor, []int) ([]*lathe.Tensor, error)) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Has("indices") {
			return at(in[0], a.Ints("indices"))
		}
		return by(in[0], a.Int("sections"))
	}
}

var shapes3Ops = map[string]opFunc{
	"select": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Select(a.Int("dim"), a.Int("index")) }),
	"t":      unary((*lathe.Tensor).T),
	"movedim": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].MoveDim(a.Ints("source"), a.Ints("destination"))
	}),
	"swapaxes":   squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].SwapAxes(a.Int("a"), a.Int("b")) }),
	"ravel":      unary((*lathe.Tensor).Ravel),
	"expand_as":  binary((*lathe.Tensor).ExpandAs),
	"reshape_as": binary((*lathe.Tensor).ReshapeAs),
	"view_as":    binary((*lathe.Tensor).ViewAs),
	"type_as":    binary((*lathe.Tensor).TypeAs),
	"unflatten": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].Unflatten(a.Int("dim"), a.Ints("sizes")...)
	}),
	"msort":    unary((*lathe.Tensor).Msort),
	"positive": unary((*lathe.Tensor).Positive),
	"clamp_min": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].ClampMin(a.Float("min")))
	},
	"clamp_max": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].ClampMax(a.Float("max")))
	},
	"aminmax": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Has("dim") {
			return many(in[0].AminmaxDim(a.Int("dim"), a.Has("keepdim") && a.Bool("keepdim")))
		}
		return many(in[0].Aminmax())
	},
	"sgn": unary((*lathe.Tensor).Sgn),
	"rsub": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Rsub(in[1], a.Float("alpha")))
	},

	"atleast_1d": unary(lathe.AtLeast1D),
	"atleast_2d": unary(lathe.AtLeast2D),
	"atleast_3d": unary(lathe.AtLeast3D),
	"broadcast_tensors": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return lathe.BroadcastTensors(in...)
	},
	"hsplit":   splitOf((*lathe.Tensor).HSplit, (*lathe.Tensor).HSplitAt),
	"vsplit":   splitOf((*lathe.Tensor).VSplit, (*lathe.Tensor).VSplitAt),
	"dsplit":   splitOf((*lathe.Tensor).DSplit, (*lathe.Tensor).DSplitAt),
	"diagflat": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].DiagFlat(a.Int("offset")) }),
	"combinations": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Combinations(a.Int("r"), a.Bool("with_replacement")))
	},

	"dot":   binary((*lathe.Tensor).Dot),
	"vdot":  binary((*lathe.Tensor).Vdot),
	"inner": binary((*lathe.Tensor).Inner),
	"mv":    binary((*lathe.Tensor).Mv),
	"mm":    binary((*lathe.Tensor).Mm),
	"bmm":   binary((*lathe.Tensor).Bmm),
	"dist": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Dist(in[1], a.Float("p")))
	},
	"float_power": binary((*lathe.Tensor).FloatPower),
	"float_power_scalar": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].FloatPowerScalar(a.Float("exponent")))
	},
	"trapezoid": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.Trapezoid(in[0], a.Float("dx"), a.Int("dim")))
	},
	"trapezoid_x": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.TrapezoidX(in[0], in[1], a.Int("dim")))
	},
	"cumulative_trapezoid": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.CumulativeTrapezoid(in[0], a.Float("dx"), a.Int("dim")))
	},
	"cumulative_trapezoid_x": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.CumulativeTrapezoidX(in[0], in[1], a.Int("dim")))
	},
}
