package lathe

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The LU factorization and what is built on it (torch.linalg.lu_factor,
// lu_factor_ex, lu, lu_solve, torch.lu_unpack), logdet, cholesky_inverse
// and vecdot: composites of the ops of ops_linalg_solve.go, so that they
// run on every device and their gradients, to any order, are those of the
// recorded ops (the derivative of the factorization with its pivots held,
// as torch's formulas).
//
// The factorization is Gaussian elimination with partial pivoting as
// LAPACK's getrf: at step j the row of largest magnitude in column j (the
// first of ties) is swapped into row j, the column below the pivot is
// divided by it (L's multipliers, stored below U's diagonal) and the
// trailing matrix loses their outer product with the pivot's row. A zero
// pivot (a column of zeros) is skipped as getrf skips it: its multipliers
// stay 0. Pivots are torch's: Int32, from 1, row j swapped with row
// pivots[j]. Rectangular m×n matrices take k = min(m, n) steps.

// luEliminate factors a ([..., m, n], batch dims batch) and returns the
// packed LU ([..., m, n]), the pivots in a's dtype ([..., k], from 1) and
// U's diagonal ([..., k]).
func luEliminate(op string, a *Tensor, batch []int, m, n int) (lu, piv, diag *Tensor) {
	fail := func(err error) (*Tensor, *Tensor, *Tensor) { return failed(err), failed(err), failed(err) }
	k := min(m, n)
	w := a
	rowsAt := a.joined(Arange(a.t.Device, Int64, 0, float64(m), 1))
	rows := make([]*Tensor, 0, m)
	pivs, diags := make([]*Tensor, k), make([]*Tensor, k)
	for j := range k {
		rem := m - j
		p := w.Narrow(-1, j, 1).Squeeze(-1).Abs().ArgMaxKeepDim(-1) // [..., 1]
		if rem > 1 {
			ar := rowsAt.Narrow(0, 0, rem)
			idx := Where(ar.EqScalar(0), p, Where(ar.Eq(p), ar.scalarLike(op, 0), ar))
			w = w.Gather(-2, idx.Unsqueeze(-1).Expand(withMatrix(batch, rem, n)...))
		}
		pivs[j] = p.Cast(a.t.DType).AddScalar(float64(j + 1))
		top := w.Narrow(-2, 0, 1)  // [..., 1, n]
		pv := top.Narrow(-1, j, 1) // [..., 1, 1]
		diags[j] = pv.Squeeze(-1)
		rows = append(rows, top)
		if rem > 1 {
			safe := Where(pv.EqScalar(0), pv.scalarLike(op, 1), pv)
			below := w.Narrow(-2, 1, rem-1)
			l := below.Narrow(-1, j, 1).Div(safe) // [..., rem-1, 1]
			parts := make([]*Tensor, 0, 3)
			if j > 0 {
				parts = append(parts, below.Narrow(-1, 0, j))
			}
			parts = append(parts, l)
			if c := n - j - 1; c > 0 {
				parts = append(parts, below.Narrow(-1, j+1, c).Sub(l.Mul(top.Narrow(-1, j+1, c))))
			}
			w = Concat(parts, -1)
			if j == k-1 { // m > n: the rows of L below U
				rows = append(rows, w)
			}
		}
		if err := firstErr(w, top, pivs[j]); err != nil { // out of memory, say: the rest would fail alike
			return fail(err)
		}
	}
	if k == 0 {
		e := a.fullLike(op, 0, append(append(make([]int, 0, len(batch)+1), batch...), 0))
		return a.Contiguous(), e, e
	}
	return Concat(rows, -2), Concat(pivs, -1), Concat(diags, -1)
}

var (
	checkLUFactor = checkedOp("lu_factor", func(k int64, where string) string {
		return "is singular" + where + ": U[" + strconv.FormatInt(k, 10) + "," + strconv.FormatInt(k, 10) +
			"] (from 1) of its LU factorization is zero, and lu_solve would divide by it (as torch's)"
	}, "give an invertible matrix, or call LUFactorEx or LU, which do not fail")
	checkLUPivots      = pivotsCheck("lu_unpack")
	checkLUSolvePivots = pivotsCheck("lu_solve")
)

// pivotsCheck is op's check of its pivots, each in [1, m].
func pivotsCheck(op string) *dispatch.Op[infoCheck] {
	return checkedOpArg(op, "pivots", "pivots_check", func(k int64, where string) string {
		return "has its pivot number " + strconv.FormatInt(k, 10) + where + " out of range: each must be in [1, the number of rows of LU] (as torch's)"
	}, "pass the pivots that LUFactor made for LU")
}

// luPacked is the factorization of a as one tensor: LU flattened and the
// pivots, side by side in the last dim ([..., m·n + k], a's dtype).
func luPacked(op string, a *Tensor, check bool) *Tensor {
	r := a.t.Rank()
	batch, m, n := a.t.Shape[:r-2], a.t.Shape[r-2], a.t.Shape[r-1]
	lu, piv, diag := luEliminate(op, a, batch, m, n)
	flat := append(append(make([]int, 0, len(batch)+1), batch...), m*n)
	out := Concat([]*Tensor{lu.Reshape(flat...), piv}, -1)
	if check {
		out = checked(checkLUFactor, out, diag, diag.EqScalar(0), batch)
	}
	return out
}

var (
	opLUFactor = composite("lu_factor", []string{"A"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		return luPacked("lu_factor", in[0], true)
	})
	opLUFactorEx = compositeVariant("lu_factor", "ex", []string{"A"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		return luPacked("lu_factor_ex", in[0], false)
	})
	// opLUInfo is lu_factor_ex's info from the packed LU: the first zero
	// on U's diagonal (from 1), or 0.
	opLUInfo = compositeVariant("lu_factor", "info", []string{"LU"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		lu := in[0]
		if err := luCheck("lu_factor_ex", "LU", lu); err != nil {
			return failed(err)
		}
		r := lu.t.Rank()
		batch := lu.t.Shape[:r-2]
		if min(lu.t.Shape[r-2], lu.t.Shape[r-1]) == 0 {
			return lu.joined(Zeros(lu.t.Device, Int32, batch...))
		}
		bad := lu.Diagonal(0, -2, -1).EqScalar(0)
		first := bad.Cast(Int64).ArgMax(-1).AddScalar(1)
		return Where(bad.Any(-1), first, first.scalarLike("lu_factor_ex", 0)).Cast(Int32)
	})
)

// luPerm applies the swaps of piv ([..., k], checked) to the rows 0..m-1.
func luPerm(check *dispatch.Op[infoCheck], piv *Tensor, m int) *Tensor {
	r := piv.t.Rank()
	batch, k := piv.t.Shape[:r-1], piv.t.Shape[r-1]
	bm := append(append(make([]int, 0, len(batch)+1), batch...), m)
	ar := piv.joined(Arange(piv.t.Device, Int64, 0, float64(m), 1))
	nb := 1
	for _, s := range batch {
		nb *= s
	}
	if nb > 0 && k > 0 {
		bad := piv.LtScalar(1).LogicalOr(piv.GtScalar(float64(m)))
		piv = checked(check, piv, piv, bad, batch)
	}
	perm := ar.Expand(bm...)
	p0 := piv.Cast(Int64).AddScalar(-1)
	for j := range k {
		pj := p0.Narrow(-1, j, 1) // [..., 1]
		vj := perm.Narrow(-1, j, 1)
		vp := perm.Gather(-1, pj)
		perm = Where(ar.EqScalar(float64(j)), vp, Where(ar.Eq(pj), vj, perm))
		if err := firstErr(perm); err != nil {
			return perm
		}
	}
	return perm.Contiguous()
}

// permMatrix is P ([..., m, m], dtype dt) with P[perm[i], i] = 1, so that
// A = P·L·U.
func permMatrix(perm *Tensor, m int, dt DType) *Tensor {
	if perm.err != nil {
		return perm
	}
	ar := perm.joined(Arange(perm.t.Device, Int64, 0, float64(m), 1))
	return perm.Unsqueeze(-2).Eq(ar.Unsqueeze(-1)).Cast(dt)
}

// luCheck checks the argument A of op: a float32 or float64 matrix or a
// batch of them.
func luCheck(op, arg string, A *Tensor) error {
	if err := linalgDType(op, arg, A); err != nil {
		return err
	}
	if s := A.t.Shape; len(s) < 2 {
		return errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(s)+" but "+op+" takes a matrix or a batch of them (at least 2 dims)",
			"give a tensor of shape [..., m, n]")
	}
	return nil
}

