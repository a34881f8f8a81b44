package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The functions of torch.linalg built on the SVD (ops_linalg_eigh.go) and
// the solves (ops_linalg_solve.go): Pinv, MatrixRank, MatrixNorm, Cond,
// and the products MatrixPower and MultiDot. Each runs in a Compose, so
// that what it makes on the way goes with its result.

// linalgEps is the machine epsilon of dt, float32 or float64.
func linalgEps(dt DType) float64 {
	if dt == Float64 {
		return 0x1p-52
	}
	return 0x1p-23
}

// linalgMatrix checks op's argument A: a float32 or float64 matrix or a
// batch of them.
func linalgMatrix(op string, A *Tensor) error {
	if err := linalgDType(op, "A", A); err != nil {
		return err
	}
	if s := A.t.Shape; len(s) < 2 {
		return errorf(op, ErrShape, "A", "has shape "+dispatch.FormatShape(s)+" but "+op+" takes a matrix or a batch of them (at least 2 dims)",
			"give a tensor of shape [..., m, n]")
	}
	return nil
}

// svdCutoff is torch's default tolerance of pinv and matrix_rank for S
// ([..., k], descending) of [..., m, n] matrices: max(m, n)·eps·σ_max,
// [..., 1].
func svdCutoff(S *Tensor, m, n int) *Tensor {
	if S.err != nil {
		return S
	}
	return S.Narrow(-1, 0, 1).MulScalar(float64(max(m, n)) * linalgEps(S.t.DType))
}

// Pinv is the Moore–Penrose pseudo-inverse of the matrices A ([..., m,
// n] gives [..., n, m]), as torch.linalg.pinv(A) with its default
// tolerance: V·diag(1/S)·Uᵀ over the singular values above
// max(m, n)·eps·σ_max (the others taken as 0). By SVD (its cost, and
// 4 ops more); its gradient is that of the SVD, torch's where the rank
// does not change nearby. Rank below 2 is ErrShape, 16-bit or integer
// ErrDType, Inf or NaN ErrValue (the SVD's).
func (A *Tensor) Pinv() *Tensor {
	const op = "pinv"
	if err := linalgMatrix(op, A); err != nil {
		return failed(err)
	}
	m, n := A.t.Shape[A.t.Rank()-2], A.t.Shape[A.t.Rank()-1]
	return Compose(func(in []*Tensor) *Tensor {
		if min(m, n) == 0 {
			return in[0].MT().Contiguous().MulScalar(0)
		}
		U, S, Vh := in[0].SVD(false)
		keep := S.Gt(svdCutoff(S, m, n))
		inv := Where(keep, Where(keep, S, S.scalarLike(op, 1)).Reciprocal(), S.scalarLike(op, 0))
		return Vh.MT().Mul(inv.Unsqueeze(-2)).MatMul(U.MT())
	}, A)
}

// MatrixRank is the numerical rank of the matrices A ([..., m, n] gives
// [...], Int64), as torch.linalg.matrix_rank(A) with its default
// tolerance: the number of singular values above max(m, n)·eps·σ_max. By
// SVDVals (its cost). Rank below 2 is ErrShape, 16-bit or integer
// ErrDType, Inf or NaN ErrValue.
func (A *Tensor) MatrixRank() *Tensor {
	const op = "matrix_rank"
	if err := linalgMatrix(op, A); err != nil {
		return failed(err)
	}
	m, n := A.t.Shape[A.t.Rank()-2], A.t.Shape[A.t.Rank()-1]
	return Compose(func(in []*Tensor) *Tensor {
		a := in[0].joined(in[0].Detach())
		if min(m, n) == 0 {
			return a.Sum(-2, -1).Cast(Int64).MulScalar(0)
		}
		S := a.SVDVals()
		return S.Gt(svdCutoff(S, m, n)).Sum(-1) // int64, as a bool sum is
	}, A)
}

// MatrixOrd is the order of a matrix norm (MatrixNorm, Cond): torch's
// ord argument of torch.linalg.matrix_norm and cond.
type MatrixOrd int

