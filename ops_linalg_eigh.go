package lathe

import (
	"github.com/lathe-ml/lathe/dispatch"
)

// The symmetric eigendecomposition (torch.linalg.eigh, eigvalsh) and the
// singular value decomposition (torch.linalg.svd, svdvals), as composites
// on every device, batched, in float32 and float64.
//
// Values: cyclic Jacobi with the round-robin (Brent–Luk) ordering, so that
// each round rotates n/2 disjoint pairs at once, as one rotation matrix J
// built from the pairs' cosines and sines: eigh takes A ← Jᵀ·A·J, V ← V·J
// (two-sided Jacobi), svd W ← W·J, V ← V·J on the columns of the tall
// matrix (one-sided Jacobi, Hestenes: the singular values to high relative
// accuracy, not those of the Gram matrix). A sweep is n-1 rounds (n even;
// an odd n gets a zero row and column, which no rotation touches), and the
// call runs a fixed number of sweeps (jacobiSweeps: 6 in float32, 8 in
// float64, and one more for each halving of n down to 4), each round
// about 40 dispatched ops on the whole batch: n = 6 in float64 is 5 rounds
// × 9 sweeps, about 1800 ops, n = 100 99 × 13, about 51 000. Cyclic Jacobi converges
// quadratically; the call then checks, as a value check (on a GPU at the
// next read-back, as Solve's singular pivots), that what is left off the
// diagonal is below the dtype's rounding, and where it is not (an input
// with Inf or NaN, or an iteration that did not converge) the call is
// ErrValue naming A, never its garbage.
//
// Gradients are not those of the iterations: the decomposition is computed
// on A detached, and the result is then attached to A by terms whose value
// is exactly zero and whose derivatives are torch's analytic ones
// (linalg_eigh_backward, svd_backward): with Δ = sym(A) - sym(A)
// detached (zero), w = w₀ + diag(Vᵀ·Δ·V) and V = V₀ + V·(F∘(Vᵀ·Δ·V)),
// F_ij = 1/(w_j - w_i), with the V and w on the right those of a first
// such step with Δ/2 (the midpoint rule for the path from A detached to
// A, whose derivative is this map): first and second derivatives are exact
// (a Hessian, the gradient of a gradient), third and higher ones are not. Where two
// eigenvalues (singular values) are exactly equal, F_ij is taken as 0 (torch
// gives Inf or NaN): the gradient of a loss that does not depend on the
// choice of basis of that eigenspace is right, the gradient of one that does
// is undefined anyway; a zero singular value's 1/s likewise.

// jacobiSweeps is the number of sweeps for n-by-n matrices of dtype dt:
// quadratic convergence takes a few sweeps once the off-diagonal part is
// small, and about log2(n) to get there.
func jacobiSweeps(n int, dt DType) int {
	s := 6
	if dt == Float64 {
		s = 8
	}
	for k := n; k > 4; k /= 2 {
		s++
	}
	return s
}

// jacobiRound is round r of the round-robin ordering of m (even)
// indices: the permutation [p₀.., q₀..] of its m/2 pairs (p_i, q_i), and
// the permutation's inverse.
func jacobiRound(r, m int) (perm, inv []int64) {
	h := m / 2
	order := make([]int, m)
	for i := range m - 1 {
		order[i+1] = (i+r)%(m-1) + 1
	}
	perm, inv = make([]int64, m), make([]int64, m)
	for i := range h {
		perm[i], perm[h+i] = int64(order[i]), int64(order[m-1-i])
	}
	for i, x := range perm {
		inv[x] = int64(i)
	}
	return perm, inv
}

// jacobiRotation is J ([..., m, m]) of the rotations through (c, s)
// ([..., h]) of the pairs of a round (inv: the inverse of its
// permutation): J_pp = J_qq = c, J_pq = s, J_qp = -s.
func jacobiRotation(c, s, eyeH, inv *Tensor) *Tensor {
	dc, ds := c.Unsqueeze(-1).Mul(eyeH), s.Unsqueeze(-1).Mul(eyeH)
	r := Concat([]*Tensor{Concat([]*Tensor{dc, ds}, -1), Concat([]*Tensor{ds.Neg(), dc}, -1)}, -2)
	return r.IndexSelect(-2, inv).IndexSelect(-1, inv)
}