// luSplit splits a packed factorization of A ([..., m·n + k]) into LU
// and the Int32 pivots.
func luSplit(A, packed *Tensor) (LU, pivots *Tensor) {
	if packed.err != nil {
		return packed, packed
	}
	r := A.t.Rank()
	m, n := A.t.Shape[r-2], A.t.Shape[r-1]
	flat := packed.Narrow(-1, 0, m*n)
	LU = flat.Reshape(A.t.Shape...)
	p := packed.Narrow(-1, m*n, min(m, n))
	pivots = p.Cast(Int32)
	p.Release()
	ReleaseWithGraph(LU, packed, flat)
	return LU, pivots
}

// LUFactor is the LU factorization with partial pivoting of the matrices
// A ([..., m, n]), packed as torch.linalg.lu_factor(A) packs it: LU
// ([..., m, n]) holds U on and above its diagonal and L's multipliers
// below it (L's unit diagonal left out), and pivots ([..., k], k = min(m,
// n), Int32, from 1) says that row j was swapped with row pivots[j], as
// LAPACK's getrf. A singular A (a zero on U's diagonal) is ErrValue
// naming A and the place, as torch's (on a GPU at the next read-back); use
// LUFactorEx or LU for a factorization that does not fail. The gradient
// with respect to A flows through LU (pivots have none), that of the
// factorization with the pivots held, as torch's. A 16-bit or integer A
// is ErrDType, a 1-D one ErrShape. About 15·k dispatched ops.
func (A *Tensor) LUFactor() (LU, pivots *Tensor) {
	if err := luCheck("lu_factor", "A", A); err != nil {
		return failed(err), failed(err)
	}
	return luSplit(A, apply(opLUFactor, none, A))
}

