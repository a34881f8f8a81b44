package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// The modified Bessel functions of the second kind of orders 0 and 1, as
// torch.special has them (modified_bessel_k0, modified_bessel_k1 and their
// e^x-scaled forms): Cephes' Chebyshev expansions (k0.c, k1.c, the
// coefficient tables torch's Math.h holds), K0(x) = C_A(x² - 2) -
// ln(x/2)·I0(x) and K1(x) = ln(x/2)·I1(x) + C_A(x² - 2)/x on (0, 2], and
// e^x·K(x) = C_B(8/x - 2)/√x beyond, evaluated with lathe's elementwise
// ops as the I functions are (ops_bessel.go). So they run on every device
// and float dtype and are differentiable to any order, where torch's have
// no gradient: the expansions differentiated, which agree with K0' = -K1
// and K1' = -K0 - K1/x to the expansions' accuracy.

// Chebyshev coefficients of K0(x) + ln(x/2)·I0(x) on (0, 2] (argument x² - 2).
var k0Small = []float64{1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
	1.90451637722020886025e-9, 2.53479107902614945675e-7, 2.28621210311945178607e-5, 1.26461541144692592338e-3,
	3.59799365153615016266e-2, 3.44289899924628486886e-1, -5.35327393233902768720e-1}

// Chebyshev coefficients of e^x·√x·K0(x) on (2, ∞) (argument 8/x - 2).
var k0Large = []float64{5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
	-1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15, 6.34007647740507060557e-15,
	-2.22751332699166985548e-14, 8.03289077536357521100e-14, -2.98009692317273043925e-13, 1.14034058820847496303e-12,
	-4.51459788337394416547e-12, 1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
	-1.69753450938905987466e-9, 8.57403401741422608519e-9, -4.66048989768794782956e-8, 2.76681363944501510342e-7,
	-1.83175552271911948767e-6, 1.39498137188764993662e-5, -1.28495495816278026384e-4, 1.56988388573005337491e-3,
	-3.14481013119645005427e-2, 2.44030308206595545468e0}

// Chebyshev coefficients of x·(K1(x) - ln(x/2)·I1(x)) on (0, 2] (argument x² - 2).
var k1Small = []float64{-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
	-1.41148839263352776110e-10, -2.21338763073472585583e-8, -2.43340614156596823496e-6, -1.73028895751305206302e-4,
	-6.97572385963986435018e-3, -1.22611180822657148235e-1, -3.53155960776544875667e-1, 1.52530022733894777053e0}

// Chebyshev coefficients of e^x·√x·K1(x) on (2, ∞) (argument 8/x - 2).
var k1Large = []float64{-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
	1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15, -7.01983709041831346144e-15,
	2.47715442448130437068e-14, -8.97670518232499435011e-14, 3.34841966607842919884e-13, -1.28917396095102890680e-12,
	5.13963967348173025100e-12, -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
	2.01504975519703286596e-9, -1.03457624656780970260e-8, 5.74108412545004946722e-8, -3.50196060308781257119e-7,
	2.40648494783721712015e-6, -1.93619797416608296024e-5, 1.95215518471351631108e-4, -2.85781685962277938680e-3,
	1.03923736576817238437e-1, 2.72062619048444266945e0}

// besselK is K0 or K1 of float32 or float64 x, scaled by e^x or not: +Inf
// at 0, NaN below 0 (and at NaN), 0 at +Inf, as torch's.
func besselK(op string, x *Tensor, a besselAttrs) *Tensor {
	small := x.LeScalar(2)
	// Each branch's argument is a harmless value where the other branch
	// is taken, so that neither makes an Inf or NaN whose gradient would
	// poison x's; a NaN takes the large branch, and a negative x the small
	// one, whose logarithm makes it NaN.
	s := Where(small, x, x.scalarLike(op, 1))
	l := Where(small, x.scalarLike(op, 4), x)
	eager := !x.RequiresGrad()
	logHalf := s.MulScalar(0.5).Log()
	z := s.Mul(s).SubScalar(2)
	w := x.scalarLike(op, 8).Div(l).SubScalar(2)
	var near, far *Tensor // K on (0, 2], e^x·K beyond
	if a.order == 0 {
		near = chebyshev(z, k0Small, eager).Sub(logHalf.Mul(besselI(op, s, besselAttrs{order: 0})))
		far = chebyshev(w, k0Large, eager).Div(l.Sqrt())
	} else {
		near = logHalf.Mul(besselI(op, s, besselAttrs{order: 1})).Add(chebyshev(z, k1Small, eager).Div(s))
		far = chebyshev(w, k1Large, eager).Div(l.Sqrt())
	}
	if a.scaled {
		near = near.Mul(s.Exp())
	} else {
		far = far.Mul(l.Neg().Exp())
	}
	// K1 at 0 would be ln 0·I1(0) + C/0 = -Inf·0 + Inf: NaN.
	return Where(x.EqScalar(0), x.scalarLike(op, math.Inf(1)), Where(small, near, far))
}

// besselKOp registers the composite of one of the four functions.
func besselKOp(a besselAttrs) *dispatch.Op[dispatch.None] {
	return besselComposite(besselKName(a), func(op string, x *Tensor) *Tensor { return besselK(op, x, a) })
}

// besselKName is torch's name of the function a selects.
func besselKName(a besselAttrs) string {
	name := "special_modified_bessel_k" + string(rune('0'+a.order))
	if a.scaled {
		name = "special_scaled_modified_bessel_k" + string(rune('0'+a.order))
	}
	return name
}

var (
	opK0  = besselKOp(besselAttrs{order: 0})
	opK0e = besselKOp(besselAttrs{order: 0, scaled: true})
	opK1  = besselKOp(besselAttrs{order: 1})
	opK1e = besselKOp(besselAttrs{order: 1, scaled: true})
)

// ModifiedBesselK0 is the modified Bessel function of the second kind of
// order 0, as torch.special.modified_bessel_k0: +Inf at 0, NaN below 0,
// decaying as e^-x/√x (0 past x ≈ 705 in float64, 85 in float32).
// Integers and bool are promoted to float32, as torch's; float16 and
// bfloat16 are computed in float32 and rounded once. Unlike torch's, it
// has a gradient, -K1(x) to the expansions' accuracy, and that gradient
// its own; at 0 (the pole) and below, the gradient is NaN.
func (x *Tensor) ModifiedBesselK0() *Tensor { return x.bessel(opK0) }

// ModifiedBesselK1 is the modified Bessel function of the second kind of
// order 1, as torch.special.modified_bessel_k1: +Inf at 0 (as 1/x), NaN
// below 0. Dtypes and gradient as ModifiedBesselK0's (K1' = -K0 - K1/x).
func (x *Tensor) ModifiedBesselK1() *Tensor { return x.bessel(opK1) }

// ScaledModifiedBesselK0 is e^x·K0(x), as
// torch.special.scaled_modified_bessel_k0, which stays finite where K0
// underflows. Dtypes and gradient as ModifiedBesselK0's.
func (x *Tensor) ScaledModifiedBesselK0() *Tensor { return x.bessel(opK0e) }

// ScaledModifiedBesselK1 is e^x·K1(x), as
// torch.special.scaled_modified_bessel_k1. Dtypes and gradient as
// ModifiedBesselK0's.
func (x *Tensor) ScaledModifiedBesselK1() *Tensor { return x.bessel(opK1e) }