const (
	OrdFro    MatrixOrd = iota // 'fro', the Frobenius norm: the root of the sum of the squares
	OrdNuc                     // 'nuc', the nuclear norm: the sum of the singular values
	OrdInf                     // inf: the largest sum of the magnitudes of a row
	OrdNegInf                  // -inf: the smallest sum of the magnitudes of a row
	Ord1                       // 1: the largest sum of the magnitudes of a column
	OrdNeg1                    // -1: the smallest sum of the magnitudes of a column
	Ord2                       // 2: the largest singular value
	OrdNeg2                    // -2: the smallest singular value
)

// String is the ord as torch writes it.
func (o MatrixOrd) String() string {
	switch o {
	case OrdFro:
		return "'fro'"
	case OrdNuc:
		return "'nuc'"
	case OrdInf:
		return "inf"
	case OrdNegInf:
		return "-inf"
	case Ord1:
		return "1"
	case OrdNeg1:
		return "-1"
	case Ord2:
		return "2"
	case OrdNeg2:
		return "-2"
	}
	return "MatrixOrd(" + strconv.Itoa(int(o)) + ")"
}

// MatrixNorm is the matrix norm of order ord of the matrices A ([..., m,
// n] gives [...]), as torch.linalg.matrix_norm(A, ord) (dims -2 and -1,
// keepdim False). 'fro' and the ±1 and ±inf norms are reductions of A
// (16-bit A too, as torch's); 'nuc' and ±2 take the singular values
// (SVDVals: its cost, float32 and float64 only, as torch's "low precision
// dtypes not supported"). An ord not among the constants is ErrValue.
func (A *Tensor) MatrixNorm(ord MatrixOrd) *Tensor {
	const op = "matrix_norm"
	if ord < OrdFro || ord > OrdNeg2 {
		return failed(errorf(op, ErrValue, "ord", "is "+ord.String()+", not one of the matrix norms", "pass one of the MatrixOrd constants (OrdFro, OrdNuc, OrdInf, ...)"))
	}
	if err := A.CheckArg(op, "A"); err != nil {
		return failed(err)
	}
	if ord == OrdNuc || ord == Ord2 || ord == OrdNeg2 {
		if err := linalgMatrix(op, A); err != nil {
			return failed(err)
		}
	} else {
		if dt := A.t.DType; !dt.IsFloat() {
			return failed(errorf(op, ErrDType, "A", "is "+dt.String()+" but matrix_norm takes a floating-point tensor (as torch's)", "cast it with .Cast(lathe.Float32) first"))
		}
		if s := A.t.Shape; len(s) < 2 {
			return failed(errorf(op, ErrShape, "A", "has shape "+dispatch.FormatShape(s)+" but matrix_norm takes a matrix or a batch of them (at least 2 dims)",
				"give a tensor of shape [..., m, n]"))
		}
	}
	return Compose(func(in []*Tensor) *Tensor {
		a := in[0]
		switch ord {
		case OrdFro:
			return a.Square().Sum(-2, -1).Sqrt()
		case OrdInf:
			return a.Abs().Sum(-1).Amax(-1)
		case OrdNegInf:
			return a.Abs().Sum(-1).Amin(-1)
		case Ord1:
			return a.Abs().Sum(-2).Amax(-1)
		case OrdNeg1:
			return a.Abs().Sum(-2).Amin(-1)
		}
		s := a.SVDVals()
		switch ord {
		case OrdNuc:
			return s.Sum(-1)
		case Ord2:
			return s.Amax(-1)
		}
		return s.Amin(-1)
	}, A)
}

// Cond is the condition number of the matrices A in the 2-norm ([..., m,
// n] gives [...]), as torch.linalg.cond(A) (p None or 2): σ_max/σ_min of
// SVDVals (its cost), Inf where σ_min is 0, as torch's. Rank below 2 is
// ErrShape, 16-bit or integer ErrDType.
func (A *Tensor) Cond() *Tensor {
	const op = "cond"
	if err := linalgMatrix(op, A); err != nil {
		return failed(err)
	}
	return Compose(func(in []*Tensor) *Tensor {
		s := in[0].SVDVals()
		if s.err != nil {
			return s
		}
		k := s.t.Shape[s.t.Rank()-1]
		if k == 0 {
			return s.Sum(-1)
		}
		return s.Narrow(-1, 0, 1).Div(s.Narrow(-1, k-1, 1)).Squeeze(-1)
	}, A)
}