// LUFactorEx is LUFactor that does not fail for a singular A, as
// torch.linalg.lu_factor_ex(A): info ([...], Int32) is 0 where the
// factorization has no zero pivot, else the place (from 1) of the first
// zero on U's diagonal, as LAPACK's getrf info.
func (A *Tensor) LUFactorEx() (LU, pivots, info *Tensor) {
	if err := luCheck("lu_factor_ex", "A", A); err != nil {
		return failed(err), failed(err), failed(err)
	}
	LU, pivots = luSplit(A, apply(opLUFactorEx, none, A))
	if LU.err != nil {
		return LU, pivots, LU
	}
	d := LU.Detach()
	info = apply(opLUInfo, none, d)
	d.Release()
	return LU, pivots, info
}

// LUUnpack is P, L and U with A = P·L·U from the packed factorization of
// LUFactor, as torch.lu_unpack(LU, pivots): P [..., m, m] a permutation
// matrix, L [..., m, k] lower triangular with a unit diagonal, U [..., k,
// n] upper triangular. pivots must be Int32 of shape [..., k] with LU's
// batch dims (ErrDType, ErrShape) and each in [1, m] (ErrValue naming
// pivots, on a GPU at the next read-back), as torch's. (torch's
// unpack_data and unpack_pivots flags, which leave some results empty, are
// not taken: slice what is needed.)
func LUUnpack(LU, pivots *Tensor) (P, L, U *Tensor) {
	const op = "lu_unpack"
	fail := func(err error) (*Tensor, *Tensor, *Tensor) { return failed(err), failed(err), failed(err) }
	if err := luCheck(op, "LU", LU); err != nil {
		return fail(err)
	}
	if err := luPivots(op, LU, pivots, LU.t.Shape[:LU.t.Rank()-2]); err != nil {
		return fail(err)
	}
	r := LU.t.Rank()
	m, n := LU.t.Shape[r-2], LU.t.Shape[r-1]
	out := apply(opLUUnpack, m, LU, pivots)
	if out.err != nil {
		return out, out, out
	}
	k := min(m, n)
	P, L = out.Narrow(-1, 0, m), out.Narrow(-1, m, k)
	rows := out.Narrow(-1, m+k, n)
	U = rows.Narrow(-2, 0, k)
	ReleaseWithGraph(U, out, rows)
	return P, L, U
}

