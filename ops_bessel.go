package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// The modified Bessel functions of the first kind of orders 0 and 1, as
// torch.special has them (i0, i0e, i1, i1e): Cephes' Chebyshev expansions
// of e^-|x|·I(x) on [0, 8] and of e^-|x|·√|x|·I(x) on (8, ∞), the
// coefficient tables PyTorch's ATen/native/Math.h holds (float32 takes
// its shorter i1e tables, as torch's float kernels do), evaluated by
// Clenshaw's recurrence with lathe's elementwise ops. So they run on every
// device and float dtype (16-bit computed in float32 and rounded once) and
// are differentiable to any order.
//
// The unscaled functions are the scaled ones times e^|x|, which overflows
// where torch's does (float32: |x| past 88.72), and gives NaN at ±Inf, as
// torch's cpu kernels give. The gradients are the expansions
// differentiated, which agree with torch's formulas (i0' = i1, i0e' = i1e
// - sign(x)·i0e, i1' = i0 - i1/x, i1e' = i0e - i1e·(sign(x) + 1/x)) to the
// expansions' accuracy, and at x = 0 give torch's values to second order
// too: the scaled i0's small-range branch is P(z)·e^(z-|x|) with z = |x|
// written so that its slope at 0 is 1, whose first derivative at 0 is
// P'(0) + P(0) = 0 and second 1/2, where P(|x|) alone would give -1 and 0.

// Chebyshev coefficients of e^-x·I0(x) on [0, 8] (argument x/2 - 2).
var i0eSmall = []float64{
	-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16, 1.71539128555513303061e-15,
	-1.16853328779934516808e-14, 7.67618549860493561688e-14, -4.85644678311192946090e-13, 2.95505266312963983461e-12,
	-1.72682629144155570723e-11, 9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
	-1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7, 1.11738753912010371815e-6,
	-4.41673835845875056359e-6, 1.64484480707288970893e-5, -5.75419501008210370398e-5, 1.88502885095841655729e-4,
	-5.76375574538582365885e-4, 1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
	-2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2, 1.71620901522208775349e-1,
	-3.04682672343198398683e-1, 6.76795274409476084995e-1,
}

// Chebyshev coefficients of e^-x·√x·I0(x) on (8, ∞) (argument 32/x - 2).
var i0eLarge = []float64{
	-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17, 3.46122286769746109310e-17,
	-2.82762398051658348494e-16, -3.42548561967721913462e-16, 1.77256013305652638360e-15, 3.81168066935262242075e-15,
	-9.55484669882830764870e-15, -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
	7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11, -3.14991652796324136454e-11,
	1.18891471078464383424e-11, 4.94060238822496958910e-10, 3.39623202570838634515e-9, 2.26666899049817806459e-8,
	2.04891858946906374183e-7, 2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
	8.04490411014108831608e-1,
}

// Chebyshev coefficients of e^-x·I1(x)/x on [0, 8] (argument x/2 - 2);
// float32 uses the last 17, as torch's float kernel.
var i1eSmall = []float64{
	2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16, -1.10559694773538630805e-15,
	7.60068429473540693410e-15, -5.04218550472791168711e-14, 3.22379336594557470981e-13, -1.98397439776494371520e-12,
	1.17361862988909016308e-11, -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
	9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7, -8.56872026469545474066e-7,
	3.47025130813767847674e-6, -1.32731636560394358279e-5, 4.78156510755005422638e-5, -1.61760815825896745588e-4,
	5.12285956168575772895e-4, -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
	2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1, -1.76416518357834055153e-1,
	2.52587186443633654823e-1,
}

// Chebyshev coefficients of e^-x·√x·I1(x) on (8, ∞) (argument 32/x - 2);
// float32 uses the last 7, as torch's float kernel.
var i1eLarge = []float64{
	7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17, -3.20952592199342395980e-17,
	2.96262899764595013876e-16, 3.30820231092092828324e-16, -1.88035477551078244854e-15, -3.81440307243700780478e-15,
	1.04202769841288027642e-14, 4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
	-7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11, 3.25260358301548823856e-11,
	-1.89749581235054123450e-11, -5.58974346219658380687e-10, -3.83538038596423702205e-9, -2.63146884688951950684e-8,
	-2.51223623787020892529e-7, -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
	7.78576235018280120474e-1,
}