// jacobiAngle is the (c, s) that zeros b_pq of Jᵀ·B·J for symmetric B with
// entries app, aqq, apq (Golub and Van Loan's sym.schur2), 1 and 0 where
// apq is 0.
func jacobiAngle(op string, app, aqq, apq *Tensor) (c, s *Tensor) {
	zero := apq.EqScalar(0)
	one := apq.scalarLike(op, 1)
	tau := aqq.Sub(app).Div(Where(zero, one, apq.MulScalar(2)))
	sg := Where(tau.GeScalar(0), one, one.Neg())
	at := tau.Abs()
	t := sg.Div(at.Add(at.Hypot(one)))
	t = Where(zero, apq.scalarLike(op, 0), t)
	c = t.Square().AddScalar(1).Rsqrt()
	return c, t.Mul(c)
}

// jacobiIndex uploads round r's index tensors for m indices, joined to
// x's body.
func jacobiIndex(x *Tensor, r, m int) (perm, inv *Tensor) {
	p, q := jacobiRound(r, m)
	return x.joined(FromSlice(x.t.Device, p, m)), x.joined(FromSlice(x.t.Device, q, m))
}

// eighJacobi diagonalizes the symmetric s ([..., n, n], detached, finite
// or checked after) and returns its diagonal after the sweeps, w [..., n],
// the accumulated rotations V [..., n, n] and the off-diagonal part's
// Frobenius norm relative to s's, [..., 1], for the convergence check.
func eighJacobi(op string, s *Tensor, batch []int, n int) (w, v, off *Tensor) {
	m := n + n%2
	a := s
	if m > n {
		a = a.Pad([]int{0, 1, 0, 1}, 0)
	}
	if s.err != nil { // out of memory, say
		return failed(s.err), failed(s.err), failed(s.err)
	}
	h := m / 2
	eyeH := s.joined(Eye(s.t.Device, s.t.DType, h))
	v = s.joined(Eye(s.t.Device, s.t.DType, m)).Expand(withMatrix(batch, m, m)...).Contiguous()
	x := Concat([]*Tensor{a, v}, -2) // the state, [..., 2m, m]
	for range jacobiSweeps(n, s.t.DType) {
		// A sweep in a Compose of its own: what its rounds make goes
		// when it ends, not with the whole call.
		x = Compose(func(in []*Tensor) *Tensor {
			a, v := in[0].Narrow(-2, 0, m), in[0].Narrow(-2, m, m)
			for r := range m - 1 {
				d := a.Diagonal(0, -2, -1)
				pi, iv := jacobiIndex(a, r, m)
				dp := d.IndexSelect(-1, pi) // [a_pp..., a_qq...]
				app, aqq := dp.Narrow(-1, 0, h), dp.Narrow(-1, h, h)
				rows := a.IndexSelect(-2, pi.Narrow(0, 0, h))                                               // [..., h, m]
				apq := rows.Gather(-1, pi.Narrow(0, h, h).Unsqueeze(-1).Expand(withMatrix(batch, h, 1)...)) // [..., h, 1]
				c, sn := jacobiAngle(op, app, aqq, apq.Squeeze(-1))
				j := jacobiRotation(c, sn, eyeH, iv)
				a, v = j.MT().MatMul(a.MatMul(j)), v.MatMul(j)
				if err := firstErr(a, v); err != nil {
					return failed(err)
				}
			}
			return Concat([]*Tensor{a, v}, -2)
		}, x)
		if x.err != nil {
			return failed(x.err), failed(x.err), failed(x.err)
		}
	}
	a, v = x.Narrow(-2, 0, m), x.Narrow(-2, m, m)
	if m > n {
		a, v = a.Narrow(-2, 0, n).Narrow(-1, 0, n), v.Narrow(-2, 0, n).Narrow(-1, 0, n)
	}
	w = a.Diagonal(0, -2, -1)
	offd := a.Sub(diagEmbed(w)).Square().SumKeepDim(-2, -1).Sqrt()
	norm := s.Square().SumKeepDim(-2, -1).Sqrt()
	off = offd.Div(Where(norm.EqScalar(0), norm.scalarLike(op, 1), norm)).Squeeze(-1)
	return w, v.Contiguous(), off
}

