package lathe

import "math"

// Special functions as composites: erfc, erfinv, lgamma and digamma, each
// from a published algorithm written with lathe's ops, so that each runs
// on every device and float dtype (16-bit computed in float32 and rounded
// once) and is differentiable to any order.
//
//   - erfc is 1 - erf(x) below 1.25, where that loses no digits, and above
//     it fdlibm's exp(-x² - 0.5625 + R/S)/x with the rational functions of
//     Go's math.Erfc (s_erf.c), never 1 - erf(x), which is 0 from x ≈ 6
//     in float64. Its value comes from x detached, and its gradient from
//     -erf(x) added and taken away, so that every derivative is erf's.
//   - erfinv is torch's calc_erfinv: a rational first guess (central for
//     |y| ≤ 0.7, tail beyond) and two Newton steps on erf, through which
//     the gradient flows: after them, d/dy is 1/erf'(x) to the residual.
//   - digamma is torch's calc_digamma: the recurrence ψ(x) = ψ(x+1) - 1/x
//     up to 10, then the asymptotic series, and the reflection
//     ψ(x) = ψ(1-x) - π/tan(π·frac(x)) below 0; its gradient is the
//     recurrence and series differentiated, trigamma to float64's digits.
//   - lgamma is ln|Γ(x)|: the recurrence Γ(x) = Γ(x+n)/(x(x+1)…(x+n-1)) up
//     to 8, then Stirling's series to 1/z¹³ (below 1e-15 from 8 on), and
//     the reflection ln π - ln|sin(π·frac(x))| - lgamma(1-x) below 0.
//
// Near the zeros of lgamma (1 and 2) and digamma (1.4616…) the error is
// absolute, a few ulp of the terms that cancel there (float32: a few
// 1e-7), not relative to the tiny result.

// horner is c[0] + s·(c[1] + s·(c[2] + …)).
func horner(s *Tensor, c ...float64) *Tensor {
	p := s.MulScalar(c[len(c)-1]).AddScalar(c[len(c)-2])
	for i := len(c) - 3; i >= 0; i-- {
		p = p.Mul(s).AddScalar(c[i])
	}
	return p
}

// detached is x with no gradient, released with the body's intermediates.
func detached(x *Tensor) *Tensor { return x.joined(x.Detach()) }

// withGradOf is v (a value computed from detached tensors) with the
// gradient of g: v + (g - g detached), whose value is v exactly.
func withGradOf(v, g *Tensor) *Tensor { return v.Add(g.Sub(detached(g))) }

