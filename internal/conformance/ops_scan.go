package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the scan, search and counting ops (scan.json and
// grad_scan.json, made by build/torchref/scan.py): cumprod, cummax,
// cummin, logcumsumexp, diff; searchsorted, bucketize, bincount, histc;
// meshgrid, cartesian_prod, tril_indices, triu_indices and argwhere.
// Keys ending in "_values" take the values of a pair; "square": true
// squares the result, so that the Hessian-vector product of an op linear
// in x is not zero. tril_indices and triu_indices take the device of
// their one input, a 0-d tensor.

func init() {
	for k, f := range scanOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_scan.go and another table")
		}
		ops[k] = f
	}
}

func scanOf(f func(*lathe.Tensor, int) *lathe.Tensor) opFunc {
	return squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return f(in[0], a.Int("dim")) })
}

func cumExtremeOf(f func(*lathe.Tensor, int) (*lathe.Tensor, *lathe.Tensor)) func(*Attrs, *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
	return func(a *Attrs, x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) { return f(x, a.Int("dim")) }
}

var scanOps = map[string]opFunc{
	"cumprod":       scanOf((*lathe.Tensor).CumProd),
	"logcumsumexp":  scanOf((*lathe.Tensor).LogCumSumExp),
	"cummax":        both(cumExtremeOf((*lathe.Tensor).CumMax)),
	"cummin":        both(cumExtremeOf((*lathe.Tensor).CumMin)),
	"cummax_values": valuesOnly(cumExtremeOf((*lathe.Tensor).CumMax)),
	"cummin_values": valuesOnly(cumExtremeOf((*lathe.Tensor).CumMin)),
	"diff": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].Diff(a.Int("n"), a.Int("dim"), in[1], in[2])
	}),

	"searchsorted": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		var opts []lathe.SearchOption
		if a.Bool("right") {
			opts = append(opts, lathe.SearchRight())
		}
		if a.Has("side") {
			opts = append(opts, lathe.SearchSide(a.Str("side")))
		}
		if a.Bool("out_int32") {
			opts = append(opts, lathe.SearchOutInt32())
		}
		if in[2] != nil {
			opts = append(opts, lathe.SearchSorter(in[2]))
		}
		return one(lathe.SearchSorted(in[0], in[1], opts...))
	},
	"bucketize": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Bucketize(in[1], a.Bool("right"), a.Bool("out_int32")))
	},
	"bincount": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Bincount(in[1], a.Int("minlength")))
	},
	"histc": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Histc(a.Int("bins"), a.Float("min"), a.Float("max")))
	},

	"meshgrid": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return lathe.Meshgrid(in, a.Str("indexing"))
	},
	// meshgrid_sum is Σ_k (k+1)·grid_k, one result whose gradient reaches
	// every input.
	"meshgrid_sum": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		grid, err := lathe.Meshgrid(in, a.Str("indexing"))
		if err != nil {
			return nil, err
		}
		sum := grid[0]
		for k, g := range grid[1:] {
			sum = sum.Add(g.MulScalar(float64(k + 2)))
		}
		return one(sum)
	},
	"cartesian_prod": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.CartesianProd(in...))
	},
	"cartesian_prod_sq": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.CartesianProd(in...).Square())
	},
	"tril_indices": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.TrilIndices(in[0].Device(), a.Int("row"), a.Int("col"), a.Int("offset")))
	},
	"triu_indices": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.TriuIndices(in[0].Device(), a.Int("row"), a.Int("col"), a.Int("offset")))
	},
	"argwhere": unary((*lathe.Tensor).Argwhere),
}
