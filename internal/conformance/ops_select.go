package conformance

import "github.com/lathe-ml/lathe"

// The table entries of nonzero, masked_select, unique, index and
// index_put (select.json and grad_select.json, made by
// build/torchref/selection.py). An index case's inputs are x then one per
// indexed dim, nil for a full slice; an index_put case's are x, values,
// then the same. With "square": true a result is squared, so that the
// Hessian-vector product is not zero (these ops are linear).

func init() {
	for k, f := range selectOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_select.go and another table")
		}
		ops[k] = f
	}
}

var selectOps = map[string]opFunc{
	"nonzero": unary((*lathe.Tensor).Nonzero),
	"masked_select": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(squared(a, in[0].MaskedSelect(in[1])))
	},
	"unique": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		values, inverse, counts := in[0].Unique(a.Bool("sorted"), a.Bool("inverse"), a.Bool("counts"))
		out := []*lathe.Tensor{values}
		for _, t := range []*lathe.Tensor{inverse, counts} {
			if t != nil {
				out = append(out, t)
			}
		}
		for _, t := range out {
			if err := t.Err(); err != nil {
				return nil, err
			}
		}
		return out, nil
	},
	"index": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(squared(a, in[0].Index(in[1:]...)))
	},
	"index_put": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(squared(a, in[0].IndexPut(in[2:], in[1], a.Bool("accumulate"))))
	},
}
