package lathe

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The core of torch.linalg for square matrices, batched over leading dims:
// Cholesky, SolveTriangular, CholeskySolve, Solve, Inv, Det and SlogDet.
//
// lathe has no LAPACK on every device, so each is a composite of ops that
// every backend has (narrow, elementwise rank-one updates, argmax,
// gather, concat), looping over the matrix size a column or a row at a time: they
// run on every device in float32 and float64 (float64 where the device has
// it), and their gradients, and the gradients of those, come from the
// recorded ops. The cost: an n×n factorization is about 15·n dispatched
// ops (a triangular solve 9·n), each on the batch at once, and the graph a
// differentiable call records holds O(n) intermediates of the matrix's
// size, O(n³) elements in all: fine for the small systems of a training
// loop (n up to a few hundred), not a replacement for LAPACK on n in the
// thousands.
//
// Solve, Inv and Det factor A = P·L·U by Gaussian elimination with
// partial pivoting (the largest magnitude in the column, the first of
// ties, as LAPACK's getrf), applied to [A | B] at once so that L is never
// formed, then solve U·X = (the eliminated B) by back substitution. A zero
// pivot is skipped as getrf skips it (the column below it is zero), so
// that Det of a singular matrix is 0, not NaN.
//
// Failures as torch's, as error values: Solve and Inv of a matrix with a
// zero pivot (singular) and Cholesky of a matrix that is not positive
// definite. The pivots live on the device; rather than read them back
// (a sync in the middle of a step), the call declares a value check on
// them (dispatch's ValueCheck), as an index out of range is checked: on
// the cpu the call fails at once, on a GPU the error comes back at the
// latest from the next read-back or Synchronize, with the op and the call
// site, and the result's values are not to be used.

// linalgDType refuses, for op's argument arg, what torch's linalg refuses:
// a failed tensor, integers and bools, and the 16-bit floats (torch:
// "Low precision dtypes not supported").
func linalgDType(op, arg string, x *Tensor) error {
	if err := x.CheckArg(op, arg); err != nil {
		return err
	}
	switch dt := x.t.DType; {
	case dt == Float32 || dt == Float64:
		return nil
	case dt == Float16 || dt == BFloat16:
		return errorf(op, ErrDType, arg, "is "+dt.String()+", and "+op+" does not take 16-bit floats (torch: low precision dtypes not supported)",
			"cast it with .Cast(lathe.Float32), and the result back")
	default:
		return errorf(op, ErrDType, arg, "is "+dt.String()+" but "+op+" takes a float32 or float64 tensor (as torch's)",
			"cast it with .Cast(lathe.Float32) first")
	}
}

// squareBatch refuses an argument that is not a batch of square matrices.
func squareBatch(op, arg string, x *Tensor) error {
	s := x.t.Shape
	if len(s) < 2 {
		return errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(s)+" but "+op+" takes a matrix or a batch of them (at least 2 dims)",
			"give a tensor of shape [..., n, n]")
	}
	if r, c := s[len(s)-2], s[len(s)-1]; r != c {
		return errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(s)+": "+strconv.Itoa(r)+" by "+strconv.Itoa(c)+
			" matrices, but "+op+" takes square ones", "give a tensor of shape [..., n, n]")
	}
	return nil
}

