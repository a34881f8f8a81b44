package conformance

import "github.com/lathe-ml/lathe"

// The table entries of sort, argsort, topk and max/min along a dim
// (sort.json and grad_sort.json, made by build/torchref/sort.py). The
// *_values keys return the values alone, for the gradient cases; with
// "square": true they return the values squared, so that the
// Hessian-vector product is not zero (a gather is linear in x).

func init() {
	for k, f := range sortOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_sort.go and another table")
		}
		ops[k] = f
	}
}

// pair is the two results of a values-and-indices op.
func pair(v, i *lathe.Tensor) ([]*lathe.Tensor, error) {
	if err := v.Err(); err != nil {
		return nil, err
	}
	return []*lathe.Tensor{v, i}, i.Err()
}

func sortOf(a *Attrs, x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
	return x.Sort(a.Int("dim"), a.Bool("descending"))
}

func topkOf(a *Attrs, x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
	return x.TopK(a.Int("k"), a.Int("dim"), a.Bool("largest"))
}

func extremeOf(min bool) func(a *Attrs, x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
	return func(a *Attrs, x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) {
		if min {
			return x.MinDim(a.Int("dim"), a.Bool("keepdim"))
		}
		return x.MaxDim(a.Int("dim"), a.Bool("keepdim"))
	}
}

func both(f func(*Attrs, *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor)) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return pair(f(a, in[0])) }
}

func valuesOnly(f func(*Attrs, *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor)) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		v, _ := f(a, in[0])
		return one(squared(a, v))
	}
}

var sortOps = map[string]opFunc{
	"sort": both(sortOf),
	"argsort": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].ArgSort(a.Int("dim"), a.Bool("descending")))
	},
	"topk":    both(topkOf),
	"max_dim": both(extremeOf(false)),
	"min_dim": both(extremeOf(true)),

	"sort_values":    valuesOnly(sortOf),
	"topk_values":    valuesOnly(topkOf),
	"max_dim_values": valuesOnly(extremeOf(false)),
	"min_dim_values": valuesOnly(extremeOf(true)),
}