// MatrixPower is A to the integer power n, as torch.linalg.matrix_power(A,
// n), for square matrices A ([..., m, m]): the identity (batched) for n =
// 0, A·A·… by repeated squaring for n > 0 (about 2·log2(n) products, any
// dtype MatMul takes), and Inv(A) to the power -n for n < 0 (float32 or
// float64; a singular A is Inv's ErrValue). A non-square or 1-D A is
// ErrShape.
func (A *Tensor) MatrixPower(n int) *Tensor {
	const op = "matrix_power"
	if err := A.CheckArg(op, "A"); err != nil {
		return failed(err)
	}
	if err := squareBatch(op, "A", A); err != nil {
		return failed(err)
	}
	if n < 0 {
		if err := linalgDType(op, "A", A); err != nil {
			return failed(err)
		}
	}
	return Compose(func(in []*Tensor) *Tensor {
		a := in[0]
		m := a.t.Shape[a.t.Rank()-1]
		if n == 0 {
			eye := a.joined(Eye(a.t.Device, a.t.DType, m))
			return eye.Expand(a.t.Shape...).Contiguous()
		}
		k := n
		if n < 0 {
			a, k = a.Inv(), -n
		}
		var r *Tensor
		for p := a; ; p = p.MatMul(p) {
			if k&1 == 1 {
				if r == nil {
					r = p
				} else {
					r = r.MatMul(p)
				}
			}
			if k >>= 1; k == 0 {
				break
			}
		}
		if r == in[0] {
			return r.Contiguous().MulScalar(1) // a result of its own, on A's graph
		}
		return r
	}, A)
}

// MultiDot is the product of the matrices ts, in the order of the fewest
// multiplications, as torch.linalg.multi_dot(ts): the first may be a
// vector ([n], as a row) and the last one ([n], as a column), whose dims
// the result then lacks; every other one is a matrix. len(ts) - 1
// MatMuls. Fewer than 2 tensors is ErrValue, another rank or shapes that
// do not chain ErrShape, mixed dtypes ErrDType.
func MultiDot(ts []*Tensor) *Tensor {
	const op = "multi_dot"
	if len(ts) < 2 {
		return failed(errorf(op, ErrValue, "tensors", "has "+strconv.Itoa(len(ts))+" tensors but multi_dot takes at least 2 (as torch's)", "pass two or more, or use MatMul"))
	}
	for i, t := range ts {
		arg := "tensors[" + strconv.Itoa(i) + "]"
		if err := t.CheckArg(op, arg); err != nil {
			return failed(err)
		}
		r := t.t.Rank()
		if r != 2 && !(r == 1 && (i == 0 || i == len(ts)-1)) {
			return failed(errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(t.t.Shape)+" but multi_dot takes matrices (the first and last may be vectors)",
				"give a 2-D tensor"))
		}
		if t.t.DType != ts[0].t.DType {
			return failed(errorf(op, ErrDType, arg, "is "+t.t.DType.String()+" but tensors[0] is "+ts[0].t.DType.String()+" (multi_dot does not promote, as torch's)",
				"cast it with .Cast("+ts[0].t.DType.GoString()+")"))
		}
		if i > 0 {
			prev := ts[i-1].t.Shape[ts[i-1].t.Rank()-1]
			if t.t.Shape[0] != prev {
				return failed(errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(t.t.Shape)+", whose first dim is not "+strconv.Itoa(prev)+
					", the last of tensors["+strconv.Itoa(i-1)+"]", "give tensors whose shapes chain: [a, b], [b, c], ..."))
			}
		}
	}
	k := len(ts)
	first, last := ts[0].t.Rank() == 1, ts[k-1].t.Rank() == 1
	return Compose(func(in []*Tensor) *Tensor {
		ms := make([]*Tensor, k)
		copy(ms, in)
		if first {
			ms[0] = ms[0].Unsqueeze(0)
		}
		if last {
			ms[k-1] = ms[k-1].Unsqueeze(1)
		}
		// dims: matrix i is d[i]×d[i+1]; cost[i][j] the fewest
		// multiplications for i..j, split[i][j] where it splits.
		d := make([]int, k+1)
		for i, m := range ms {
			d[i] = m.t.Shape[0]
		}
		d[k] = ms[k-1].t.Shape[1]
		cost, split := make([][]float64, k), make([][]int, k)
		for i := range k {
			cost[i], split[i] = make([]float64, k), make([]int, k)
		}
		for l := 1; l < k; l++ {
			for i := 0; i+l < k; i++ {
				j := i + l
				cost[i][j] = -1
				for s := i; s < j; s++ {
					c := cost[i][s] + cost[s+1][j] + float64(d[i])*float64(d[s+1])*float64(d[j+1])
					if cost[i][j] < 0 || c < cost[i][j] {
						cost[i][j], split[i][j] = c, s
					}
				}
			}
		}
		var prod func(i, j int) *Tensor
		prod = func(i, j int) *Tensor {
			if i == j {
				return ms[i]
			}
			return prod(i, split[i][j]).MatMul(prod(split[i][j]+1, j))
		}
		r := prod(0, k-1)
		if first {
			r = r.Squeeze(0)
		}
		if last {
			r = r.Squeeze(-1)
		}
		return r
	}, ts...)
}

