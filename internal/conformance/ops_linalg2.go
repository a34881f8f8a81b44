package conformance

import (
	"fmt"

	"github.com/lathe-ml/lathe"
)

// The table entries of the rest of torch.linalg (linalg2.json and
// grad_linalg2.json, made by build/torchref/linalg2.py): eigh (its
// eigenvectors with lathe's signs, which the cases give torch's too),
// eigh_inv (w, V·Vᵀ, Vᵀ·A·V: what does not depend on the eigenvectors'
// choice), eigvalsh, svd, svd_inv (S, U·diag(S)·Vh, Uᵀ·U, Vh·Vhᵀ),
// svdvals, pinv, matrix_rank, matrix_norm ("ord" as torch writes it),
// cond, matrix_power ("n"), matrix_exp, lstsq (the solution, as
// torch's driver "gelsd") and multi_dot; for the gradients eigh_vv
// (V∘V), svd_uu (U∘U), svd_vv (Vh∘Vh), svd_uvh (U·Vh) and svd_full_uu
// (U∘U of the first k columns of a full SVD). A case with "sym": true
// takes (A + Aᵀ)/2 first, as cholesky's in ops_linalgfam.go.

func init() {
	for k, f := range linalg2Ops {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_linalg2.go and another table")
		}
		ops[k] = f
	}
}

// linalg2Sym is x, or (x + xᵀ)/2 where the case says "sym".
func linalg2Sym(a *Attrs, x *lathe.Tensor) *lathe.Tensor {
	if a.Has("sym") && a.Bool("sym") {
		return x.Add(x.MT()).MulScalar(0.5)
	}
	return x
}

// many is ts with the first error among them.
func many(ts ...*lathe.Tensor) ([]*lathe.Tensor, error) {
	for _, t := range ts {
		if err := t.Err(); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

var linalg2Ords = map[string]lathe.MatrixOrd{
	"fro": lathe.OrdFro, "nuc": lathe.OrdNuc, "inf": lathe.OrdInf, "-inf": lathe.OrdNegInf,
	"1": lathe.Ord1, "-1": lathe.OrdNeg1, "2": lathe.Ord2, "-2": lathe.OrdNeg2,
}

var linalg2Ops = map[string]opFunc{
	"eigh": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return many(linalg2Sym(a, in[0]).Eigh(a.Bool("upper")))
	},
	"eigh_inv": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		w, v := in[0].Eigh(false)
		return many(w, v.MatMul(v.MT()), v.MT().MatMul(in[0]).MatMul(v))
	},
	"eigvalsh": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(linalg2Sym(a, in[0]).EigvalsH(a.Bool("upper")))
	},
	"eigh_vv": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		_, v := linalg2Sym(a, in[0]).Eigh(a.Bool("upper"))
		return one(v.Square())
	},
	"svd": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return many(in[0].SVD(a.Bool("full")))
	},
	"svd_inv": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		u, s, vh := in[0].SVD(a.Bool("full"))
		if err := s.Err(); err != nil {
			return nil, err
		}
		sh := in[0].Shape()
		k := min(sh[len(sh)-1], sh[len(sh)-2])
		rec := u.Narrow(-1, 0, k).Mul(s.Unsqueeze(-2)).MatMul(vh.Narrow(-2, 0, k))
		return many(s, rec, u.MT().MatMul(u), vh.MatMul(vh.MT()))
	},
	"svdvals": unary((*lathe.Tensor).SVDVals),
	"svd_uu": unary(func(x *lathe.Tensor) *lathe.Tensor {
		u, _, _ := x.SVD(false)
		return u.Square()
	}),
	"svd_vv": unary(func(x *lathe.Tensor) *lathe.Tensor {
		_, _, vh := x.SVD(false)
		return vh.Square()
	}),
	"svd_uvh": unary(func(x *lathe.Tensor) *lathe.Tensor {
		u, _, vh := x.SVD(false)
		return u.MatMul(vh)
	}),
	"svd_full_uu": unary(func(x *lathe.Tensor) *lathe.Tensor {
		u, s, _ := x.SVD(true)
		if s.Err() != nil {
			return s
		}
		return u.Narrow(-1, 0, s.Shape()[s.Rank()-1]).Square()
	}),
	"pinv":        unary((*lathe.Tensor).Pinv),
	"matrix_rank": unary((*lathe.Tensor).MatrixRank),
	"cond":        unary((*lathe.Tensor).Cond),
	"matrix_norm": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		o, ok := linalg2Ords[a.Str("ord")]
		if !ok {
			return nil, fmt.Errorf("conformance: matrix_norm ord %q", a.Str("ord"))
		}
		return one(in[0].MatrixNorm(o))
	},
	"matrix_power": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].MatrixPower(a.Int("n")))
	},
	"matrix_exp": unary((*lathe.Tensor).MatrixExp),
	"lstsq":      binary((*lathe.Tensor).Lstsq),
	"multi_dot": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.MultiDot(in))
	},
}