// linalgPair checks A and B of op (names a and b) for one dtype and a
// batch shape they broadcast to, which it returns; colsDim is the dim of
// B (-2, or -1 for a right-hand solve) that must have A's size n.
func linalgPair(op, a, b string, A, B *Tensor, colsDim int) ([]int, error) {
	if err := linalgDType(op, a, A); err != nil {
		return nil, err
	}
	if err := linalgDType(op, b, B); err != nil {
		return nil, err
	}
	if err := squareBatch(op, a, A); err != nil {
		return nil, err
	}
	if A.t.DType != B.t.DType {
		return nil, errorf(op, ErrDType, b, "is "+B.t.DType.String()+" but "+a+" is "+A.t.DType.String()+" ("+op+" does not promote, as torch's)",
			"cast it with .Cast("+A.t.DType.GoString()+")")
	}
	as, bs := A.t.Shape, B.t.Shape
	if len(bs) < 2 {
		return nil, errorf(op, ErrShape, b, "has shape "+dispatch.FormatShape(bs)+" but "+op+" takes a matrix or a batch of them (at least 2 dims)",
			"give a tensor of shape [..., n, k], e.g. a vector with Unsqueeze(-1)")
	}
	n := as[len(as)-1]
	if bs[len(bs)+colsDim] != n {
		e := errorf(op, ErrShape, b, "has shape "+dispatch.FormatShape(bs)+", which does not fit "+a+" of shape "+
			dispatch.FormatShape(as)+" (dim "+strconv.Itoa(colsDim)+" must be "+strconv.Itoa(n)+")",
			"give "+b+" of shape [..., "+strconv.Itoa(n)+", k]")
		if colsDim == -1 {
			e.Fix = "give " + b + " of shape [..., k, " + strconv.Itoa(n) + "]"
		}
		return nil, e
	}
	batch, ok := ops.BroadcastShapes(as[:len(as)-2], bs[:len(bs)-2])
	if !ok {
		return nil, errorf(op, ErrShape, b, "has batch dims "+dispatch.FormatShape(bs[:len(bs)-2])+", which do not broadcast with "+a+"'s "+
			dispatch.FormatShape(as[:len(as)-2]), "make each batch dim equal or 1")
	}
	return batch, nil
}

// withMatrix is batch with a matrix's two dims after it.
func withMatrix(batch []int, r, c int) []int {
	return append(append(make([]int, 0, len(batch)+2), batch...), r, c)
}

// infoCheck are the attributes of a factorization's check: the matrix
// size and whether A has batch dims, for the message.
type infoCheck struct {
	n       int
	batched bool
}

// checkedOp registers op's check of a factorization: the composite
// returns its first argument, the result, as it is, after a value check
// of its second, an Int64 code per matrix that is 0 where the
// factorization went through and b·n+k (b the matrix's row-major place in
// the batch, k its failed pivot, from 1) where it did not. The first
// failure, in batch order, is the error, fail(k, where) with where
// " in batch element b" where A has batch dims (torch's "(Batch element
// b)").
func checkedOp(op string, fail func(k int64, where string) string, fix string) *dispatch.Op[infoCheck] {
	return checkedOpArg(op, "A", "check", fail, fix)
}

// checkedOpArg is checkedOp for a check of op's argument arg, registered
// as op's variant.
func checkedOpArg(op, arg, variant string, fail func(k int64, where string) string, fix string) *dispatch.Op[infoCheck] {
	return dispatch.Register(&dispatch.Op[infoCheck]{
		Schema: dispatch.Schema{Name: op, Variant: variant, Args: []string{"result", "info"}},
		Compose: composedBy(func(in []*Tensor, _ infoCheck) *Tensor {
			if dt := in[1].t.DType; dt != Int64 {
				return failed(errorf(op, ErrDType, "info", "is "+dt.String()+" but the check takes Int64 codes", "pass the codes the factorization made"))
			}
			return in[0]
		}),
		Checks: func(in []*dispatch.Tensor, a infoCheck) []dispatch.ValueCheck {
			if in[1].DType != Int64 || a.n < 1 {
				return nil // the body refuses it
			}
			return []dispatch.ValueCheck{{Arg: 1, Fail: func(v int64) *dispatch.Error {
				b, k := (v-1)/int64(a.n), (v-1)%int64(a.n)+1
				where := ""
				if a.batched {
					where = " in batch element " + strconv.FormatInt(b, 10)
				}
				return &dispatch.Error{Kind: dispatch.ErrValue, Arg: arg, Detail: fail(k, where), Fix: fix}
			}}}
		},
	})
}