// padé13 are the coefficients of the [13/13] Padé approximant of exp
// (Higham 2005), and θ₁₃ the 1-norm below which it is exact to double
// precision.
var padé13 = [14]float64{64764752532480000, 32382376266240000, 7771770303897600, 1187353796428800, 129060195264000,
	10559470521600, 670442572800, 33522128640, 1323241920, 40840800, 960960, 16380, 182, 1}

const padéTheta13 = 5.371920351148152

// MatrixExp is the matrix exponential of the square matrices A ([..., n,
// n]), as torch.linalg.matrix_exp: scaling and squaring with the [13/13]
// Padé approximant (Higham 2005): each matrix is scaled by 2^-s, s the
// least with ‖A‖₁/2^s ≤ θ₁₃ = 5.37, the approximant r = (V-U)⁻¹(V+U) taken
// by Solve, and squared s times. torch 1.13 uses Taylor polynomials of
// degree up to 18 (Bader, Blanes and Casas) with the same scaling idea;
// both are exact to the dtype's rounding, and lathe's, in float32 too,
// is the double-precision approximant. The batch shares one count of
// squarings, the largest s, each matrix squaring only its own s times
// (a Where); finding it reads the norms back: on a GPU the call waits for
// the device (a sync). About 6 products, a solve (25·n ops) and 2 ops a
// squaring. The gradient is the recorded ops', the approximant's
// derivative, exact to the same rounding; any order. 16-bit or integer A
// is ErrDType, non-square ErrShape.
func (A *Tensor) MatrixExp() *Tensor {
	const op = "matrix_exp"
	if err := linalgOne(op, A); err != nil {
		return failed(err)
	}
	return Compose(func(in []*Tensor) *Tensor {
		a := in[0]
		n := a.t.Shape[a.t.Rank()-1]
		if a.Numel() == 0 {
			return a.Contiguous().MulScalar(1)
		}
		// s per matrix, [..., 1, 1], from the detached norms.
		ad := a.joined(a.Detach())
		norm := ad.Abs().SumKeepDim(-2).AmaxKeepDim(-1) // ‖A‖₁
		s := norm.DivScalar(padéTheta13).Log2().Ceil().Clamp(0, 2000)
		s = Where(s.IsFinite(), s, s.scalarLike(op, 0))
		smax, err := s.Amax().Item()
		if err != nil {
			return failed(err)
		}
		x := a.Mul(s.Neg().Exp2())
		eye := a.joined(Eye(a.t.Device, a.t.DType, n))
		b := padé13
		x2 := x.MatMul(x)
		x4 := x2.MatMul(x2)
		x6 := x4.MatMul(x2)
		u := x.MatMul(x6.MatMul(x6.MulScalar(b[13]).Add(x4.MulScalar(b[11])).Add(x2.MulScalar(b[9]))).
			Add(x6.MulScalar(b[7])).Add(x4.MulScalar(b[5])).Add(x2.MulScalar(b[3])).Add(eye.MulScalar(b[1])))
		v := x6.MatMul(x6.MulScalar(b[12]).Add(x4.MulScalar(b[10])).Add(x2.MulScalar(b[8]))).
			Add(x6.MulScalar(b[6])).Add(x4.MulScalar(b[4])).Add(x2.MulScalar(b[2])).Add(eye.MulScalar(b[0]))
		r := v.Sub(u).Solve(v.Add(u))
		for k := range int(smax) {
			r = Where(s.GtScalar(float64(k)), r.MatMul(r), r)
			if r.err != nil {
				return r
			}
		}
		return r
	}, A)
}