// diagEmbed is the matrices [..., n, n] with x ([..., n]) on the diagonal.
func diagEmbed(x *Tensor) *Tensor {
	if x.err != nil {
		return x
	}
	n := x.t.Shape[x.t.Rank()-1]
	return x.Unsqueeze(-1).Mul(x.joined(Eye(x.t.Device, x.t.DType, n)))
}

// jacobiTol is the largest relative off-diagonal norm a converged result
// may keep: a few roundings of the dtype per row.
func jacobiTol(n int, dt DType) float64 {
	eps := 0x1p-23
	if dt == Float64 {
		eps = 0x1p-52
	}
	return 8 * float64(max(n, 1)) * eps
}

var (
	checkEigh = checkedOp("eigh", func(_ int64, where string) string {
		return "has no converged eigendecomposition" + where + ": the Jacobi iterations left it off diagonal (the input has an Inf or NaN in the triangle read, or did not converge)"
	}, "give a finite symmetric matrix")
	checkSVD = checkedOp("svd", func(_ int64, where string) string {
		return "has no converged singular value decomposition" + where + ": the Jacobi iterations left its columns not orthogonal (the input has an Inf or NaN, or did not converge; torch: the algorithm failed to converge)"
	}, "give a finite matrix")
)

// convergence checks x: off ([..., 1]) must be at most tol, not NaN.
func convergence(check *dispatch.Op[infoCheck], x, off *Tensor, tol float64, batch []int) *Tensor {
	if err := firstErr(x, off); err != nil {
		return failed(err)
	}
	return checked(check, x, off, off.LeScalar(tol).LogicalNot(), batch)
}

// safeRecip is 1/x, 0 where x is 0.
func safeRecip(op string, x *Tensor) *Tensor {
	z := x.EqScalar(0)
	return Where(z, x.scalarLike(op, 0), Where(z, x.scalarLike(op, 1), x).Reciprocal())
}

// gapRecip is F with F_ij = 1/(x_j - x_i), 0 where they are equal (the
// diagonal too), of x [..., n].
func gapRecip(op string, x *Tensor) *Tensor {
	return safeRecip(op, x.Unsqueeze(-2).Sub(x.Unsqueeze(-1)))
}

// eighAttach attaches w0 and v0, the decomposition of sym(a) detached, to
// a's graph (the package comment).
func eighAttach(op string, a, w0, v0 *Tensor) (w, v *Tensor) {
	s := a.Add(a.MT()).MulScalar(0.5)
	delta := s.Sub(s.joined(s.Detach()))
	w, v = w0, v0
	for _, d := range []*Tensor{delta.MulScalar(0.5), delta} { // the midpoint rule
		c := v.MT().MatMul(d).MatMul(v)
		f := gapRecip(op, w)
		w, v = w0.Add(c.Diagonal(0, -2, -1)), v0.Add(v.MatMul(f.Mul(c)))
	}
	return w, v
}

// eighSigns makes each column of v have its entry of largest magnitude
// (the first of ties) positive.
func eighSigns(op string, v *Tensor) (*Tensor, *Tensor) {
	at := v.Gather(-2, v.Abs().ArgMaxKeepDim(-2)) // [..., 1, n]
	one := v.scalarLike(op, 1)
	sg := Where(at.GeScalar(0), one, one.Neg())
	return v.Mul(sg), sg
}