// chebyshev is Cephes' chbevl: Σ' c[i]·T(y) by Clenshaw's recurrence
// b0 = y·b1 - b2 + c[i], returning (b0 - b2)/2. c has four or more terms.
// Where eager is set (no gradient is recorded) each step's temporaries are
// released as soon as the next step has used them, so that a long tensor
// costs a few of its size rather than three per coefficient until the
// composite returns.
func chebyshev(y *Tensor, c []float64, eager bool) *Tensor {
	drop := func(ts ...*Tensor) {
		if eager {
			for _, t := range ts {
				t.Release()
			}
		}
	}
	p := y.MulScalar(c[0])
	b1 := p.AddScalar(c[1]) // b2 = 0, b1 = c[0]
	q := y.Mul(b1)
	r := q.SubScalar(c[0])
	b0 := r.AddScalar(c[2]) // b2 = c[0]
	drop(p, q, r)
	var b2 *Tensor
	for _, ci := range c[3:] {
		p := y.Mul(b0)
		q := p.Sub(b1)
		next := q.AddScalar(ci)
		drop(p, q)
		if b2 != nil {
			drop(b2)
		}
		b0, b1, b2 = next, b0, b1
	}
	d := b0.Sub(b2)
	out := d.MulScalar(0.5)
	drop(d, b0, b1, b2)
	return out
}

// chebyshevHost is chebyshev on one float64.
func chebyshevHost(y float64, c []float64) float64 {
	b0, b1, b2 := c[0], 0.0, 0.0
	for _, ci := range c[1:] {
		b2, b1 = b1, b0
		b0 = y*b1 - b2 + ci
	}
	return 0.5 * (b0 - b2)
}

// i0eHost is e^-|x|·I0(x) in float64 (Kaiser's window).
func i0eHost(x float64) float64 {
	x = math.Abs(x)
	if x <= 8 {
		return chebyshevHost(x/2-2, i0eSmall)
	}
	return chebyshevHost(32/x-2, i0eLarge) / math.Sqrt(x)
}

// besselAttrs say which function: order 0 or 1, e-scaled or not.
type besselAttrs struct {
	order  int
	scaled bool
}

// besselI is I0 or I1 of float32 or float64 x, scaled by e^-|x| or not.
func besselI(op string, x *Tensor, a besselAttrs) *Tensor {
	if x.err != nil { // besselK's argument, a Where that failed (a huge x)
		return x
	}
	ax := x.Abs()
	small := ax.LeScalar(8)
	// Each branch's argument is a harmless value where the other branch
	// is taken, so that neither makes an Inf or NaN whose gradient would
	// poison x's; a NaN takes the large branch, as in Cephes.
	s := Where(small, x, x.scalarLike(op, 0))
	l := Where(small, x.scalarLike(op, 8), ax)
	w := x.scalarLike(op, 32).Div(l).SubScalar(2)
	eager := !x.RequiresGrad() // nothing is recorded: chebyshev may release as it goes
	small0, large0, small1, large1 := i0eSmall, i0eLarge, i1eSmall, i1eLarge
	if x.t.DType != Float64 {
		small1, large1 = i1eSmall[len(i1eSmall)-17:], i1eLarge[len(i1eLarge)-7:]
	}
	var e *Tensor
	if a.order == 0 {
		// z is |s| with slope 1 at 0, and e^(z-|x|) is 1 where the branch
		// is taken: see the file's comment.
		z := Where(s.LtScalar(0), s.Neg(), s)
		inner := chebyshev(z.DivScalar(2).SubScalar(2), small0, eager).Mul(z.Sub(ax).Exp())
		e = Where(small, inner, chebyshev(w, large0, eager).Div(l.Sqrt()))
	} else {
		inner := chebyshev(s.Abs().DivScalar(2).SubScalar(2), small1, eager).Mul(s)
		outer := chebyshev(w, large1, eager).Div(l.Sqrt())
		e = Where(small, inner, Where(x.LtScalar(0), outer.Neg(), outer)).AddScalar(0) // -0 gives +0, as torch's
	}
	if a.scaled {
		return e
	}
	// Where e^|x| overflows (and |x| is finite) the result is ±Inf, and its
	// derivative ±Inf (I0's as torch's; torch's I1' there is NaN): from
	// e^|x| of a branch of its own (times sign(x) for I1), while the scaled
	// product's e^|x| is kept finite there, so that neither branch's
	// gradient is Inf·0 = NaN.
	over := ax.Exp().IsInf().LogicalAnd(ax.IsFinite())
	zero := x.scalarLike(op, 0)
	inf := Where(over, ax, zero).Exp()
	if a.order == 1 {
		inf = inf.Mul(x.Sign())
	}
	return Where(over, inf, e.Mul(Where(over, zero, ax).Exp()))
}

