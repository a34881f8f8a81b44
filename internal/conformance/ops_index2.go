package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the indexing and shape functions of ops_index2.go
// and ops_shape2.go (index2.json and grad_index2.json, made by
// build/torchref/index2.py): take, take_along_dim, index_add, index_copy,
// index_fill, scatter_reduce, masked_scatter, unique_consecutive; unbind, tensor_split, the stacks, fliplr,
// flipud, rot90, diag_embed, block_diag and vander. A stack's and
// block_diag's inputs are the tensors of the list. With "square": true a
// result is squared, so that the Hessian-vector product is not zero
// (these ops are linear).

func init() {
	for k, f := range index2Ops {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_index2.go and another table")
		}
		ops[k] = f
	}
}

var index2Ops = map[string]opFunc{
	"take": squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Take(in[1]) }),
	"take_along_dim": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		if a.Has("dim") {
			return in[0].TakeAlongDim(in[1], a.Int("dim"))
		}
		return in[0].TakeAlongDim(in[1])
	}),
	"index_add": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].IndexAdd(a.Int("dim"), in[1], in[2], a.Float("alpha"))
	}),
	"index_copy": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].IndexCopy(a.Int("dim"), in[1], in[2]) }),
	"index_fill": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].IndexFill(a.Int("dim"), in[1], a.Float("value"))
	}),
	"scatter_reduce": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].ScatterReduce(a.Int("dim"), in[1], in[2], a.Str("reduce"), a.Bool("include_self"))
	}),
	"masked_scatter": squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].MaskedScatter(in[1], in[2]) }),
	"unique_consecutive": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		values, inverse, counts := in[0].UniqueConsecutive(a.Bool("inverse"), a.Bool("counts"))
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
	"unbind": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return in[0].Unbind(a.Int("dim")) },
	"tensor_split": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Has("indices") {
			return in[0].TensorSplitAt(a.Ints("indices"), a.Int("dim"))
		}
		return in[0].TensorSplit(a.Int("sections"), a.Int("dim"))
	},
	"hstack":       squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return lathe.HStack(in) }),
	"vstack":       squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return lathe.VStack(in) }),
	"row_stack":    squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return lathe.RowStack(in) }),
	"dstack":       squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return lathe.DStack(in) }),
	"column_stack": squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return lathe.ColumnStack(in) }),
	"fliplr":       squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Fliplr() }),
	"flipud":       squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Flipud() }),
	"rot90": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].Rot90(a.Int("k"), a.Ints("dims")...)
	}),
	"diag_embed": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].DiagEmbed(a.Int("offset"), a.Int("dim1"), a.Int("dim2"))
	}),
	"block_diag": squarable(func(_ *Attrs, in []*lathe.Tensor) *lathe.Tensor { return lathe.BlockDiag(in...) }),
	"vander": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].Vander(a.Int("n"), a.Bool("increasing"))
	}),
}