// luPivots checks op's pivots for LU: Int32 of shape batch + [k].
func luPivots(op string, LU, pivots *Tensor, batch []int) error {
	if err := pivots.CheckArg(op, "pivots"); err != nil {
		return err
	}
	if pivots.t.Device != LU.t.Device {
		return errorf(op, ErrDevice, "pivots", "is on "+pivots.t.Device.String()+" but LU is on "+LU.t.Device.String(),
			"move it with .To("+LU.t.Device.String()+")")
	}
	if dt := pivots.t.DType; dt != Int32 {
		return errorf(op, ErrDType, "pivots", "is "+dt.String()+" but "+op+" takes the Int32 pivots of LUFactor (as torch's)",
			"cast it with .Cast(lathe.Int32)")
	}
	r := LU.t.Rank()
	k := min(LU.t.Shape[r-2], LU.t.Shape[r-1])
	want := append(append(make([]int, 0, len(batch)+1), batch...), k)
	if !slices.Equal(pivots.t.Shape, want) {
		return errorf(op, ErrShape, "pivots", "has shape "+dispatch.FormatShape(pivots.t.Shape)+" but LU of shape "+
			dispatch.FormatShape(LU.t.Shape)+" takes pivots of shape "+dispatch.FormatShape(want)+" (as torch's)",
			"pass the pivots that LUFactor made for LU")
	}
	return nil
}

var opLUUnpack = composite("lu_unpack", []string{"LU", "pivots"}, func(in []*Tensor, m int) *Tensor {
	lu, piv := in[0], in[1]
	r := lu.t.Rank()
	n := lu.t.Shape[r-1]
	k := min(m, n)
	dt := lu.t.DType
	P := permMatrix(luPerm(checkLUPivots, piv, m), m, dt)
	var L, U *Tensor
	if k == 0 {
		L, U = lu.Narrow(-1, 0, 0), lu.Narrow(-2, 0, 0)
	} else {
		L = lu.Narrow(-1, 0, k).Tril(-1).Add(lu.joined(Eye(lu.t.Device, dt, m)).Narrow(-1, 0, k))
		U = lu.Narrow(-2, 0, k).Triu(0)
	}
	if m > k {
		U = U.Pad([]int{0, 0, 0, m - k}, 0)
	}
	return Concat([]*Tensor{P.Expand(withMatrix(lu.t.Shape[:r-2], m, m)...), L, U}, -1)
})

// LU is the LU factorization with partial pivoting of the matrices A
// ([..., m, n]) as torch.linalg.lu(A): P [..., m, m], L [..., m, k] (unit
// lower triangular) and U [..., k, n] (upper triangular), k = min(m, n),
// A = P·L·U, with LAPACK's pivots (LUFactor). A singular A is factored
// too (no error, as torch's). Differentiable through L and U to any order
// where the factorization is (the pivots held).
func (A *Tensor) LU() (P, L, U *Tensor) {
	fail := func(err error) (*Tensor, *Tensor, *Tensor) { return failed(err), failed(err), failed(err) }
	if err := luCheck("lu", "A", A); err != nil {
		return fail(err)
	}
	LU, piv := luSplit(A, apply(opLUFactorEx, none, A))
	if LU.err != nil {
		return LU, LU, LU
	}
	P, L, U = LUUnpack(LU, piv)
	ReleaseWithGraph(U, LU, piv)
	return P, L, U
}

// luSolveAttrs are LUSolve's options.
type luSolveAttrs struct{ left, adjoint bool }