var opEigh = composite("eigh", []string{"A"}, func(in []*Tensor, upper bool) *Tensor {
	a := in[0]
	batch, n := a.t.Shape[:a.t.Rank()-2], a.t.Shape[a.t.Rank()-1]
	const op = "eigh"
	ad := a
	if a.RequiresGrad() {
		ad = a.joined(a.Detach())
	}
	var s *Tensor
	if upper {
		s = ad.Triu(0).Add(ad.Triu(1).MT())
	} else {
		s = ad.Tril(0).Add(ad.Tril(-1).MT())
	}
	// Scaled by its largest magnitude: no overflow in the rotations.
	scale := s.Abs().AmaxKeepDim(-2, -1)
	scale = Where(scale.EqScalar(0).LogicalOr(scale.IsFinite().LogicalNot()), scale.scalarLike(op, 1), scale)
	w0, v0, off := eighJacobi(op, s.Div(scale), batch, n)
	w0 = w0.Mul(scale.Squeeze(-1))
	// Ascending, the columns of V with them, each with its signs.
	w0, idx := w0.Sort(-1, false)
	v0 = v0.Gather(-1, idx.Unsqueeze(-2).Expand(withMatrix(batch, n, n)...))
	v0, _ = eighSigns(op, v0)
	w, v := w0, v0
	if a.RequiresGrad() {
		w, v = eighAttach(op, a, w0, v0)
	}
	out := Concat([]*Tensor{w.Unsqueeze(-2), v}, -2) // [..., n+1, n]
	return convergence(checkEigh, out, off, jacobiTol(n, a.t.DType), batch)
})

// Eigh is the eigendecomposition of the symmetric matrices A ([..., n,
// n]), as torch.linalg.eigh(A, UPLO="U" if upper else "L"): eigenvalues
// w ([..., n], ascending) and orthonormal eigenvectors V ([..., n, n],
// columns) with A = V·diag(w)·Vᵀ, reading only A's lower (upper) triangle.
// Eigenvectors are unique only up to sign (and, for a repeated eigenvalue,
// up to a rotation in its eigenspace): lathe makes each column's entry of
// largest magnitude (the first of ties) positive, where LAPACK's signs are
// whatever its algorithm leaves. By cyclic Jacobi (the comment of
// ops_linalg_eigh.go: about 40·(n-1) dispatched ops a sweep, about
// 6 + log2(n/4) sweeps in float32, 8 + log2(n/4) in float64); the gradient is torch's
// analytic one (symmetric), and second derivatives are exact. A with an
// Inf or NaN in the triangle read is ErrValue (torch gives NaN or fails to
// converge), as is a decomposition that did not converge. A non-square or
// 1-D A is ErrShape, a 16-bit or integer one ErrDType (torch has no
// 16-bit eigh).
func (A *Tensor) Eigh(upper bool) (w, V *Tensor) {
	if err := linalgOne("eigh", A); err != nil {
		return failed(err), failed(err)
	}
	n := A.t.Shape[A.t.Rank()-1]
	if A.Numel() == 0 { // torch: empty results
		return A.Diagonal(0, -2, -1).Contiguous(), A.Contiguous()
	}
	out := apply(opEigh, upper, A)
	if out.err != nil {
		return out, out
	}
	w, V = out.Narrow(-2, 0, 1).Squeeze(-2), out.Narrow(-2, 1, n)
	ReleaseWithGraph(V, out)
	return w, V
}