var (
	checkSolve = checkedOp("solve", func(k int64, where string) string {
		return "is singular" + where + ": pivot " + strconv.FormatInt(k, 10) +
			" of its LU factorization is zero, so the solver failed (as torch's: the input matrix is singular)"
	}, "give an invertible matrix; for a regularized solution add a small multiple of the identity")
	checkInv = checkedOp("inv", func(k int64, where string) string {
		return "is singular" + where + ": the diagonal element " + strconv.FormatInt(k, 10) +
			" is zero, the inversion could not be completed (as torch's)"
	}, "give an invertible matrix; for a regularized inverse add a small multiple of the identity")
	checkCholesky = checkedOp("cholesky", func(k int64, where string) string {
		return "is not positive-definite" + where + ": the leading minor of order " + strconv.FormatInt(k, 10) +
			" is not positive-definite, so the factorization could not be completed (as torch's)"
	}, "give a symmetric positive-definite matrix, e.g. add a small multiple of the identity")
)

// checked is x after op's check of the pivots or diagonal d ([..., n]),
// that none is bad (bad gives the mask of the bad ones).
func checked(op *dispatch.Op[infoCheck], x, d *Tensor, bad *Tensor, batch []int) *Tensor {
	if err := firstErr(x, d, bad); err != nil {
		return failed(err)
	}
	n := d.t.Shape[d.t.Rank()-1]
	nb := 1
	for _, s := range batch {
		nb *= s
	}
	if nb == 0 || n == 0 {
		return x
	}
	first := bad.Cast(Int64).ArgMax(-1) // the first bad one (ArgMax's first of ties)
	place := d.joined(Arange(d.t.Device, Int64, 0, float64(nb), 1)).Reshape(batch...)
	code := Where(bad.Any(-1), place.MulScalar(float64(n)).Add(first).AddScalar(1), first.scalarLike(op.Name, 0))
	return apply(op, infoCheck{n: n, batched: len(batch) > 0}, x, code)
}

// triSolve solves A·X = B for X, reading only A's lower triangle (its
// upper one where upper), and taking its diagonal as ones where unit: a
// [..., n, n] and b [..., n, k] with batch dims that broadcast to batch.
// One row of X a step, by substitution in the order of the triangle, each
// subtracted from the rows still to solve at once (a rank-one update).
func triSolve(a, b *Tensor, batch []int, upper, unit bool) *Tensor {
	if err := firstErr(a, b); err != nil {
		return failed(err)
	}
	n, k := a.t.Shape[a.t.Rank()-1], b.t.Shape[b.t.Rank()-1]
	b = b.Expand(withMatrix(batch, n, k)...)
	if n == 0 {
		return b.Contiguous()
	}
	xs := make([]*Tensor, n)
	r := b // the rows of B still to solve, less what the solved rows took
	for s := range n {
		m := n - s
		var i int
		var ri, rest, col *Tensor
		if upper { // rows 0..i left: row i is the last
			i = n - 1 - s
			ri, rest = r.Narrow(-2, m-1, 1), r.Narrow(-2, 0, m-1)
			col = a.Narrow(-1, i, 1).Narrow(-2, 0, i)
		} else { // rows i..n-1 left: row i is the first
			i = s
			ri, rest = r.Narrow(-2, 0, 1), r.Narrow(-2, 1, m-1)
			col = a.Narrow(-1, i, 1).Narrow(-2, i+1, m-1)
		}
		x := ri
		if !unit {
			x = ri.Div(a.Narrow(-2, i, 1).Narrow(-1, i, 1))
		}
		xs[i] = x
		if m > 1 {
			r = rest.Sub(col.Mul(x))
		}
		if err := firstErr(r, x); err != nil { // out of memory, say: the rest would fail alike
			return failed(err)
		}
	}
	return Concat(xs, -2)
}