var opLUSolve = composite("lu_solve", []string{"LU", "pivots", "B"}, func(in []*Tensor, o luSolveAttrs) *Tensor {
	lu, piv, b := in[0].Contiguous(), in[1], in[2]
	if lu.err != nil {
		return lu
	}
	n := lu.t.Shape[lu.t.Rank()-1]
	if !o.left { // X·A = B is Aᵀ·Xᵀ = Bᵀ
		b = b.MT()
	}
	adj := o.adjoint != !o.left
	batch, _ := ops.BroadcastShapes(lu.t.Shape[:lu.t.Rank()-2], b.t.Shape[:b.t.Rank()-2])
	P := permMatrix(luPerm(checkLUSolvePivots, piv, n), n, lu.t.DType)
	var x *Tensor
	if !adj { // A = P·L·U: X = U⁻¹·L⁻¹·Pᵀ·B
		y := triSolve(lu, P.MT().MatMul(b), batch, false, true)
		x = triSolve(lu, y, batch, true, false)
	} else { // Aᵀ = Uᵀ·Lᵀ·Pᵀ: X = P·L⁻ᵀ·U⁻ᵀ·B
		y := triSolve(lu.MT(), b, batch, false, false)
		x = P.MatMul(triSolve(lu.MT(), y, batch, true, true))
	}
	if !o.left {
		x = x.MT().Contiguous()
	}
	return x
})

// LUSolve is the solution X of A·X = B from A's LU factorization (LU,
// pivots from LUFactor), as torch.linalg.lu_solve(LU, pivots, B,
// left=left, adjoint=adjoint): with adjoint, Aᵀ·X = B; with left false,
// X·A = B (X·Aᵀ = B with adjoint). LU is [..., n, n], pivots [..., n]
// (Int32, LU's batch dims, each in [1, n]), B [..., n, k] ([..., k, n]
// for a right solve); the batch dims of LU and B broadcast. Only LU's
// triangles are read (L's diagonal taken as ones), and the gradient with
// respect to LU lies there. A zero on U's diagonal gives Inf and NaN, as
// torch's.
func LUSolve(LU, pivots, B *Tensor, left, adjoint bool) *Tensor {
	const op = "lu_solve"
	colsDim := -2
	if !left {
		colsDim = -1
	}
	if _, err := linalgPair(op, "LU", "B", LU, B, colsDim); err != nil {
		return failed(err)
	}
	if err := luPivots(op, LU, pivots, LU.t.Shape[:LU.t.Rank()-2]); err != nil {
		return failed(err)
	}
	return apply(opLUSolve, luSolveAttrs{left: left, adjoint: adjoint}, LU, pivots, B)
}

var (
	opLogDet = composite("logdet", []string{"A"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		s := apply(opSlogDet, none, in[0])
		sign, lad := s.Narrow(0, 0, 1).Squeeze(0), s.Narrow(0, 1, 1).Squeeze(0)
		return Where(sign.LtScalar(0), lad.scalarLike("logdet", math.NaN()), lad)
	})
	opCholeskyInverse = composite("cholesky_inverse", []string{"L"}, func(in []*Tensor, upper bool) *Tensor {
		l := in[0]
		n := l.t.Shape[l.t.Rank()-1]
		eye := l.joined(Eye(l.t.Device, l.t.DType, n))
		return apply(opCholeskySolve, upper, eye, l)
	})
)

// LogDet is the natural log of the determinant of the square matrices A
// ([..., n, n] gives [...]), as torch.logdet: NaN where the determinant is
// negative, -Inf where it is 0 (a singular A), 0 for n = 0. Computed from
// SlogDet; the gradient is A⁻ᵀ, 0 where the result is NaN (as torch's). A
// non-square or 1-D A is ErrShape, a 16-bit or integer one ErrDType.
func (A *Tensor) LogDet() *Tensor {
	if err := linalgOne("logdet", A); err != nil {
		return failed(err)
	}
	return apply(opLogDet, none, A)
}

// CholeskyInverse is the inverse of A = L·Lᵀ (with upper, A = Lᵀ·L) from
// its Cholesky factor L ([..., n, n]), as torch.cholesky_inverse(L,
// upper): CholeskySolve of the identity, reading only L's lower (upper)
// triangle, with the gradient in that triangle (torch's spreads onto the
// other one too; see CholeskySolve). A zero on L's diagonal gives Inf and
// NaN, as torch's. A non-square or 1-D L is ErrShape, a 16-bit or integer
// one ErrDType.
func (L *Tensor) CholeskyInverse(upper bool) *Tensor {
	if err := linalgDType("cholesky_inverse", "L", L); err != nil {
		return failed(err)
	}
	if err := squareBatch("cholesky_inverse", "L", L); err != nil {
		return failed(err)
	}
	return apply(opCholeskyInverse, upper, L)
}

