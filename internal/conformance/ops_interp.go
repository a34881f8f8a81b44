package conformance

import "github.com/lathe-ml/lathe"

// The table entries of interpolation (build/torchref/interp.py has the
// cases and what each key means).

func init() {
	for k, f := range interpOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_interp.go and another table")
		}
		ops[k] = f
		// Linear and cubic outputs are sums of up to 64 weighted terms.
		accumulatingOps[k] = true
	}
}

var interpOps = map[string]opFunc{
	"interpolate": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Interpolate(interpOptions(a)...))
	},
	"interpolate_sq": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Interpolate(interpOptions(a)...).Square())
	},
	// The backward op as a function of the upstream gradient w: x is a
	// fresh leaf, so that the result depends on w alone (torch's gradient
	// with respect to x is zero) and the finite differences, which run on
	// inputs that require no gradient, can still take it.
	"interpolate_vjp": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		x := in[0].Detach().RequireGrad()
		gs, err := lathe.Grad(x.Interpolate(interpOptions(a)...), []*lathe.Tensor{x},
			lathe.WithGradient(in[1]), lathe.CreateGraph())
		if err != nil {
			return nil, err
		}
		return one(gs[0])
	},
}

// interpOptions reads a case's mode, size or scale_factor, align_corners and
// recompute_scale_factor.
func interpOptions(a *Attrs) []lathe.InterpOption {
	opts := []lathe.InterpOption{lathe.Mode(a.Str("mode"))}
	if a.Has("size") {
		opts = append(opts, lathe.Size(a.Ints("size")...))
	}
	if a.Has("scale_factor") {
		opts = append(opts, lathe.ScaleFactor(a.floats("scale_factor")...))
	}
	if a.Bool("align_corners") {
		opts = append(opts, lathe.AlignCorners())
	}
	if a.Bool("recompute_scale_factor") {
		opts = append(opts, lathe.RecomputeScaleFactor())
	}
	return opts
}

// floats reads a list of numbers.
func (a *Attrs) floats(k string) []float64 {
	l, ok := a.m[k].([]any)
	if !ok {
		a.fail(k, "a list of numbers")
		return nil
	}
	out := make([]float64, len(l))
	for i, e := range l {
		v, err := parseFloat(e, 64)
		if err != nil {
			a.fail(k, "a list of numbers")
		}
		out[i] = v
	}
	return out
}
