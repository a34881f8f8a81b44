package lathe

import "github.com/lathe-ml/lathe/dispatch"

// The reduced QR decomposition, as torch.linalg.qr: a composite of
// Householder reflections, one column a step, on every device, as the
// solves of ops_linalg_solve.go are (its comment gives the cost and how
// gradients come).

var opQR = composite("qr", []string{"A"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	a := in[0]
	r, c := a.t.Rank(), a.t.Shape
	batch, m, n := c[:r-2], c[r-2], c[r-1]
	k := min(m, n)
	// Householder reflections as LAPACK's geqrf and dlarfg make them:
	// H = I - τ·v·vᵀ with v[0] = 1, which takes column x of the
	// trailing matrix to β·e₁, β = -sign(x₀)·‖x‖ (sign(0) = 1); a column
	// with nothing below x₀ is left as it is (τ = 0).
	rows, vs, taus := make([]*Tensor, k), make([]*Tensor, k), make([]*Tensor, k)
	w := a
	for j := range k {
		x := w.Narrow(-1, 0, 1) // [..., m-j, 1]
		x0 := x.Narrow(-2, 0, 1)
		if x0.err != nil {
			return x0
		}
		tail := x.Narrow(-2, 1, m-j-1)
		tn := tail.Square().SumKeepDim(-2) // ‖x[1:]‖², [..., 1, 1]
		zero := tn.EqScalar(0)
		one := x0.scalarLike("qr", 1)
		nrm := Where(zero, one, x0.Square().Add(tn)).Sqrt() // 1 where unused: no NaN gradient at 0
		s := Where(x0.GeScalar(0), one, one.Neg())
		beta := s.Neg().Mul(nrm)
		d := x0.Sub(beta)
		tau := Where(zero, x0.scalarLike("qr", 0), beta.Sub(x0).Div(beta))
		v := Concat([]*Tensor{x0.fullLike("qr", 1, x0.t.Shape), tail.Div(Where(zero, one, d))}, -2) // [..., m-j, 1]
		// w - τ·v·(vᵀ·w), the first column set to β·e₁ exactly.
		vw := v.Mul(w).SumKeepDim(-2) // [..., 1, n-j]
		hw := w.Sub(tau.Mul(v).Mul(vw))
		rows[j] = hw.Narrow(-2, 0, 1)
		if j > 0 {
			rows[j] = rows[j].Pad([]int{j, 0}, 0)
		}
		vs[j], taus[j] = v, tau
		if j+1 < k {
			w = hw.Narrow(-2, 1, m-j-1).Narrow(-1, 1, n-j-1)
		}
		if err := firstErr(w, hw); err != nil {
			return failed(err)
		}
	}
	// Q = H₀·H₁·…·H_{k-1} applied to the first k columns of I, from the
	// last reflection to the first.
	q := a.joined(Eye(a.t.Device, a.t.DType, m)).Narrow(-1, 0, k).Expand(withMatrix(batch, m, k)...)
	for j := k - 1; j >= 0; j-- {
		v := vs[j]
		if j > 0 {
			v = v.Pad([]int{0, 0, j, 0}, 0)
		}
		q = q.Sub(taus[j].Mul(v).Mul(v.Mul(q).SumKeepDim(-2)))
	}
	// Q and R side by side in one result: [..., m, k] and [..., k, n]
	// padded to max(m, k) rows.
	R := Concat(rows, -2)
	if m > k {
		R = R.Pad([]int{0, 0, 0, m - k}, 0)
	}
	return Concat([]*Tensor{q, R}, -1)
})

// QR is the reduced QR decomposition of the matrices A ([..., m, n]), as
// torch.linalg.qr(A) (mode "reduced"): Q [..., m, k] with orthonormal
// columns and R [..., k, n] upper triangular, k = min(m, n), A = Q·R, by
// Householder reflections with LAPACK's signs (R's diagonal is
// -sign(x₀)·‖x‖ of each column, as geqrf's), so that Q and R are torch's.
// Differentiable to any order through the recorded reflections, where the
// factorization is (A of full rank). About 25·min(m, n) dispatched ops.
// A of rank below 2 is ErrShape, a 16-bit or integer one ErrDType.
func (A *Tensor) QR() (Q, R *Tensor) {
	const op = "qr"
	fail := func(err error) (*Tensor, *Tensor) { return failed(err), failed(err) }
	if err := linalgDType(op, "A", A); err != nil {
		return fail(err)
	}
	if s := A.t.Shape; len(s) < 2 {
		return fail(errorf(op, ErrShape, "A", "has shape "+dispatch.FormatShape(s)+" but qr takes a matrix or a batch of them (at least 2 dims)",
			"give a tensor of shape [..., m, n]"))
	}
	m, n := A.t.Shape[A.t.Rank()-2], A.t.Shape[A.t.Rank()-1]
	k := min(m, n)
	if k == 0 { // torch: Q [..., m, 0], R [..., 0, n]
		return A.Narrow(-1, 0, 0).Contiguous(), A.Narrow(-2, 0, 0).Contiguous()
	}
	qr := apply(opQR, none, A)
	if qr.err != nil {
		return qr, qr
	}
	Q, R = qr.Narrow(-1, 0, k), qr.Narrow(-1, k, n).Narrow(-2, 0, k)
	ReleaseWithGraph(R, qr)
	return Q, R
}
