package conformance

import "github.com/lathe-ml/lathe"

// The table entries of grid sampling (grid.json and grad_grid.json, made by
// build/torchref/grid.py, which says what each key means).

func init() {
	for k, f := range gridOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_grid.go and another table")
		}
		ops[k] = f
		// Trilinear outputs are sums of 8 weighted terms.
		accumulatingOps[k] = true
	}
}

var gridOps = map[string]opFunc{
	"grid_sample": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.GridSample(in[0], in[1], gridOptions(a)...))
	},
	"affine_grid": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.AffineGrid(in[0], a.Ints("size"), a.Bool("align_corners")))
	},
	"stn": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		grid := lathe.AffineGrid(in[1], in[0].Shape(), a.Bool("align_corners"))
		return one(lathe.GridSample(in[0], grid, gridOptions(a)...))
	},
}

// gridOptions reads a case's mode, padding_mode and align_corners.
func gridOptions(a *Attrs) []lathe.GridOption {
	opts := []lathe.GridOption{lathe.GridMode(a.Str("mode")), lathe.GridPadding(a.Str("padding_mode"))}
	if a.Bool("align_corners") {
		opts = append(opts, lathe.GridAlignCorners())
	}
	return opts
}
