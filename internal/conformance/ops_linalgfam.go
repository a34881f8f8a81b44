package conformance

import "github.com/lathe-ml/lathe"

// The table entries of torch.linalg's core for square matrices
// (linalg.json and grad_linalg.json, made by build/torchref/linalg.py):
// cholesky, solve_triangular, cholesky_solve, solve, inv, det, slogdet
// and qr (qr_q and qr_r for the gradients of Q and R). A cholesky case with "sym": true factors (A + Aᵀ)/2, so that
// a finite difference of its gradient is torch's symmetric one; slogdet's
// gradient cases take logabsdet alone (slogdet_logabsdet).

func init() {
	for k, f := range linalgFamOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_linalgfam.go and another table")
		}
		ops[k] = f
	}
}

var linalgFamOps = map[string]opFunc{
	"cholesky": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		x := in[0]
		if a.Bool("sym") {
			x = x.Add(x.MT()).MulScalar(0.5)
		}
		return one(x.Cholesky(a.Bool("upper")))
	},
	"solve_triangular": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].SolveTriangular(in[1], a.Bool("upper"), a.Bool("left"), a.Bool("unitriangular")))
	},
	"cholesky_solve": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].CholeskySolve(in[1], a.Bool("upper")))
	},
	"solve": binary((*lathe.Tensor).Solve),
	"inv":   unary((*lathe.Tensor).Inv),
	"det":   unary((*lathe.Tensor).Det),
	"slogdet": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		s, l := in[0].SlogDet()
		if err := s.Err(); err != nil {
			return nil, err
		}
		return []*lathe.Tensor{s, l}, l.Err()
	},
	"slogdet_logabsdet": unary(func(x *lathe.Tensor) *lathe.Tensor { _, l := x.SlogDet(); return l }),
	"qr": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		q, r := in[0].QR()
		if err := q.Err(); err != nil {
			return nil, err
		}
		return []*lathe.Tensor{q, r}, r.Err()
	},
	"qr_q": unary(func(x *lathe.Tensor) *lathe.Tensor { q, _ := x.QR(); return q }),
	"qr_r": unary(func(x *lathe.Tensor) *lathe.Tensor { _, r := x.QR(); return r }),
}
