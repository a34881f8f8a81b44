package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// The Bessel functions of the first and second kinds of orders 0 and 1, as
// torch.special has them (bessel_j0, bessel_j1, bessel_y0, bessel_y1):
// Cephes' rational approximations (j0.c, j1.c, the coefficient tables
// torch's Math.h holds) on [0, 5] and its Hankel asymptotic form
// √(2/(πx))·(P cos ξ - (5/x)·Q sin ξ) beyond (ξ = x - π/4, or x - 3π/4 for
// order 1; sin and cos swapped for Y), evaluated with lathe's elementwise
// ops. So they run on every device and float dtype and are differentiable
// to any order, where torch's have no gradient: the approximations
// differentiated, which agree with J0' = -J1, Y0' = -Y1, J1' = J0 - J1/x
// and Y1' = Y0 - Y1/x to the approximations' accuracy.

// The asymptotic form's rational functions of 25/x², order 0 then order 1,
// highest degree first (P = pp/pq, Q = qp/qq; qq's leading 1 is implicit,
// as Cephes's p1evl).
var (
	j0PP = []float64{7.96936729297347051624e-4, 8.28352392107440799803e-2, 1.23953371646414299388e0,
		5.44725003058768775090e0, 8.74716500199817011941e0, 5.30324038235394892183e0, 9.99999999999999997821e-1}
	j0PQ = []float64{9.24408810558863637013e-4, 8.56288474354474431428e-2, 1.25352743901058953537e0,
		5.47097740330417105182e0, 8.76190883237069594232e0, 5.30605288235394617618e0, 1.00000000000000000218e0}
	j0QP = []float64{-1.13663838898469149931e-2, -1.28252718670509318512e0, -1.95539544257735972385e1,
		-9.32060152123768231369e1, -1.77681167980488050595e2, -1.47077505154951170175e2, -5.14105326766599330220e1,
		-6.05014350600728481186e0}
	j0QQ = []float64{6.43178256118178023184e1, 8.56430025976980587198e2, 3.88240183605401609683e3,
		7.24046774195652478189e3, 5.93072701187316984827e3, 2.06209331660327847417e3, 2.42005740240291393179e2}
	j1PP = []float64{7.62125616208173112003e-4, 7.31397056940917570436e-2, 1.12719608129684925192e0,
		5.11207951146807644818e0, 8.42404590141772420927e0, 5.21451598682361504063e0, 1.00000000000000000254e0}
	j1PQ = []float64{5.71323128072548699714e-4, 6.88455908754495404082e-2, 1.10514232634061696926e0,
		5.07386386128601488557e0, 8.39985554327604159757e0, 5.20982848682361821619e0, 9.99999999999999997461e-1}
	j1QP = []float64{5.10862594750176621635e-2, 4.98213872951233449420e0, 7.58238284132545283818e1,
		3.66779609360150777800e2, 7.10856304998926107277e2, 5.97489612400613639965e2, 2.11688757100572135698e2,
		2.52070205858023719784e1}
	j1QQ = []float64{7.42373277035675149943e1, 1.05644886038262816351e3, 4.98641058337653607651e3,
		9.56231892404756170795e3, 7.99704160447350683650e3, 2.82619278517639096600e3, 3.36093607810698293419e2}
)

// The rational functions of x² on [0, 5]: J0 = (x² - r1)(x² - r2)·RP/RQ,
// J1 = x(x² - r1)(x² - r2)·RP/RQ (r the squares of the first two zeros),
// Y0 = YP/YQ + (2/π)·ln x·J0, Y1 = x·YP/YQ + (2/π)(J1 ln x - 1/x); every
// denominator's leading 1 implicit.
var (
	j0RP = []float64{-4.79443220978201773821e9, 1.95617491946556577543e12, -2.49248344360967716204e14,
		9.70862251047306323952e15}
	j0RQ = []float64{4.99563147152651017219e2, 1.73785401676374683123e5, 4.84409658339962045305e7,
		1.11855537045356834862e10, 2.11277520115489217587e12, 3.10518229857422583814e14, 3.18121955943204943306e16,
		1.71086294081043136091e18}
	j0Zeros = [2]float64{5.78318596294678452118e0, 3.04712623436620863991e1}
	y0YP    = []float64{1.55924367855235737965e4, -1.46639295903971606143e7, 5.43526477051876500413e9,
		-9.82136065717911466409e11, 8.75906394395366999549e13, -3.46628303384729719441e15, 4.42733268572569800351e16,
		-1.84950800436986690637e16}
	y0YQ = []float64{1.04128353664259848412e3, 6.26107330137134956842e5, 2.68919633393814121987e8,
		8.64002487103935000337e10, 2.02979612750105546709e13, 3.17157752842975028269e15, 2.50596256172653059228e17}
	j1RP = []float64{-8.99971225705559398224e8, 4.52228297998194034323e11, -7.27494245221818276015e13,
		3.68295732863852883286e15}
	j1RQ = []float64{6.20836478118054335476e2, 2.56987256757748830383e5, 8.35146791431949253037e7,
		2.21511595479792499675e10, 4.74914122079991414898e12, 7.84369607876235854894e14, 8.95222336184627338078e16,
		5.32278620332680085395e18}
	j1Zeros = [2]float64{1.46819706421238932572e1, 4.92184563216946036703e1}
	y1YP    = []float64{1.26320474790178026440e9, -6.47355876379160291031e11, 1.14509511541823727583e14,
		-8.12770255501325109621e15, 2.02439475713594898196e17, -7.78877196265950026825e17}
	y1YQ = []float64{5.94301592346128195359e2, 2.35564092943068577943e5, 7.34811944459721705660e7,
		1.87601316108706159478e10, 3.88231277496238566008e12, 6.20557727146953693363e14, 6.87141087355300489866e16,
		3.97270608116560655612e18}
)