var (
	opErfc = unaryMath("erfc", true, func(x *Tensor, _ mathAttrs) *Tensor {
		const op = "erfc"
		xd := detached(x)
		near := xd.Erf().Neg().AddScalar(1)
		t := Where(xd.GeScalar(1.25), xd, xd.scalarLike(op, 1.25))
		rs := erfcTailRS(t)
		// exp(-t²) as exp(-hi)·(1 - lo) (squareSplit), and the rest apart:
		// exp(-t² - 0.5625 + R/S) in one lost ulps of t² (2e-14 at 20).
		hi, lo := squareSplit(t)
		tail := hi.Neg().Exp().Mul(lo.Neg().AddScalar(1)).Mul(rs.AddScalar(-0.5625).Exp()).Div(t)
		v := Where(xd.LtScalar(1.25), near, tail)
		return withGradOf(v, x.Erf().Neg())
	})

	opErfinv = unaryMath("erfinv", true, func(y *Tensor, _ mathAttrs) *Tensor {
		const op = "erfinv"
		a := y.Abs()
		inside := a.LtScalar(1)
		// ys is y inside (-1, 1) and 0 elsewhere, so that no branch makes a
		// NaN or Inf whose gradient would poison y's.
		ys := Where(inside, y, y.scalarLike(op, 0))
		as := ys.Abs()
		z := ys.Mul(ys)
		central := ys.Mul(horner(z, 0.886226899, -1.645349621, 0.914624893, -0.140543331)).
			Div(horner(z, 1, -2.118377725, 1.442710462, -0.329097515, 0.012229801))
		// The tail's argument at |y| ≤ 0.7 is kept at 0.7's, where it is
		// not used.
		at := Where(as.GtScalar(0.7), as, as.scalarLike(op, 0.7))
		w := at.Neg().AddScalar(1).DivScalar(2).Log().Neg().Sqrt()
		tail := horner(w, -1.970840454, -1.624906493, 3.429567803, 1.641345311).
			Div(horner(w, 1, 3.543889200, 1.637067800)).Mul(ys.Sign())
		x := Where(as.LeScalar(0.7), central, tail)
		for range 2 { // Newton: x - (erf(x) - y)/(2/√π·exp(-x²))
			x = x.Sub(x.Erf().Sub(ys).Div(x.Mul(x).Neg().Exp().MulScalar(2 / math.Sqrt(math.Pi))))
		}
		// ±1 gives ±Inf, beyond (and NaN) NaN, as torch's.
		inf := Where(y.GtScalar(0), y.scalarLike(op, math.Inf(1)), y.scalarLike(op, math.Inf(-1)))
		edge := Where(a.EqScalar(1), inf, y.scalarLike(op, math.NaN()))
		return Where(inside, x, edge)
	})

	opDigamma = unaryMath("digamma", true, func(x *Tensor, _ mathAttrs) *Tensor {
		const op = "digamma"
		neg := x.LtScalar(0)
		frac := x.Sub(Where(x.LtScalar(0), x.Ceil(), x.Floor()))
		xr := Where(neg, frac, x.scalarLike(op, 0.25)) // reflection's argument, harmless where unused
		pi := opmathConst(x.t.DType, math.Pi)
		xp := Where(neg, x.Neg().AddScalar(1), x)
		result := x.scalarLike(op, 0)
		for range 10 {
			m := xp.LtScalar(10)
			result = result.Sub(Where(m, xp.Reciprocal(), x.scalarLike(op, 0)))
			xp = Where(m, xp.AddScalar(1), xp)
		}
		z := xp.Mul(xp).Reciprocal()
		series := z.Mul(horner(z, 8.33333333333333333333e-2, -8.33333333333333333333e-3, 3.96825396825396825397e-3,
			-4.16666666666666666667e-3, 7.57575757575757575758e-3, -2.10927960927960927961e-2, 8.33333333333333333333e-2))
		series = Where(xp.LtScalar(1e17), series, x.scalarLike(op, 0))
		v := result.Add(xp.Log()).Sub(xp.Reciprocal().MulScalar(0.5)).Sub(series)
		// At 10 (x an integer up to 10) ψ(10) is a constant, to which the
		// gradient of the series (ψ'(10)) is added: without it, digamma's
		// gradient at 1, 2, …, 10 lacked ψ'(10) = 0.105.
		// (Where result is infinite, at 0, the constant alone.)
		v10 := result.AddScalar(2.25175258906672110764)
		v10 = Where(result.IsFinite(), withGradOf(v10, v.Sub(result)), v10)
		v = Where(xp.EqScalar(10), v10, v)
		v = Where(neg, v.Sub(xr.MulScalar(pi).Tan().Reciprocal().MulScalar(pi)), v)
		// A negative integer is a pole: NaN, as torch's.
		return Where(neg.LogicalAnd(frac.EqScalar(0)), x.scalarLike(op, math.NaN()), v)
	})

	opLgamma = unaryMath("lgamma", true, func(x *Tensor, _ mathAttrs) *Tensor {
		const op = "lgamma"
		neg := x.LtScalar(0)
		frac := x.Sub(Where(x.LtScalar(0), x.Ceil(), x.Floor()))
		xr := Where(neg, frac, x.scalarLike(op, 0.5))
		pi := opmathConst(x.t.DType, math.Pi)
		z := Where(neg, x.Neg().AddScalar(1), x)
		var v *Tensor
		if x.t.DType == Float64 {
			v = lgammaStirling(z)
		} else {
			v = lgamma32(z)
		}
		refl := xr.MulScalar(pi).Sin().Abs().Log().Neg().AddScalar(math.Log(math.Pi))
		v = Where(neg, refl.Sub(v), v)
		return Where(x.IsInf(), x.scalarLike(op, math.Inf(1)), v)
	})
)

// erfcTailRS is fdlibm's R/S of erfc's tail (Go's math.Erfc): for t ≥
// 1.25, erfc(t) = exp(-t² - 0.5625 + R/S)/t, R/S taken in s = 1/t² (one
// fit below 1/0.35, another from there on). As t grows, R/S tends to
// -0.5625 - ln √π, so that exp(-0.5625 + R/S)/t is erfcx(t) for every t
// from 1.25 to +Inf.
func erfcTailRS(t *Tensor) *Tensor {
	s := t.Mul(t).Reciprocal()
	mid := horner(s, -9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
		-6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
		-8.12874355063065934246e+01, -9.81432934416914548592e+00).Div(horner(s, 1, 1.96512716674392571292e+01,
		1.37657754143519042600e+02, 4.34565877475229228821e+02, 6.45387271733267880336e+02,
		4.29008140027567833386e+02, 1.08635005541779435134e+02, 6.57024977031928170135e+00, -6.04244152148580987438e-02))
	far := horner(s, -9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
		-1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
		-4.83519191608651397019e+02).Div(horner(s, 1, 3.03380607434824582924e+01, 3.25792512996573918826e+02,
		1.53672958608443695994e+03, 3.19985821950859553908e+03, 2.55305040643316442583e+03,
		4.74528541206955367215e+02, -2.24409524465858183362e+01))
	return Where(t.LtScalar(1/0.35), mid, far)
}