// eliminate runs Gaussian elimination with partial pivoting on w = [A |
// B] ([..., n, n+k]) and returns the pivots ([..., n], U's diagonal), U
// ([..., n, n]), B as the row operations left it ([..., n, k], nil for k
// 0) and, where sign, the sign of the row permutation ([...], A's dtype).
func eliminate(op string, w *Tensor, batch []int, n int, sign bool) (piv, u, rhs, perm *Tensor) {
	if w.err != nil {
		return failed(w.err), failed(w.err), failed(w.err), failed(w.err)
	}
	k := w.t.Shape[w.t.Rank()-1] - n
	pivots, rows, rhsRows := make([]*Tensor, n), make([]*Tensor, n), make([]*Tensor, 0, n)
	if sign {
		perm = w.fullLike(op, 1, batch)
	}
	rowsAt := w.joined(Arange(w.t.Device, Int64, 0, float64(n), 1)) // one upload, narrowed at each step
	for j := range n {
		m, cols := n-j, n+k-j
		if m > 1 {
			// Swap the row of the largest magnitude in the column (the
			// first of ties, the first NaN) into row 0, by a gather.
			p := w.Narrow(-1, 0, 1).Squeeze(-1).Abs().ArgMaxKeepDim(-1) // [..., 1]
			ar := rowsAt.Narrow(0, 0, m)
			idx := Where(ar.EqScalar(0), p, Where(ar.Eq(p), ar.scalarLike(op, 0), ar))
			w = w.Gather(-2, idx.Unsqueeze(-1).Expand(withMatrix(batch, m, cols)...))
			if sign {
				perm = Where(p.Squeeze(-1).NeScalar(0), perm.Neg(), perm)
			}
		}
		top := w.Narrow(-2, 0, 1)      // [..., 1, cols]
		pv := top.Narrow(-1, 0, 1)     // [..., 1, 1]
		pivots[j] = pv.Squeeze(-1)     // [..., 1]
		rows[j] = top.Narrow(-1, 0, m) // U's row j from its diagonal on
		if j > 0 {
			rows[j] = rows[j].Pad([]int{j, 0}, 0)
		}
		if k > 0 {
			rhsRows = append(rhsRows, top.Narrow(-1, m, k))
		}
		if m > 1 {
			// A zero pivot has zeros below it: skipped (divided by 1), as
			// getrf skips it.
			safe := Where(pv.EqScalar(0), pv.scalarLike(op, 1), pv)
			l := w.Narrow(-2, 1, m-1).Narrow(-1, 0, 1).Div(safe) // [..., m-1, 1]
			w = w.Narrow(-2, 1, m-1).Narrow(-1, 1, cols-1).Sub(l.Mul(top.Narrow(-1, 1, cols-1)))
		}
		if err := firstErr(w, top, perm); err != nil { // out of memory, say: the rest would fail alike
			return failed(err), failed(err), failed(err), failed(err)
		}
	}
	piv, u = Concat(pivots, -1), Concat(rows, -2)
	if k > 0 {
		rhs = Concat(rhsRows, -2)
	}
	return piv, u, rhs, perm
}

// solveBody solves A·X = B (a [..., n, n], b [..., n, k]) by elimination
// and back substitution, with op's singularity check.
func solveBody(op string, check *dispatch.Op[infoCheck], a, b *Tensor) *Tensor {
	if err := firstErr(a, b); err != nil {
		return failed(err)
	}
	n, k := a.t.Shape[a.t.Rank()-1], b.t.Shape[b.t.Rank()-1]
	batch, _ := ops.BroadcastShapes(a.t.Shape[:a.t.Rank()-2], b.t.Shape[:b.t.Rank()-2])
	if n == 0 {
		return b.Expand(withMatrix(batch, 0, k)...).Contiguous()
	}
	w := Concat([]*Tensor{a.Expand(withMatrix(batch, n, n)...), b.Expand(withMatrix(batch, n, k)...)}, -1)
	piv, u, rhs, _ := eliminate(op, w, batch, n, false)
	if k == 0 {
		rhs = b.Expand(withMatrix(batch, n, 0)...)
	}
	x := triSolve(u, rhs, batch, true, false)
	return checked(check, x, piv, piv.EqScalar(0), batch)
}