// svdJacobi orthogonalizes the columns of the tall w ([..., m, n], m ≥ n,
// detached, scaled) by one-sided Jacobi and returns the columns' norms s
// ([..., n]), the columns over their norms u ([..., m, n], zero columns
// where a norm is 0), the accumulated rotations v ([..., n, n]) and the
// largest |cosine| between two columns, [..., 1], for the convergence
// check.
func svdJacobi(op string, w *Tensor, batch []int, m, n int) (s, u, v, off *Tensor) {
	if w.err != nil {
		return failed(w.err), failed(w.err), failed(w.err), failed(w.err)
	}
	n2 := n + n%2
	x := w
	if n2 > n {
		x = x.Pad([]int{0, 1}, 0)
	}
	h := n2 / 2
	eyeH := w.joined(Eye(w.t.Device, w.t.DType, h))
	v = w.joined(Eye(w.t.Device, w.t.DType, n2)).Expand(withMatrix(batch, n2, n2)...)
	x = Concat([]*Tensor{x, v}, -2) // [W; V], [..., m+n2, n2]: both turn by the same J
	for range jacobiSweeps(n, w.t.DType) {
		x = Compose(func(in []*Tensor) *Tensor {
			x := in[0]
			for r := range n2 - 1 {
				pi, iv := jacobiIndex(x, r, n2)
				wpq := x.Narrow(-2, 0, m).IndexSelect(-1, pi)
				wp, wq := wpq.Narrow(-1, 0, h), wpq.Narrow(-1, h, h)
				alpha, beta, gamma := wp.Square().Sum(-2), wq.Square().Sum(-2), wp.Mul(wq).Sum(-2)
				c, sn := jacobiAngle(op, alpha, beta, gamma)
				x = x.MatMul(jacobiRotation(c, sn, eyeH, iv))
				if x.err != nil {
					return x
				}
			}
			return x
		}, x)
		if x.err != nil {
			return failed(x.err), failed(x.err), failed(x.err), failed(x.err)
		}
	}
	wt, v := x.Narrow(-2, 0, m).Narrow(-1, 0, n), x.Narrow(-2, m, n).Narrow(-1, 0, n)
	g := wt.MT().MatMul(wt)
	d := g.Diagonal(0, -2, -1)
	s = d.Sqrt()
	// |cosines| between the columns, where both are within about
	// 1/(8n) of the largest norm (squared); between smaller ones, which a
	// rotation of the large ones moves by their rounding, relative to
	// that: the check of a normwise converged iteration.
	floor := d.AmaxKeepDim(-1).Unsqueeze(-1).MulScalar(1 / float64(8*n))
	den := s.Unsqueeze(-1).Mul(s.Unsqueeze(-2)).Maximum(floor)
	cos := g.Sub(diagEmbed(d)).Abs().Div(Where(den.EqScalar(0), den.scalarLike(op, 1), den))
	off = cos.AmaxKeepDim(-2, -1).Squeeze(-1)
	u = wt.Mul(safeRecip(op, s).Unsqueeze(-2))
	return s, u, v.Contiguous(), off
}

// orthonormalCols is u ([..., m, n], orthonormal or zero columns) with its
// zero columns replaced so that all are orthonormal, and, where cols > n,
// cols - n more columns completing it: the Q of its Householder QR with
// the signs of R's diagonal (0 as 1).
func orthonormalCols(op string, u *Tensor, m, n, cols int) *Tensor {
	if cols > n {
		u = u.Pad([]int{0, cols - n}, 0)
	}
	q, r := u.QR()
	d := r.Diagonal(0, -2, -1)
	one := d.scalarLike(op, 1)
	return q.Mul(Where(d.GeScalar(0), one, one.Neg()).Unsqueeze(-2))
}

// svdAttach attaches the reduced SVD (u0, s0, v0) of x detached, tall, to
// x's graph (the package comment: torch's svd_backward's derivatives).
func svdAttach(op string, x, u0, s0, v0 *Tensor) (u, s, v *Tensor) {
	delta := x.Sub(x.joined(x.Detach()))
	u, s, v = u0, s0, v0
	for _, delta := range []*Tensor{delta.MulScalar(0.5), delta} { // the midpoint rule
		p := u.MT().MatMul(delta).MatMul(v) // [..., n, n]
		f := gapRecip(op, s.Square())       // F_ij = 1/(s_j² - s_i²)
		sr, sc := s.Unsqueeze(-2), s.Unsqueeze(-1)
		pt := p.MT()
		du := u.MatMul(f.Mul(p.Mul(sr).Add(sc.Mul(pt)))).Add(delta.MatMul(v).Sub(u.MatMul(p)).Mul(safeRecip(op, s).Unsqueeze(-2)))
		dv := v.MatMul(f.Mul(sc.Mul(p).Add(pt.Mul(sr))))
		u, s, v = u0.Add(du), s0.Add(p.Diagonal(0, -2, -1)), v0.Add(dv)
	}
	return u, s, v
}