// vecdotAttrs are Vecdot's dim.
type vecdotAttrs struct{ dim int }

var opVecdot = composite("vecdot", []string{"x", "y"}, func(in []*Tensor, a vecdotAttrs) *Tensor {
	return inFloat32(in, func(in []*Tensor) *Tensor {
		if a.dim < 0 { // 0-d x and y: their product
			return in[0].Mul(in[1]).Sum()
		}
		return in[0].Mul(in[1]).Sum(a.dim)
	})
})

// Vecdot is the dot product of x and y along dim (negative counts from
// the end), as torch.linalg.vecdot(x, y, dim=dim) for real tensors: Σ x·y
// over dim of their broadcast shape, which loses that dim. x and y must
// have one float dtype (ErrDType otherwise, as torch's); float16 and
// bfloat16 are computed in float32 and rounded once (torch's cpu refuses
// them, its cuda computes them). 0-d x and y give their product, as
// torch's. Shapes that do not broadcast are ErrShape, a dim out of the
// broadcast rank ErrIndex (also for vectors, where torch 1.13 ignores
// dim).
func (x *Tensor) Vecdot(y *Tensor, dim int) *Tensor {
	const op = "vecdot"
	if err := x.CheckArg(op, "x"); err != nil {
		return failed(err)
	}
	if err := y.CheckArg(op, "y"); err != nil {
		return failed(err)
	}
	if !x.t.DType.IsFloat() {
		return failed(errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" but vecdot takes a float tensor (as torch's)",
			"cast it with .Cast(lathe.Float32)"))
	}
	if y.t.DType != x.t.DType {
		return failed(errorf(op, ErrDType, "y", "is "+y.t.DType.String()+" but x is "+x.t.DType.String()+" (vecdot does not promote, as torch's)",
			"cast it with .Cast("+x.t.DType.GoString()+")"))
	}
	s, ok := ops.BroadcastShapes(x.t.Shape, y.t.Shape)
	if !ok {
		e := broadcastError(x, y, "y", "x")
		e.Op = op
		return failed(e)
	}
	d, e := wrapDim(dim, len(s)) // 0-d: -1
	if e != nil {
		e.Op = op
		return failed(e)
	}
	if x.t.Device != y.t.Device {
		return failed(errorf(op, ErrDevice, "y", "is on "+y.t.Device.String()+" but x is on "+x.t.Device.String(), "move it with .To("+x.t.Device.String()+")"))
	}
	return apply(opVecdot, vecdotAttrs{dim: d}, x, y)
}

var (
	// opCholeskyEx is the factor of A without the check, with the
	// pivots (the corners before their square roots) in a last row:
	// [..., n+1, n].
	opCholeskyEx = compositeVariant("cholesky", "ex", []string{"A"}, func(in []*Tensor, upper bool) *Tensor {
		a := in[0]
		n := a.t.Shape[a.t.Rank()-1]
		if n == 0 {
			return a.Contiguous()
		}
		l, d := choleskyLower(choleskyInput(a), n)
		if upper {
			l = l.MT()
		}
		return Concat([]*Tensor{l, d.Unsqueeze(-2)}, -2)
	})
	// opFirstBad is an info code from a mask ([..., n], Bool): the place
	// (from 1) of the first true one, or 0 ([...], Int32).
	opFirstBad = composite("first_bad", []string{"mask"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		bad := in[0]
		if err := bad.CheckArg("first_bad", "mask"); err != nil {
			return failed(err)
		}
		if bad.t.DType != Bool || bad.t.Rank() < 1 {
			return failed(errorf("first_bad", ErrDType, "mask", "is "+bad.t.DType.String()+" of rank "+strconv.Itoa(bad.t.Rank())+
				" but the op takes a Bool mask of at least 1 dim", "pass a comparison's result"))
		}
		r := bad.t.Rank()
		if bad.t.Shape[r-1] == 0 {
			return bad.joined(Zeros(bad.t.Device, Int32, bad.t.Shape[:r-1]...))
		}
		first := bad.Cast(Int64).ArgMax(-1).AddScalar(1)
		return Where(bad.Any(-1), first, first.scalarLike("first_bad", 0)).Cast(Int32)
	})
)