var (
	opSolve = composite("solve", []string{"A", "B"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		return solveBody("solve", checkSolve, in[0], in[1])
	})
	// solve with left=false: X·A = B is Aᵀ·Xᵀ = Bᵀ.
	opSolveRight = compositeVariant("solve", "left=false", []string{"A", "B"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		return solveBody("solve", checkSolve, in[0].MT(), in[1].MT()).MT()
	})
	opInv = composite("inv", []string{"A"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		a := in[0]
		n := a.t.Shape[a.t.Rank()-1]
		eye := a.joined(Eye(a.t.Device, a.t.DType, n))
		return solveBody("inv", checkInv, a, eye)
	})
	// det and slogdet: the product of the pivots and the permutation's
	// sign, multiplied one by one (Prod's gradient divides by the
	// elements, and a singular matrix has a zero pivot); slogdet's result
	// is sign and logabsdet stacked in a first dim of 2.
	opDet = composite("det", []string{"A"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		a := in[0]
		batch, n := a.t.Shape[:a.t.Rank()-2], a.t.Shape[a.t.Rank()-1]
		if n == 0 { // 1, on A's graph
			return a.Sum(-2, -1).AddScalar(1)
		}
		piv, _, _, perm := eliminate("det", a, batch, n, true)
		d := perm
		for j := range n {
			d = d.Mul(piv.Narrow(-1, j, 1).Squeeze(-1))
		}
		return d
	})
	opSlogDet = composite("slogdet", []string{"A"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		a := in[0]
		batch, n := a.t.Shape[:a.t.Rank()-2], a.t.Shape[a.t.Rank()-1]
		if n == 0 {
			z := a.Sum(-2, -1)
			return Stack([]*Tensor{z.AddScalar(1), z}, 0)
		}
		piv, _, _, perm := eliminate("slogdet", a, batch, n, true)
		sign := perm.Mul(piv.Sign().Prod(-1)) // no gradient: Sign's is zero
		return Stack([]*Tensor{sign, piv.Abs().Log().Sum(-1)}, 0)
	})
)

// Solve is the solution X of A·X = B, as torch.linalg.solve(A, B): A is
// [..., n, n]; B is [..., n, k], or a vector case, [n] or A's shape
// without its last dim ([..., n]), which gives X of B's shape. The batch
// dims broadcast. By LU factorization with partial pivoting (the cost is
// in the package comment of ops_linalg_solve.go: about 25·n dispatched
// ops). A singular A (a zero pivot) is ErrValue naming A, on a GPU at the
// next read-back; A and B of different dtypes ErrDType, shapes that do
// not fit ErrShape, and 16-bit or integer ones ErrDType, as torch's.
func (A *Tensor) Solve(B *Tensor) *Tensor {
	const op = "solve"
	vector, err := solveArgs(op, A, B)
	if err != nil {
		return failed(err)
	}
	if vector {
		b := B.Unsqueeze(-1)
		if _, err := linalgPair(op, "A", "B", A, b, -2); err != nil {
			b.Release()
			return failed(err)
		}
		x := apply(opSolve, none, A, b)
		out := x.Squeeze(-1)
		ReleaseWithGraph(out, x, b)
		return out
	}
	if _, err := linalgPair(op, "A", "B", A, B, -2); err != nil {
		return failed(err)
	}
	return apply(opSolve, none, A, B)
}