// svdParts is how SVD's one result holds U, S and Vh, each flattened.
func svdShapes(m, n int, full bool) (us, vs [2]int) {
	k := min(m, n)
	if full {
		return [2]int{m, m}, [2]int{n, n}
	}
	return [2]int{m, k}, [2]int{k, n}
}

var opSVD = composite("svd", []string{"A"}, func(in []*Tensor, full bool) *Tensor {
	const op = "svd"
	a := in[0]
	batch, m, n := a.t.Shape[:a.t.Rank()-2], a.t.Shape[a.t.Rank()-2], a.t.Shape[a.t.Rank()-1]
	wide := m < n
	x := a
	if wide { // the SVD of Aᵀ, turned back at the end
		x = a.MT()
	}
	mm, k := max(m, n), min(m, n)
	xd := x
	if a.RequiresGrad() {
		xd = x.joined(x.Detach())
	}
	scale := xd.Abs().AmaxKeepDim(-2, -1)
	scale = Where(scale.EqScalar(0).LogicalOr(scale.IsFinite().LogicalNot()), scale.scalarLike(op, 1), scale)
	s0, u0, v0, off := svdJacobi(op, xd.Div(scale), batch, mm, k)
	s0 = s0.Mul(scale.Squeeze(-1))
	// Descending, the columns with them.
	s0, idx := s0.Sort(-1, true)
	u0 = u0.Gather(-1, idx.Unsqueeze(-2).Expand(withMatrix(batch, mm, k)...))
	v0 = v0.Gather(-1, idx.Unsqueeze(-2).Expand(withMatrix(batch, k, k)...))
	cols := k
	if full {
		cols = mm
	}
	uf := orthonormalCols(op, u0, mm, k, cols)
	u0 = uf.Narrow(-1, 0, k)
	// Signs: the entry of largest magnitude of each row of Vh positive.
	var sg *Tensor
	if wide {
		_, sg = eighSigns(op, u0)
	} else {
		_, sg = eighSigns(op, v0)
	}
	u0, v0 = u0.Mul(sg), v0.Mul(sg)
	u, s, v := u0, s0, v0
	if a.RequiresGrad() {
		u, s, v = svdAttach(op, x, u0, s0, v0)
	}
	if full && cols > k {
		u = Concat([]*Tensor{u, uf.Narrow(-1, k, cols-k)}, -1)
	}
	U, Vh := u, v.MT()
	if wide {
		U, Vh = v, u.MT()
	}
	us, vs := svdShapes(m, n, full)
	flat := func(t *Tensor, r, c int) *Tensor {
		return t.Contiguous().Reshape(append(append([]int{}, batch...), r*c)...)
	}
	out := Concat([]*Tensor{flat(U, us[0], us[1]), s, flat(Vh, vs[0], vs[1])}, -1)
	return convergence(checkSVD, out, off, jacobiTol(k, a.t.DType), batch)
})

