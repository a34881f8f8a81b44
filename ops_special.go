package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// erfinv as a composite, from a published algorithm written with lathe's
// ops, so that it runs on every device and float dtype (16-bit computed
// in float32 and rounded once) and is differentiable to any order: torch's
// calc_erfinv, a rational first guess (central for |y| ≤ 0.7, tail beyond)
// and two Newton steps on erf, through which the gradient flows: after
// them, d/dy is 1/erf'(x) to the residual.

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

var (
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

// Erfc is the complementary error function 1 - erf(x), as torch.erfc,
// accurate where it is tiny (erfc(10) is 2.1e-45, not 0): a kernel on
// every device, whose gradient is -2/√π·exp(-x²). Floats only.
func (x *Tensor) Erfc() *Tensor { return x.floatKernel(ops.Erfc) }

// Erfinv is the inverse of erf on (-1, 1), as torch.erfinv: ±Inf at ±1,
// NaN beyond. Floats only.
func (x *Tensor) Erfinv() *Tensor { return x.callUnary(opErfinv, mathAttrs{}) }