// SolveSide is Solve where left is true, and otherwise the solution X of
// X·A = B, as torch.linalg.solve(A, B, left=False): A is [..., n, n], B
// [..., k, n] and X has B's shape (the batch dims broadcast). It solves
// Aᵀ·Xᵀ = Bᵀ by Solve's LU factorization, so its cost, its errors and its
// gradient (to any order) are Solve's. With left false, a B that Solve
// would take as a vector ([n], or A's shape without its last dim) is
// ErrShape, as torch refuses it (give it a dim of 1: B.Unsqueeze(-2)).
func (A *Tensor) SolveSide(B *Tensor, left bool) *Tensor {
	if left {
		return A.Solve(B)
	}
	const op = "solve"
	vector, err := solveArgs(op, A, B)
	if err != nil {
		return failed(err)
	}
	if as, bs := A.t.Shape, B.t.Shape; vector {
		return failed(errorf(op, ErrShape, "B", "has shape "+dispatch.FormatShape(bs)+", a batch of vectors to A of shape "+
			dispatch.FormatShape(as)+", which solve with left=false does not take, as torch's",
			"give B a row dim: B.Unsqueeze(-2), shape [..., 1, "+strconv.Itoa(as[len(as)-1])+"]"))
	}
	if _, err := linalgPair(op, "A", "B", A, B, -1); err != nil {
		return failed(err)
	}
	return apply(opSolveRight, none, A, B)
}

// solveArgs checks Solve's and SolveSide's A (a square batch of a
// linear-algebra dtype) and B (a live tensor on A's device), and reports
// whether B is a vector case: [n], or A's shape without its last dim.
func solveArgs(op string, A, B *Tensor) (vector bool, err error) {
	if err := linalgDType(op, "A", A); err != nil {
		return false, err
	}
	if err := B.CheckArg(op, "B"); err != nil {
		return false, err
	}
	if err := squareBatch(op, "A", A); err != nil {
		return false, err
	}
	as, bs := A.t.Shape, B.t.Shape
	return len(bs) == 1 || (len(bs) == len(as)-1 && slices.Equal(bs, as[:len(as)-1])), nil
}

// firstErr is the error of the first failed tensor of ts (nil ones
// aside), or nil.
func firstErr(ts ...*Tensor) error {
	for _, t := range ts {
		if t != nil && t.err != nil {
			return t.err
		}
	}
	return nil
}

// Inv is the inverse of the square matrices A ([..., n, n]), as
// torch.linalg.inv: Solve(A, I). A singular A is ErrValue naming A (on a
// GPU at the next read-back), as torch's "the diagonal element k is
// zero", with k the first zero pivot of the LU factorization (torch's
// lu_factor info; torch's inv names another element at times); a
// non-square or 1-D A ErrShape, a 16-bit or integer one ErrDType.
func (A *Tensor) Inv() *Tensor {
	if err := linalgOne("inv", A); err != nil {
		return failed(err)
	}
	return apply(opInv, none, A)
}

// Det is the determinant of the square matrices A ([..., n, n] gives
// [...]), as torch.linalg.det: the product of the LU pivots, 0 for a
// singular A (no error), 1 for n = 0. Its gradient, det·A⁻ᵀ where A is
// invertible, is that of the elimination's ops. At an exactly singular A
// it is the adjugate where the zero pivot is the last one (torch 1.13
// gives zero there), but where elimination meets a zero column earlier
// it misses the terms through that column ([[0, 1], [0, 3]] gives
// [[3, 0], [0, 0]], the adjugate's transpose is [[3, 0], [-1, 0]]).
func (A *Tensor) Det() *Tensor {
	if err := linalgOne("det", A); err != nil {
		return failed(err)
	}
	return apply(opDet, none, A)
}

// SlogDet is the sign and the natural log of the absolute value of the
// determinant of the square matrices A, as torch.linalg.slogdet: for a
// singular A, sign 0 and logabsdet -Inf. The gradient goes through
// logabsdet (A⁻ᵀ); sign has none, as torch's for real A.
func (A *Tensor) SlogDet() (sign, logabsdet *Tensor) {
	if err := linalgOne("slogdet", A); err != nil {
		return failed(err), failed(err)
	}
	s := apply(opSlogDet, none, A)
	if s.err != nil {
		return s, s
	}
	sign, logabsdet = s.Narrow(0, 0, 1).Squeeze(0), s.Narrow(0, 1, 1).Squeeze(0)
	ReleaseWithGraph(logabsdet, s)
	return sign, logabsdet
}