// Lstsq is the least-squares solution X of A·X = B, as
// torch.linalg.lstsq(A, B, driver="gelsd").solution (the other results,
// residuals, rank and singular values, are left out: MatrixRank and
// SVDVals give the last two): the X of least norm among those that
// minimize ‖A·X - B‖, Pinv(A)·B, with singular values below
// max(m, n)·eps·σ_max taken as 0 (gelsd's default rcond). A is [..., m,
// n], B [..., m, k] or, one dim fewer than A, a vector [..., m] (X then
// [..., n]); their batch dims broadcast. torch's default driver on the
// cpu, gelsy, gives the same X for A of full rank and another, not the
// least-norm one, for a rank-deficient A. Pinv's cost and one product;
// its gradient is Pinv's. Mixed dtypes ErrDType, shapes that do not fit
// ErrShape, 16-bit or integer ErrDType.
func (A *Tensor) Lstsq(B *Tensor) *Tensor {
	const op = "lstsq"
	if err := linalgMatrix(op, A); err != nil {
		return failed(err)
	}
	if err := linalgDType(op, "B", B); err != nil {
		return failed(err)
	}
	if A.t.DType != B.t.DType {
		return failed(errorf(op, ErrDType, "B", "is "+B.t.DType.String()+" but A is "+A.t.DType.String()+" (lstsq does not promote, as torch's)",
			"cast it with .Cast("+A.t.DType.GoString()+")"))
	}
	as, bs := A.t.Shape, B.t.Shape
	m := as[len(as)-2]
	vector := len(bs) == len(as)-1
	if len(bs) < 1 || (!vector && len(bs) < 2) || bs[len(bs)-1-boolInt(!vector)] != m {
		return failed(errorf(op, ErrShape, "B", "has shape "+dispatch.FormatShape(bs)+", which does not fit A of shape "+dispatch.FormatShape(as)+
			" (its rows must be A's "+strconv.Itoa(m)+")", "give B of shape [..., "+strconv.Itoa(m)+", k], or [..., "+strconv.Itoa(m)+"] with one dim fewer than A"))
	}
	bb := bs
	if !vector {
		bb = bs[:len(bs)-1]
	}
	if _, ok := ops.BroadcastShapes(as[:len(as)-2], bb[:len(bb)-1]); !ok {
		return failed(errorf(op, ErrShape, "B", "has batch dims "+dispatch.FormatShape(bb[:len(bb)-1])+", which do not broadcast with A's "+
			dispatch.FormatShape(as[:len(as)-2]), "make each batch dim equal or 1"))
	}
	return Compose(func(in []*Tensor) *Tensor {
		p := in[0].Pinv()
		if vector {
			return p.MatMul(in[1].Unsqueeze(-1)).Squeeze(-1)
		}
		return p.MatMul(in[1])
	}, A, B)
}

