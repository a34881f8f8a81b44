package conformance

import (
	"github.com/lathe-ml/lathe"
)

// The table entries of vecdot, logdet, the LU factorization and
// cholesky_inverse (linalg3.json and grad_linalg3.json, made by
// build/torchref/linalg3.py): vecdot ("dim"), logdet, lu_factor (LU and
// the Int32 pivots), lu_factor_ex (LU, pivots, info), lu (P, L, U),
// lu_unpack (P, L, U of LU and pivots), lu_solve (LU, pivots, B; "left",
// "adjoint"), cholesky_inverse ("upper"), cholesky_ex (L, info;
// "upper"), inv_ex (inverse, info) and the info alone of either
// (cholesky_ex_info, inv_ex_info: where the factorization fails, torch's
// other result is LAPACK's partial work); for the gradients lu_factor_lu
// (LU alone), lu_l and lu_u (L and U of lu), inv_ex_inverse, cholesky_ex_l (L, of
// (A + Aᵀ)/2 where the case says "sym", as linalg2's).

func init() {
	for k, f := range linalg3Ops {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_linalg3.go and another table")
		}
		ops[k] = f
	}
}

var linalg3Ops = map[string]opFunc{
	"vecdot": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Vecdot(in[1], a.Int("dim")))
	},
	"logdet": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].LogDet())
	},
	"lu_factor": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return many(in[0].LUFactor())
	},
	"lu_factor_ex": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return many(in[0].LUFactorEx())
	},
	"lu_factor_lu": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		lu, piv := in[0].LUFactor()
		piv.Release()
		return one(lu)
	},
	"lu": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return many(in[0].LU())
	},
	"lu_l": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		p, l, u := in[0].LU()
		p.Release()
		u.Release()
		return one(l)
	},
	"lu_u": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		p, l, u := in[0].LU()
		p.Release()
		l.Release()
		return one(u)
	},
	"lu_unpack": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return many(lathe.LUUnpack(in[0], in[1]))
	},
	"lu_solve": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.LUSolve(in[0], in[1], in[2], a.Bool("left"), a.Bool("adjoint")))
	},
	"cholesky_ex": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return many(in[0].CholeskyEx(a.Bool("upper")))
	},
	"cholesky_ex_info": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		l, info := in[0].CholeskyEx(a.Bool("upper"))
		l.Release()
		return one(info)
	},
	"cholesky_ex_l": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		l, info := linalg2Sym(a, in[0]).CholeskyEx(a.Bool("upper"))
		info.Release()
		return one(l)
	},
	"inv_ex": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return many(in[0].InvEx())
	},
	"inv_ex_inverse": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		x, info := in[0].InvEx()
		info.Release()
		return one(x)
	},
	"inv_ex_info": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		x, info := in[0].InvEx()
		x.Release()
		return one(info)
	},
	"cholesky_inverse": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].CholeskyInverse(a.Bool("upper")))
	},
}
