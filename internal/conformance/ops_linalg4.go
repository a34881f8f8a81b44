package conformance

import (
	"github.com/lathe-ml/lathe"
)

// The table entries of pdist, unique_consecutive with a dim, solve with
// left=false and lstsq's four results (linalg4.json and
// grad_linalg4.json, made by build/torchref/linalg4.py): pdist ("p"),
// unique_consecutive_dim (values, then the inverse and the counts where
// "inverse" and "counts" ask for them; "dim"), solve_side ("left") and
// lstsq_full (solution, residuals, rank, singular values; "driver"; with
// "skip_solution" the last three alone, with "solution" the solution
// alone, for the gradients).

func init() {
	for k, f := range linalg4Ops {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_linalg4.go and another table")
		}
		ops[k] = f
	}
}

var linalg4Ops = map[string]opFunc{
	"pdist": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Pdist(a.Float("p")))
	},
	"unique_consecutive_dim": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		values, inverse, counts := in[0].UniqueConsecutiveDim(a.Int("dim"), a.Bool("inverse"), a.Bool("counts"))
		out := []*lathe.Tensor{values}
		for _, t := range []*lathe.Tensor{inverse, counts} {
			if t != nil {
				out = append(out, t)
			}
		}
		return many(out...)
	},
	"solve_side": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].SolveSide(in[1], a.Bool("left")))
	},
	"lstsq_full": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		x, r, k, s := in[0].LstsqFull(in[1], a.Str("driver"))
		switch {
		case a.Has("skip_solution") && a.Bool("skip_solution"):
			x.Release()
			return many(r, k, s)
		case a.Has("solution") && a.Bool("solution"):
			r.Release()
			k.Release()
			s.Release()
			return one(x)
		}
		return many(x, r, k, s)
	},
}