// LstsqFull is torch.linalg.lstsq(A, B, driver=driver) with all four of
// its results: the solution (Lstsq's), the squared residuals, the ranks
// and the singular values, each present or empty as torch 1.13's cpu
// gives them for driver ("gels", "gelsy", "gelsd" or "gelss"; "" is
// torch's cpu default, "gelsy"):
//
//   - residuals, ‖A·X - B‖² of each column ([batch, k], the batch dims of
//     A and B broadcast; [batch, 1] for a vector B): with "gels" where
//     m > n; with "gelsd" and "gelss" where m > n and every matrix of A
//     has rank n; otherwise (and always with "gelsy") empty, [0];
//   - rank, Int64 of A's batch shape: the number of singular values
//     above max(m, n)·eps·σ_max (gelsd's default rcond, which MatrixRank
//     uses too) with "gelsy", "gelsd" and "gelss"; empty, [0], with
//     "gels";
//   - singularValues, A's [batch, min(m, n)] descending (SVDVals), with
//     "gelsd" and "gelss"; empty, [0], otherwise.
//
// The solution is always the least-norm one (Lstsq: gelsd's), whatever
// the driver: for A of full rank every driver gives it, and for a
// rank-deficient A torch's gelsy and gels give others (gels assumes full
// rank). gelsy's rank comes from a pivoted QR in LAPACK and lathe's from
// the SVD, which agree but where a singular value lies at the cutoff.
// torch's cuda takes "gels" alone; lathe takes every driver on every
// device. Residuals and singular values have gradients here (the SVD's
// and the product's), which torch's do not; rank has none. It costs two
// SVDs of A (Lstsq's and SVDVals') and, for "gelsd" and "gelss" where
// m > n, one sync to read the ranks back. An unknown driver is ErrValue;
// the other errors are Lstsq's.
func (A *Tensor) LstsqFull(B *Tensor, driver string) (solution, residuals, rank, singularValues *Tensor) {
	const op = "lstsq"
	fail := func(err error) (*Tensor, *Tensor, *Tensor, *Tensor) {
		return failed(err), failed(err), failed(err), failed(err)
	}
	if driver == "" {
		driver = "gelsy"
	}
	if driver != "gels" && driver != "gelsy" && driver != "gelsd" && driver != "gelss" {
		return fail(errorf(op, ErrValue, "driver", "is "+strconv.Quote(driver)+" but lstsq's driver is one of gels, gelsy, gelsd and gelss, as torch's",
			"use \"gelsd\" for the singular values, or \"\" for torch's default, gelsy"))
	}
	solution = A.Lstsq(B)
	if err := solution.Err(); err != nil {
		return fail(err)
	}
	as := A.t.Shape
	m, n := as[len(as)-2], as[len(as)-1]
	dev, dt := A.t.Device, A.t.DType
	empty := func(dt DType) *Tensor { return Zeros(dev, dt, 0) }
	svd := driver == "gelsd" || driver == "gelss"
	var S *Tensor
	if driver != "gels" {
		S = A.SVDVals()
		if min(m, n) == 0 {
			rank = relabel(Zeros(dev, Int64, as[:len(as)-2]...), op)
		} else {
			rank = relabel(Compose(func(in []*Tensor) *Tensor {
				s := in[0].joined(in[0].Detach())
				return s.Gt(svdCutoff(s, m, n)).Sum(-1) // int64, as a bool sum is
			}, S), op)
		}
		if err := firstErr(S, rank); err != nil {
			releaseAll([]*Tensor{solution, S, rank})
			return fail(err)
		}
	} else {
		rank = empty(Int64)
	}
	if svd {
		singularValues = relabel(S, op)
	} else {
		singularValues = empty(dt)
		if S != nil {
			S.Release()
		}
	}
	full := m > n && driver == "gels"
	if m > n && svd {
		low, err := rank.LtScalar(float64(n)).Any().Item()
		if err != nil {
			releaseAll([]*Tensor{solution, rank, singularValues})
			return fail(located(err, op))
		}
		full = low == 0
	}
	if !full {
		return solution, empty(dt), rank, singularValues
	}
	residuals = relabel(Compose(func(in []*Tensor) *Tensor {
		a, b, x := in[0], in[1], in[2]
		if b.t.Rank() == a.t.Rank()-1 { // a vector B: one column
			b, x = b.Unsqueeze(-1), x.Unsqueeze(-1)
		}
		return a.MatMul(x).Sub(b).Square().Sum(-2)
	}, A, B, solution), op)
	return solution, residuals, rank, singularValues
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