// linalgOne checks the one argument A of op.
func linalgOne(op string, A *Tensor) error {
	if err := linalgDType(op, "A", A); err != nil {
		return err
	}
	return squareBatch(op, "A", A)
}

// solveTriAttrs are SolveTriangular's options.
type solveTriAttrs struct{ upper, left, unit bool }

var (
	opSolveTriangular = composite("solve_triangular", []string{"A", "B"}, func(in []*Tensor, o solveTriAttrs) *Tensor {
		// A in memory of its own, as LAPACK takes it: an expanded view
		// of a matrix no device holds is ErrOutOfMemory at once, not a
		// substitution of a million steps.
		a, b := in[0].Contiguous(), in[1]
		if a.err != nil {
			return a
		}
		batch, _ := ops.BroadcastShapes(a.t.Shape[:a.t.Rank()-2], b.t.Shape[:b.t.Rank()-2])
		if o.left {
			return triSolve(a, b, batch, o.upper, o.unit)
		}
		// X·A = B is Aᵀ·Xᵀ = Bᵀ, whose triangle is the other one.
		return triSolve(a.MT(), b.MT(), batch, !o.upper, o.unit).MT().Contiguous()
	})
	opCholesky = composite("cholesky", []string{"A"}, func(in []*Tensor, upper bool) *Tensor {
		a := in[0]
		batch, n := a.t.Shape[:a.t.Rank()-2], a.t.Shape[a.t.Rank()-1]
		if n == 0 {
			return a.Contiguous()
		}
		// The symmetric matrix of A's lower triangle, which is all that
		// torch reads. Its gradient is symmetric, as torch's
		// (cholesky_backward symmetrizes): the derivative along the
		// symmetric matrices, the one that the factorization has.
		// (The value is made from A detached: ops recorded on A's graph
		// that the result does not reach would keep what they saved
		// until a collection.)
		return choleskyChecked(choleskyInput(a), batch, n, upper)
	})
)

// choleskyInput is the symmetric matrix of a's lower triangle, with the
// symmetric gradient (opCholesky's comment).
func choleskyInput(a *Tensor) *Tensor {
	if !a.RequiresGrad() {
		return a.Tril(0).Add(a.Tril(-1).MT())
	}
	ad := a.joined(a.Detach())
	sym := a.Add(a.MT()).MulScalar(0.5)
	return ad.Tril(0).Add(ad.Tril(-1).MT()).Add(sym.Sub(sym.joined(sym.Detach())))
}

// choleskyChecked is the factor of s, checked, as upper or lower.
func choleskyChecked(s *Tensor, batch []int, n int, upper bool) *Tensor {
	l, d := choleskyLower(s, n)
	// A pivot of 0 or less fails (NaN passes, as torch's gives NaN).
	l = checked(checkCholesky, l, d, d.LeScalar(0), batch)
	if upper {
		return l.MT().Contiguous()
	}
	return l
}

// choleskyLower factors the symmetric s ([..., n, n]) as L·Lᵀ, a column
// a step: the trailing matrix's first column over the square root of its
// corner is L's column, whose outer product the trailing matrix then
// loses (right-looking, reading s in full). It returns L and the pivots
// ([..., n], the corners before their square roots).
func choleskyLower(s *Tensor, n int) (l, pivots *Tensor) {
	cols, ps := make([]*Tensor, n), make([]*Tensor, n)
	w := s
	for j := range n {
		m := n - j
		p := w.Narrow(-2, 0, 1).Narrow(-1, 0, 1) // [..., 1, 1]
		ps[j] = p.Squeeze(-1)
		d := p.Sqrt()
		col := d
		if m > 1 {
			rest := w.Narrow(-2, 1, m-1).Narrow(-1, 0, 1).Div(d) // [..., m-1, 1]
			col = Concat([]*Tensor{d, rest}, -2)
			w = w.Narrow(-2, 1, m-1).Narrow(-1, 1, m-1).Sub(rest.Mul(rest.MT()))
		}
		if j > 0 {
			col = col.Pad([]int{0, 0, j, 0}, 0)
		}
		cols[j] = col
		if err := firstErr(w, col); err != nil { // out of memory, say: the rest would fail alike
			return failed(err), failed(err)
		}
	}
	return Concat(cols, -1), Concat(ps, -1)
}