// lgammaStirling is lgamma of z ≥ 0 (or NaN) by the recurrence up to 8 and
// Stirling's series, good to a few float64 ulp of the terms.
func lgammaStirling(z *Tensor) *Tensor {
	prod := z.scalarLike("lgamma", 1)
	for range 8 {
		m := z.LtScalar(8)
		prod = Where(m, prod.Mul(z), prod)
		z = Where(m, z.AddScalar(1), z)
	}
	r := z.Reciprocal()
	r2 := r.Mul(r)
	corr := r.Mul(horner(r2, 1.0/12, -1.0/360, 1.0/1260, -1.0/1680, 1.0/1188, -691.0/360360, 1.0/156))
	stirling := z.AddScalar(-0.5).Mul(z.Log()).Sub(z).AddScalar(0.5 * math.Log(2*math.Pi)).Add(corr)
	return stirling.Sub(prod.Abs().Log())
}

// lgamma32 is lgamma of z ≥ 0 (or NaN) in float32, where Stirling's terms
// (about 12 at 8) would cost 2e-6 near the zeros at 1 and 2: on [1, 3) it
// is (y-1)(y-2)·R(y-2), R a degree-16 Chebyshev fit of lgamma(y)/((y-1)
// (y-2)) (relative error 2e-11), which keeps the zeros exact; (0, 1)
// comes up to it by lgamma(y+1) - ln y, [3, 8) down by lgamma(y) + ln y,
// and from 8 on Stirling's series, whose result is then 8 or more.
func lgamma32(z *Tensor) *Tensor {
	const op = "lgamma"
	large := z.GeScalar(8)
	y := Where(large, z.scalarLike(op, 2.5), z) // 8 and beyond: Stirling's, so y is harmless
	low := y.LtScalar(1)
	logs := Where(low, y.Log().Neg(), z.scalarLike(op, 0)) // lgamma(y) = lgamma(y+1) - ln y
	y = Where(low, y.AddScalar(1), y)
	prod := z.scalarLike(op, 1)
	for range 5 { // lgamma(y+1) = lgamma(y) + ln y, down to [2, 3)
		m := y.GeScalar(3)
		y = Where(m, y.AddScalar(-1), y)
		prod = Where(m, prod.Mul(y), prod)
	}
	u := y.AddScalar(-2)
	r := horner(u, 0.42278433510078123, -0.10031730152107982, 0.032965000251643936, -0.01238419942664814,
		0.0049986508445119425, -0.0021080317281440336, 0.0009152797623939525, -0.0004063129447022552,
		0.00018303771044982778, -8.115387728926197e-05, 3.6823646327585917e-05, -2.112736497763247e-05,
		1.0371803776198627e-05, -4.5068741705409446e-07, -1.1835872944086594e-07, -2.459750174845368e-06,
		1.2468269595677312e-06)
	small := u.AddScalar(1).Mul(u).Mul(r).Add(prod.Log()).Add(logs)
	zl := Where(large, z, z.scalarLike(op, 8))
	return Where(large, lgammaStirling(zl), small)
}

// Erfc is the complementary error function 1 - erf(x), as torch.erfc,
// accurate where it is tiny (erfc(10) is 2.1e-45, not 0). Floats only.
func (x *Tensor) Erfc() *Tensor { return x.callUnary(opErfc, mathAttrs{}) }

// Erfinv is the inverse of erf on (-1, 1), as torch.erfinv: ±Inf at ±1,
// NaN beyond. Floats only.
func (x *Tensor) Erfinv() *Tensor { return x.callUnary(opErfinv, mathAttrs{}) }

// Digamma is ψ(x) = Γ'(x)/Γ(x), the derivative of Lgamma, as
// torch.digamma: -Inf at +0, +Inf at -0, NaN at the negative integers.
// Its gradient is trigamma. Floats only.
func (x *Tensor) Digamma() *Tensor { return x.callUnary(opDigamma, mathAttrs{}) }

// Lgamma is ln|Γ(x)|, as torch.lgamma: +Inf at 0 and at the negative
// integers. Its gradient is digamma. Floats only.
func (x *Tensor) Lgamma() *Tensor { return x.callUnary(opLgamma, mathAttrs{}) }