// SVD is the singular value decomposition A = U·diag(S)·Vh of the
// matrices A ([..., m, n]), as torch.linalg.svd(A, full_matrices): S
// ([..., k], k = min(m, n)) descending, U [..., m, k] and Vh [..., k, n]
// with orthonormal columns and rows (with fullMatrices, U [..., m, m] and
// Vh [..., n, n], completed to orthogonal matrices). Singular vectors are
// unique only up to sign (and within a repeated singular value, or a zero
// one, up to a rotation): lathe makes the entry of largest magnitude of
// each row of Vh positive (the first of ties), flipping U's column with it.
// By one-sided Jacobi on the columns of A (or Aᵀ where m < n), which gives
// small singular values to their own relative accuracy, then a Householder
// QR to complete U: about 40·(k-1) dispatched ops a sweep (the comment of
// ops_linalg_eigh.go), about 6 + log2(k/4) sweeps in float32, 8 + log2(k/4)
// in float64, and 25·k ops for the QR. The gradient is torch's svd_backward,
// second derivatives exact; with fullMatrices the completing columns of U
// (rows of Vh) carry no gradient, as torch's, which takes the gradient of
// the first k alone. An A with Inf or NaN is ErrValue, as torch's "failed
// to converge"; rank below 2 ErrShape, 16-bit or integer ErrDType.
func (A *Tensor) SVD(fullMatrices bool) (U, S, Vh *Tensor) {
	const op = "svd"
	fail := func(err error) (*Tensor, *Tensor, *Tensor) { return failed(err), failed(err), failed(err) }
	if err := linalgDType(op, "A", A); err != nil {
		return fail(err)
	}
	if s := A.t.Shape; len(s) < 2 {
		return fail(errorf(op, ErrShape, "A", "has shape "+dispatch.FormatShape(s)+" but svd takes a matrix or a batch of them (at least 2 dims)",
			"give a tensor of shape [..., m, n]"))
	}
	batch, m, n := A.t.Shape[:A.t.Rank()-2], A.t.Shape[A.t.Rank()-2], A.t.Shape[A.t.Rank()-1]
	us, vs := svdShapes(m, n, fullMatrices)
	if A.Numel() == 0 { // torch: identities where full, empty otherwise
		eye := func(r, c int) *Tensor {
			return Eye(A.t.Device, A.t.DType, max(r, c)).Narrow(0, 0, r).Narrow(1, 0, c).Expand(withMatrix(batch, r, c)...).Contiguous()
		}
		return eye(us[0], us[1]), Zeros(A.t.Device, A.t.DType, append(append([]int{}, batch...), min(m, n))...), eye(vs[0], vs[1])
	}
	out := apply(opSVD, fullMatrices, A)
	if out.err != nil {
		return out, out, out
	}
	k := min(m, n)
	shape := func(r, c int) []int { return withMatrix(batch, r, c) }
	nu, nv := us[0]*us[1], vs[0]*vs[1]
	U = out.Narrow(-1, 0, nu).Reshape(shape(us[0], us[1])...)
	S = out.Narrow(-1, nu, k)
	Vh = out.Narrow(-1, nu+k, nv).Reshape(shape(vs[0], vs[1])...)
	ReleaseWithGraph(U, out)
	return U, S, Vh
}

// EigvalsH is the eigenvalues of the symmetric matrices A, ascending, as
// torch.linalg.eigvalsh(A, UPLO): Eigh's w (the same cost; its gradient,
// V·diag(gw)·Vᵀ, needs no distinct eigenvalues).
func (A *Tensor) EigvalsH(upper bool) *Tensor {
	w, V := A.Eigh(upper)
	if w.err == nil {
		ReleaseWithGraph(w, V)
	}
	return w
}

// SVDVals is the singular values of the matrices A ([..., m, n] gives
// [..., min(m, n)]), descending, as torch.linalg.svdvals: SVD's S (the
// same cost).
func (A *Tensor) SVDVals() *Tensor {
	if err := linalgDType("svdvals", "A", A); err != nil {
		return failed(err)
	}
	if s := A.t.Shape; len(s) < 2 {
		return failed(errorf("svdvals", ErrShape, "A", "has shape "+dispatch.FormatShape(s)+" but svdvals takes a matrix or a batch of them (at least 2 dims)",
			"give a tensor of shape [..., m, n]"))
	}
	U, S, Vh := A.SVD(false)
	if S.err == nil {
		ReleaseWithGraph(S, U, Vh)
	}
	return S
}