// unpackInfo splits packed, an op's result of n rows or columns along dim
// (-2 or -1) and one more holding each matrix's pivots, into the result
// (on packed's graph) and info, the place of the first pivot that bad
// marks (infoOf).
func unpackInfo(packed *Tensor, dim, n int, bad func(pivots *Tensor) *Tensor) (value, info *Tensor) {
	value = packed.Narrow(dim, 0, n)
	p := packed.Narrow(dim, n, 1)
	pd := p.Detach()
	p.Release()
	piv := pd.Squeeze(dim)
	pd.Release()
	info = infoOf(bad(piv))
	piv.Release()
	ReleaseWithGraph(value, packed)
	return value, info
}

// infoOf is the info code of mask (opFirstBad), mask released.
func infoOf(mask *Tensor) *Tensor {
	info := apply(opFirstBad, none, mask)
	mask.Release()
	return info
}

// CholeskyEx is Cholesky that does not fail, as
// torch.linalg.cholesky_ex(A, upper=upper): info ([...], Int32) is 0
// where A is positive-definite, else the order of the first leading minor
// that is not (a pivot of 0 or less; NaN passes, as torch's). Where info
// is not 0, L's values are not to be used (torch's hold LAPACK's partial
// factorization, lathe's NaN from the failed pivot on).
func (A *Tensor) CholeskyEx(upper bool) (L, info *Tensor) {
	const op = "cholesky_ex"
	if err := linalgOne(op, A); err != nil {
		return failed(err), failed(err)
	}
	r := A.t.Rank()
	n := A.t.Shape[r-1]
	if n == 0 {
		L = apply(opCholeskyEx, upper, A)
		return L, Zeros(A.t.Device, Int32, A.t.Shape[:r-2]...)
	}
	packed := apply(opCholeskyEx, upper, A)
	if packed.err != nil {
		return packed, packed
	}
	return unpackInfo(packed, -2, n, func(d *Tensor) *Tensor { return d.LeScalar(0) })
}

// InvEx is Inv that does not fail, as torch.linalg.inv_ex(A): info
// ([...], Int32) is 0 where A is invertible, else the place (from 1) of
// the first zero pivot of its LU factorization (LUFactorEx's info; torch's
// inv_ex names another place at times, as its inv's error does). Where
// info is not 0, the inverse holds Inf and NaN and is not to be used.
func (A *Tensor) InvEx() (inverse, info *Tensor) {
	const op = "inv_ex"
	if err := linalgOne(op, A); err != nil {
		return failed(err), failed(err)
	}
	n := A.t.Shape[A.t.Rank()-1]
	if n == 0 {
		return A.Contiguous(), Zeros(A.t.Device, Int32, A.t.Shape[:A.t.Rank()-2]...)
	}
	packed := apply(opInvEx, none, A)
	if packed.err != nil {
		return packed, packed
	}
	return unpackInfo(packed, -1, n, func(piv *Tensor) *Tensor { return piv.EqScalar(0) })
}

// opInvEx is the inverse without the check, with the LU pivots (U's
// diagonal) in a last column: [..., n, n+1].
var opInvEx = compositeVariant("inv", "ex", []string{"A"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	a := in[0]
	r := a.t.Rank()
	batch, n := a.t.Shape[:r-2], a.t.Shape[r-1]
	eye := a.joined(Eye(a.t.Device, a.t.DType, n))
	w := Concat([]*Tensor{a, eye.Expand(withMatrix(batch, n, n)...)}, -1)
	piv, u, rhs, _ := eliminate("inv_ex", w, batch, n, false)
	return Concat([]*Tensor{triSolve(u, rhs, batch, true, false), piv.Unsqueeze(-1)}, -1)
})
