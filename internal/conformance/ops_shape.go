package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the ops a decoder needs: tril, triu, repeat, tile,
// repeat_interleave (with a count, and with a tensor of counts) and einsum (cases from build/torchref/shapeops.py).
// With the attribute "square" the result is squared, so that a gradient
// case of an op linear in x has a Hessian that is not zero.

func init() {
	for k, f := range shapeOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in two tables")
		}
		ops[k] = f
	}
}

var shapeOps = map[string]opFunc{
	"tril": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Tril(a.Int("diagonal")) }),
	"triu": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Triu(a.Int("diagonal")) }),
	"repeat": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].Repeat(a.Ints("reps")...)
	}),
	"tile": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor { return in[0].Tile(a.Ints("reps")...) }),
	"repeat_interleave": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return in[0].RepeatInterleave(a.Int("repeats"), a.Int("dim"))
	}),
	"repeat_interleave_counts": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		counts := make([]int64, 0, len(a.Ints("counts")))
		for _, c := range a.Ints("counts") {
			counts = append(counts, int64(c))
		}
		return in[0].RepeatInterleaveCounts(lathe.FromSlice(in[0].Device(), counts), a.Int("dim"))
	}),
	"einsum": squarable(func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor {
		return lathe.Einsum(a.Str("equation"), in...)
	}),
}

// squarable runs f, and squares its result where the case says "square".
func squarable(f func(a *Attrs, in []*lathe.Tensor) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		y := f(a, in)
		if a.Has("square") && a.Bool("square") {
			y = y.Mul(y)
		}
		return one(y)
	}
}