// besselOp registers the composite of one of the four functions.
func besselOp(a besselAttrs) *dispatch.Op[dispatch.None] {
	return besselComposite(besselName(a), func(op string, x *Tensor) *Tensor { return besselI(op, x, a) })
}

// besselComposite registers the composite op name of one of the Bessel
// functions (this file's, ops_bessel_k.go's, ops_bessel_j.go's): f of x
// in float32 or float64, integers and bool promoted to float32 (as
// torch's), float16 and bfloat16 computed in float32 and rounded once.
func besselComposite(name string, f func(op string, x *Tensor) *Tensor) *dispatch.Op[dispatch.None] {
	return composite(name, []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		x := in[0]
		if !x.t.DType.IsFloat() {
			x = x.Cast(Float32) // torch's integer-to-float promotion
		}
		return inFloat32([]*Tensor{x}, func(in []*Tensor) *Tensor { return f(name, in[0]) })
	})
}

var (
	opI0  = besselOp(besselAttrs{order: 0})
	opI0e = besselOp(besselAttrs{order: 0, scaled: true})
	opI1  = besselOp(besselAttrs{order: 1})
	opI1e = besselOp(besselAttrs{order: 1, scaled: true})
)

// besselName is torch's name of the function a selects.
func besselName(a besselAttrs) string {
	switch {
	case a.order == 0 && !a.scaled:
		return "i0"
	case a.order == 0:
		return "special_i0e"
	case a.scaled:
		return "special_i1e"
	}
	return "special_i1"
}

// bessel checks x and runs op.
func (x *Tensor) bessel(op *dispatch.Op[dispatch.None]) *Tensor {
	if err := x.check(op.Name); err != nil {
		return failed(err)
	}
	return apply(op, none, x)
}

// I0 is the modified Bessel function of the first kind of order 0, as
// torch.i0 (torch.special.i0): Σ (x²/4)^k/(k!)². Integers and bool are
// promoted to float32, as torch's; float16 and bfloat16 are computed in
// float32 and rounded once (torch's cpu refuses float16). In float32 it
// overflows to +Inf for |x| past 88.72, and ±Inf gives NaN, as torch's.
// Where it overflows its gradient is ±Inf, as torch's.
func (x *Tensor) I0() *Tensor { return x.bessel(opI0) }

// I0e is the exponentially scaled modified Bessel function of order 0,
// e^-|x|·I0(x), as torch.special.i0e: finite for every finite x (±Inf
// gives 0). Dtypes as I0's.
func (x *Tensor) I0e() *Tensor { return x.bessel(opI0e) }

// I1 is the modified Bessel function of the first kind of order 1, as
// torch.special.i1: odd, I1'(0) = 1/2. Dtypes as I0's (torch's cpu also
// refuses bfloat16). It overflows to ±Inf where I0 does and ±Inf gives
// NaN, as torch's; where it overflows its gradient is +Inf, the limit
// (torch's is NaN, its formula I0 - I1/x giving Inf - Inf).
func (x *Tensor) I1() *Tensor { return x.bessel(opI1) }

// I1e is the exponentially scaled modified Bessel function of order 1,
// e^-|x|·I1(x), as torch.special.i1e (±Inf gives ±0). Dtypes as I1's.
func (x *Tensor) I1e() *Tensor { return x.bessel(opI1e) }