var opCholeskySolve = composite("cholesky_solve", []string{"B", "L"}, func(in []*Tensor, upper bool) *Tensor {
	b, l := in[0], in[1].Contiguous() // as solve_triangular's A
	if l.err != nil {
		return l
	}
	batch, _ := ops.BroadcastShapes(l.t.Shape[:l.t.Rank()-2], b.t.Shape[:b.t.Rank()-2])
	if upper { // A = Uᵀ·U
		return triSolve(l, triSolve(l.MT(), b, batch, false, false), batch, true, false)
	}
	return triSolve(l.MT(), triSolve(l, b, batch, false, false), batch, true, false)
})

// Cholesky is the lower triangular L with A = L·Lᵀ of the symmetric
// positive-definite matrices A ([..., n, n]), as torch.linalg.cholesky
// (with upper, U = Lᵀ, A = Uᵀ·U): only A's lower triangle is read, and
// the gradient is symmetric, as torch's. A matrix that is not
// positive-definite (a pivot of 0 or less) is ErrValue naming A and the
// order of the leading minor, as torch's error, on a GPU at the next
// read-back; NaN gives NaN, as torch's. A non-square or 1-D A is
// ErrShape, a 16-bit or integer one ErrDType. About 10·n dispatched ops.
func (A *Tensor) Cholesky(upper bool) *Tensor {
	if err := linalgOne("cholesky", A); err != nil {
		return failed(err)
	}
	return apply(opCholesky, upper, A)
}

// SolveTriangular is the solution X of A·X = B (with left false, X·A =
// B) for triangular A, as torch.linalg.solve_triangular(A, B, upper=upper,
// left=left, unitriangular=unitriangular): only A's upper (lower)
// triangle is read, without its diagonal, taken as ones, where
// unitriangular, and its gradient lies in that triangle, as torch's. A
// is [..., n, n], B [..., n, k] ([..., k, n] for a right solve), their
// batch dims broadcast. A zero on the diagonal gives Inf and NaN, as
// torch's, not an error. About 9·n dispatched ops.
func (A *Tensor) SolveTriangular(B *Tensor, upper, left, unitriangular bool) *Tensor {
	colsDim := -2
	if !left {
		colsDim = -1
	}
	if _, err := linalgPair("solve_triangular", "A", "B", A, B, colsDim); err != nil {
		return failed(err)
	}
	return apply(opSolveTriangular, solveTriAttrs{upper: upper, left: left, unit: unitriangular}, A, B)
}

// CholeskySolve is the solution X of A·X = B given A's Cholesky factor
// L (A = L·Lᵀ; with upper, A = Lᵀ·L), as torch.cholesky_solve(B, L,
// upper): two triangular solves, reading only L's lower (upper) triangle.
// B is [..., n, k], L [..., n, n], their batch dims broadcast. The
// gradient with respect to L lies in that triangle: torch's spreads onto
// the other triangle too, as though L were a full matrix, and lathe's is
// torch's for L.Tril() (L.Triu()).
func (B *Tensor) CholeskySolve(L *Tensor, upper bool) *Tensor {
	if _, err := linalgPair("cholesky_solve", "L", "B", L, B, -2); err != nil {
		return failed(err)
	}
	return apply(opCholeskySolve, upper, B, L)
}
