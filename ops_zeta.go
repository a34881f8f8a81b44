package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The Hurwitz zeta function, as a composite.
//
// zeta(x, q) = Σ_{k≥0} (q + k)^-x is torch's (Cephes's) method: the first
// ten terms summed, then the Euler–Maclaurin tail with 12 Bernoulli terms.
// Cephes sums more terms while q + k ≤ 9, so that a negative q (allowed
// where x is an integer) takes as many terms as it is far below 0, which
// a composite cannot: there zeta(x, q) = zeta(x, r) + (-1)^x·(zeta(x,
// 1 - r) - zeta(x, 1 - q)) with r = q - floor(q) in (0, 1), the same sum
// regrouped (the terms of q + k < 0 mirror those of 1 - r + j), each
// zeta with a positive q. Both lose the digits that the cancelling
// terms of a q far below 0 share, as torch's does.
//
// zetaBernoulli are Cephes's A[i], (2i+2)!/B_{2i+2}.
var zetaBernoulli = []float64{12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
	-2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
	-7.1661652561756670113e18}

// zetaPositive is Σ_{k≥0} (q + k)^-x for x > 1 and q > 0 (elsewhere what
// the formula gives): ten terms, then Euler–Maclaurin from q + 9 on.
func zetaPositive(x, q *Tensor) *Tensor {
	negx := x.Neg()
	s := q.Pow(negx)
	a := q
	var b *Tensor
	for range 9 {
		a = a.AddScalar(1)
		b = a.Pow(negx)
		s = s.Add(b)
	}
	w := a
	s = s.Add(b.Mul(w).Div(x.AddScalar(-1))).Sub(b.MulScalar(0.5))
	f := x.scalarLike("special_zeta", 1)
	k := 0.0
	for _, c := range zetaBernoulli {
		f = f.Mul(x.AddScalar(k))
		b = b.Div(w)
		s = s.Add(f.Mul(b).DivScalar(c))
		k++
		f = f.Mul(x.AddScalar(k))
		b = b.Div(w)
		k++
	}
	return s
}

// zeta is the Hurwitz zeta function of x and q (one float dtype, shapes
// broadcast): +Inf at x = 1 and at q = 0, -1, -2, …; NaN for x < 1 and for
// q < 0 with x not an integer, as torch's. x gets no gradient (torch has
// none); q's is -x·zeta(x + 1, q), from the sum differentiated.
func zeta(x, q *Tensor) *Tensor {
	const op = "special_zeta"
	x = detached(x)
	shape, _ := ops.BroadcastShapes(x.Shape(), q.Shape())
	x, q = x.Expand(shape...), q.Expand(shape...)
	one := x.scalarLike(op, 1)
	neg := q.LeScalar(0)
	fl := q.Floor()
	qint := q.Eq(fl)
	xint := x.Eq(x.Floor())
	// Where q ≤ 0 (and is not an integer) the sum is regrouped into three
	// of positive q: r, 1 - r and 1 - q.
	regroup := neg.LogicalAnd(qint.LogicalNot()).LogicalAnd(xint)
	r := q.Sub(fl)
	q1 := Where(regroup, r, Where(neg, one, q))
	q2 := Where(regroup, r.Neg().AddScalar(1), one)
	q3 := Where(regroup, q.Neg().AddScalar(1), one)
	xs := Where(x.GtScalar(1), x, x.scalarLike(op, 2)) // x ≤ 1 (and NaN) gives its constant below
	z := zetaPositive(xs.Unsqueeze(0), Stack([]*Tensor{q1, q2, q3}, 0))
	z1, z2, z3 := z.Select(0, 0), z.Select(0, 1), z.Select(0, 2)
	// (-1)^x for an integer x: 1 - 2·(x mod 2).
	sign := xs.Sub(xs.DivScalar(2).Floor().MulScalar(2)).MulScalar(-2).AddScalar(1)
	v := Where(regroup, z1.Add(sign.Mul(z2.Sub(z3))), z1)
	nan, inf := x.scalarLike(op, math.NaN()), x.scalarLike(op, math.Inf(1))
	// At a pole (q = 0, -1, …) +Inf as (q - floor(q))^-x, whose derivative
	// is q's there, -Inf (torch's -x·zeta(x + 1, q)); at -Inf +Inf.
	pole := neg.LogicalAnd(qint).LogicalAnd(q.IsFinite())
	rp := Where(pole, r, one)
	v = Where(pole, rp.Pow(xs.Neg()), Where(neg.LogicalAnd(qint), inf, Where(neg.LogicalAnd(xint.LogicalNot()), nan, v)))
	v = Where(x.EqScalar(1), inf, Where(x.LtScalar(1), nan, v))
	return Where(x.IsNaN().LogicalOr(q.IsNaN()), nan, v)
}

var opZeta = binaryMath("special_zeta", []string{"x", "q"}, true, zeta)

// Zeta is the Hurwitz zeta function Σ_{k≥0} (q + k)^-x, as
// torch.special.zeta(x, q) (zeta(x, 1) is Riemann's): x and q broadcast,
// integers promoted to float32 (promoted as Div); float16 and bfloat16
// are computed in float32 and rounded once. +Inf at x = 1 and where q is
// 0 or a negative integer; NaN for x < 1, and where q < 0 and x is not an
// integer. Its gradient is q's, -x·zeta(x + 1, q); x gets none (torch's
// refuses to differentiate x). torch's cpu sums float32 in float64; here
// float32 is summed in float32, as torch's cuda does: where the terms
// cancel (q far below 0: polygamma(4, -1.5) is 1.5e-5 off in float32,
// polygamma(2, -100.5) 8e-3) or fall below float32's normal range
// (q^-x under 1e-38: zeta(5, 1e8) is 5e-6 off) float32 loses digits that
// torch's cpu keeps; float64 keeps them to about those of torch's.
func Zeta(x, q *Tensor) *Tensor {
	if err := x.CheckArg("special_zeta", "x"); err != nil {
		return failed(err)
	}
	return x.callBinary(opZeta, q, ops.Div)
}

// Multigammaln is Mvlgamma under torch.special's name,
// torch.special.multigammaln(x, p); its errors name it. As torch 1.13's
// (which does not check that x is above (p-1)/2), x at or below (p-1)/2
// gives what the formula gives.
func (x *Tensor) Multigammaln(p int) *Tensor {
	const op = "special_multigammaln"
	if err := x.floatsOnly(op); err != nil {
		return failed(err)
	}
	if p < 1 {
		return failed(errorf(op, ErrValue, "p", "is "+strconv.Itoa(p)+" but must be 1 or more", "use a dimension p ≥ 1"))
	}
	return apply(opMvlgamma, mathAttrs{a: float64(p)}, x)
}