// polynomial is Σ c[i]·z^(n-1-i) by Horner's rule, c highest degree first;
// monic puts a leading 1 before c (Cephes's p1evl).
func polynomial(z *Tensor, c []float64, monic bool) *Tensor {
	var r *Tensor
	if monic {
		r = z.AddScalar(c[0])
	} else {
		r = z.MulScalar(c[0]).AddScalar(c[1])
		c = c[1:]
	}
	for _, ci := range c[1:] {
		r = r.Mul(z).AddScalar(ci)
	}
	return r
}

// besselJY is J or Y (second) of order 0 or 1 of float32 or float64 x: J
// even (order 0) or odd (order 1); Y -Inf at 0 and NaN below, as torch's.
func besselJY(op string, x *Tensor, order int, second bool) *Tensor {
	ax := x.Abs()
	if second {
		ax = x // below 0 the small branch's logarithm makes it NaN
	}
	small := ax.LeScalar(5)
	// Each branch's argument is a harmless value where the other branch
	// is taken, so that neither makes an Inf or NaN whose gradient would
	// poison x's; a NaN takes the large branch.
	s := Where(small, x, x.scalarLike(op, 1))
	l := Where(small, x.scalarLike(op, 6), ax)
	pp, pq, qp, qq, phase := j0PP, j0PQ, j0QP, j0QQ, math.Pi/4
	if order == 1 {
		pp, pq, qp, qq, phase = j1PP, j1PQ, j1QP, j1QQ, 3*math.Pi/4
	}
	w := x.scalarLike(op, 25).Div(l.Mul(l))
	p := polynomial(w, pp, false).Div(polynomial(w, pq, false))
	q := polynomial(w, qp, false).Div(polynomial(w, qq, true)).Mul(x.scalarLike(op, 5).Div(l))
	xi := l.SubScalar(phase)
	c, sn := xi.Cos(), xi.Sin()
	var far *Tensor
	if second {
		far = p.Mul(sn).Add(q.Mul(c))
	} else {
		far = p.Mul(c).Sub(q.Mul(sn))
	}
	far = far.MulScalar(math.Sqrt(2 / math.Pi)).Div(l.Sqrt())
	if order == 1 && !second {
		far = far.Mul(x.Sign()) // odd
	}
	z := s.Mul(s)
	rp, rq, zeros := j0RP, j0RQ, j0Zeros
	if order == 1 {
		rp, rq, zeros = j1RP, j1RQ, j1Zeros
	}
	near := z.SubScalar(zeros[0]).Mul(z.SubScalar(zeros[1])).Mul(polynomial(z, rp, false)).Div(polynomial(z, rq, true))
	if order == 1 {
		near = near.Mul(s)
	}
	if second {
		logS := s.Log()
		if order == 0 {
			near = polynomial(z, y0YP, false).Div(polynomial(z, y0YQ, true)).Add(logS.Mul(near).MulScalar(2 / math.Pi))
		} else {
			j1 := near
			near = s.Mul(polynomial(z, y1YP, false).Div(polynomial(z, y1YQ, true))).
				Add(j1.Mul(logS).Sub(s.Reciprocal()).MulScalar(2 / math.Pi))
		}
	}
	out := Where(small, near, far)
	if second { // Y1 at 0 would be 0·(-Inf) - Inf: NaN
		out = Where(x.EqScalar(0), x.scalarLike(op, math.Inf(-1)), out)
	}
	return out
}

// besselJYOp registers the composite of one of the four functions.
func besselJYOp(name string, order int, second bool) *dispatch.Op[dispatch.None] {
	return besselComposite(name, func(op string, x *Tensor) *Tensor { return besselJY(op, x, order, second) })
}

var (
	opJ0 = besselJYOp("special_bessel_j0", 0, false)
	opJ1 = besselJYOp("special_bessel_j1", 1, false)
	opY0 = besselJYOp("special_bessel_y0", 0, true)
	opY1 = besselJYOp("special_bessel_y1", 1, true)
)

// BesselJ0 is the Bessel function of the first kind of order 0, as
// torch.special.bessel_j0: even, 1 at 0, NaN at ±Inf (as torch's). Integers
// and bool are promoted to float32, as torch's; float16 and bfloat16 are
// computed in float32 and rounded once. In float32 a large x keeps the
// digits that x - π/4 does, as torch's float32. Unlike torch's, it has a
// gradient, -J1(x) to the approximations' accuracy, and that gradient its
// own.
func (x *Tensor) BesselJ0() *Tensor { return x.bessel(opJ0) }

// BesselJ1 is the Bessel function of the first kind of order 1, as
// torch.special.bessel_j1: odd. Dtypes and gradient as BesselJ0's (J1' =
// J0 - J1/x, 1/2 at 0).
func (x *Tensor) BesselJ1() *Tensor { return x.bessel(opJ1) }

// BesselY0 is the Bessel function of the second kind of order 0, as
// torch.special.bessel_y0: -Inf at 0, NaN below 0. Dtypes and gradient
// as BesselJ0's (Y0' = -Y1).
func (x *Tensor) BesselY0() *Tensor { return x.bessel(opY0) }

// BesselY1 is the Bessel function of the second kind of order 1, as
// torch.special.bessel_y1: -Inf at 0, NaN below 0. Dtypes and gradient
// as BesselJ0's (Y1' = Y0 - Y1/x).
func (x *Tensor) BesselY1() *Tensor { return x.bessel(opY1) }
