package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// torch.special's functions of the normal distribution and their kin, as
// composites of lathe's ops (so that each runs on every device, and is
// differentiable to any order where torch is differentiable): erfcx,
// entr, ndtr, log_ndtr, ndtri and spherical_bessel_j0.
//
// Dtypes, for each: integers and bool are promoted to float32, as torch's;
// float16 and bfloat16 are computed in float32 and rounded once (torch's
// cpu refuses float16 for all of them and bfloat16 for most).
//
//   - erfcx(x) = exp(x²)·erfc(x). From 1.25 on it is exp(-0.5625 + R/S)/x
//     with fdlibm's rational R/S of erfc's tail (erfcTailRS), whose exp(-x²)
//     is taken out exactly, so that it neither underflows nor overflows up
//     to +Inf; below 1.25 it is exp(x²)·(1 - erf(x)), with x² split into
//     two parts (Dekker) so that exp(x²) keeps its digits up to where it
//     overflows (x < -26.6 in float64, -9.4 in float32, +Inf as torch's).
//   - log_ndtr is torch's formula: log(erfcx(-t)/2) - t² below x = -1,
//     log1p(-erfc(t)/2) above, t = x/√2.
//   - ndtri is Cephes's ndtri (torch's calc_ndtri): rational fits in
//     y - 1/2 in the middle and in 1/√(-2 ln y) in the tails.

// promotedFloat is x, an integer or bool one cast to float32 (torch's
// integer-to-float promotion of its special functions).
func promotedFloat(x *Tensor) *Tensor {
	if !x.DType().IsFloat() {
		return x.Cast(Float32)
	}
	return x
}

// specialUnary registers a composite of one tensor of any dtype, promoted
// to float32 where it is not a float and computed in float32 where it is
// a 16-bit one.
func specialUnary(name string, f func(x *Tensor) *Tensor) *dispatch.Op[dispatch.None] {
	return composite(name, []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
		return inFloat32([]*Tensor{promotedFloat(in[0])}, func(in []*Tensor) *Tensor { return f(in[0]) })
	})
}

// special checks x and runs op.
func (x *Tensor) special(op *dispatch.Op[dispatch.None]) *Tensor {
	if err := x.check(op.Name); err != nil {
		return failed(err)
	}
	return apply(op, none, x)
}

// squareSplit is x² as hi + lo, hi the rounded square and lo its
// rounding error (Dekker's split of x, whose halves multiply exactly),
// both from x detached; lo is 0 where hi is past 700 or not finite.
func squareSplit(x *Tensor) (hi, lo *Tensor) {
	split := 134217729.0 // 2^27 + 1
	if x.DType() != Float64 {
		split = 4097 // 2^12 + 1
	}
	xd := detached(x)
	c := xd.MulScalar(split)
	xh := c.Sub(c.Sub(xd))
	xl := xd.Sub(xh)
	hi = xd.Mul(xd)
	lo = xh.Mul(xh).Sub(hi).Add(xh.Mul(xl).MulScalar(2)).Add(xl.Mul(xl))
	lo = Where(hi.LtScalar(700), lo, x.scalarLike("exp", 0)) // where exp(x²) overflows (and at ±Inf): none
	return hi, lo
}

// expSquare is exp(x²) for finite x as exp(hi)·(1 + lo) (squareSplit):
// exp of the rounded square alone would be off by x²·ε relatively (7e-14
// at x = 26 in float64). Its derivative is exp(x²)·2x, lo's being 0.
func expSquare(x *Tensor) *Tensor {
	_, lo := squareSplit(x)
	return x.Mul(x).Exp().Mul(lo.AddScalar(1))
}

// erfcx is exp(x²)·erfc(x) of float32 or float64 x (see the file's
// comment).
func erfcx(x *Tensor) *Tensor {
	const op = "special_erfcx"
	low := x.LtScalar(1.25)
	xn := Where(low, x, x.scalarLike(op, 0))
	// Below -6 (float32: -4) erfc(x) is 2 to the last digit, and the
	// result 2·exp(x²), whose derivative stays right (-Inf, not Inf·0)
	// where exp(x²) overflows, and at -Inf.
	cut := -6.0
	if x.DType() != Float64 {
		cut = -4
	}
	far := xn.LtScalar(cut)
	xm := Where(far, x.scalarLike(op, 0), xn)
	near := Where(far, expSquare(xn).MulScalar(2), expSquare(xm).Mul(xm.Erf().Neg().AddScalar(1)))
	t := Where(low, x.scalarLike(op, 1.25), x) // +Inf goes here
	tail := erfcTailRS(t).AddScalar(-0.5625).Exp().Div(t)
	v := Where(low, near, tail)
	nan := x.IsNaN()
	xn = Where(nan, x, x.scalarLike(op, 0))
	return Where(nan, xn.Mul(xn), v) // NaN, with a NaN gradient
}

var (
	opErfcx = specialUnary("special_erfcx", erfcx)

	// entr is -x·ln x above 0, 0 at 0, -Inf below and NaN at NaN, as
	// torch's kernel.
	opEntr = specialUnary("special_entr", func(x *Tensor) *Tensor {
		const op = "special_entr"
		pos := x.GtScalar(0)
		xs := Where(pos, x, x.scalarLike(op, 1))
		v := xs.Mul(xs.Log()).Neg()
		rest := Where(x.EqScalar(0), x.scalarLike(op, 0), x.scalarLike(op, math.Inf(-1)))
		nan := x.IsNaN()
		xn := Where(nan, x, x.scalarLike(op, 0))
		rest = Where(nan, xn.Mul(xn).Mul(xn), rest) // NaN, with NaN derivatives
		return Where(pos, v, rest)
	})

	// ndtr is erfc(-x/√2)/2, which keeps its digits in the left tail.
	opNdtr = specialUnary("special_ndtr", func(x *Tensor) *Tensor {
		return x.MulScalar(-math.Sqrt2 / 2).Erfc().MulScalar(0.5)
	})

	opLogNdtr = specialUnary("special_log_ndtr", func(x *Tensor) *Tensor {
		const op = "special_log_ndtr"
		left := x.LtScalar(-1)
		t := x.MulScalar(math.Sqrt2 / 2)
		// Each branch's argument is harmless where the other is taken.
		tl := Where(left, t, t.scalarLike(op, -math.Sqrt2/2))
		tr := Where(left, t.scalarLike(op, 0), t)
		lv := erfcx(tl.Neg()).MulScalar(0.5).Log().Sub(tl.Mul(tl))
		rv := tr.Erfc().MulScalar(-0.5).Log1p()
		return Where(left, lv, rv)
	})

	opNdtri = specialUnary("special_ndtri", ndtri)

	// spherical_bessel_j0 is sin(x)/x, its Taylor series below 0.5 and 0
	// at ±Inf, as torch's.
	opSphericalBesselJ0 = specialUnary("special_spherical_bessel_j0", func(x *Tensor) *Tensor {
		const op = "special_spherical_bessel_j0"
		small := x.Abs().LtScalar(0.5)
		xs := Where(small, x, x.scalarLike(op, 0))
		series := horner(xs.Mul(xs), 1, -1.0/6, 1.0/120, -1.0/5040, 1.0/362880, -1.0/39916800, 1.0/6227020800)
		xl := Where(small.LogicalOr(x.IsInf()), x.scalarLike(op, 1), x)
		v := Where(small, series, xl.Sin().Div(xl))
		return Where(x.IsInf(), x.scalarLike(op, 0), v)
	})
)

// ndtri is Cephes's ndtri of y: -Inf at 0, +Inf at 1, NaN outside [0, 1]
// and at NaN.
func ndtri(y *Tensor) *Tensor {
	const op = "special_ndtri"
	const e2 = 0.13533528323661269189 // exp(-2)
	inside := y.GtScalar(0).LogicalAnd(y.LtScalar(1))
	ys := Where(inside, y, y.scalarLike(op, 0.5))
	upper := ys.GtScalar(1 - e2)
	yy := Where(upper, ys.Neg().AddScalar(1), ys)
	mid := yy.GtScalar(e2)
	// The middle: w = y - 1/2, x/√(2π) = w + w³·P0(w²)/Q0(w²).
	w := Where(mid, yy, yy.scalarLike(op, 0.5)).AddScalar(-0.5)
	w2 := w.Mul(w)
	p0 := horner(w2, -1.23916583867381258016e0, 1.39312609387279679503e1, -5.66762857469070293439e1,
		9.80010754185999661536e1, -5.99633501014107895267e1)
	q0 := horner(w2, -1.18331621121330003142e0, 1.59056225126211695515e1, -8.20372256168333339912e1,
		2.00260212380060660359e2, -2.25462687854119370527e2, 8.63602421390890590575e1,
		4.67627912898881538453e0, 1.95448858338141759834e0, 1)
	central := w.Add(w.Mul(w2.Mul(p0).Div(q0))).MulScalar(2.50662827463100050242e0)
	// The tails: z = √(-2 ln y), x = z - ln z/z - P(1/z)/Q(1/z)/z.
	yt := Where(mid, yy.scalarLike(op, e2), yy)
	z := yt.Log().MulScalar(-2).Sqrt()
	x0 := z.Sub(z.Log().Div(z))
	r := z.Reciprocal()
	p1 := horner(r, -8.57456785154685413611e-4, -3.50424626827848203418e-2, -1.40256079171354495875e-1,
		2.18663306850790267539e0, 1.46849561928858024014e1, 4.40805073893200834700e1,
		5.71628192246421288162e1, 3.15251094599893866154e1, 4.05544892305962419923e0)
	q1 := horner(r, -9.33259480895457427372e-4, -3.80806407691578277194e-2, -1.42182922854787788574e-1,
		2.50464946208309415979e0, 1.50425385692907503408e1, 4.13172038254672030440e1,
		4.53907635128879210584e1, 1.57799883256466749731e1, 1)
	p2 := horner(r, 6.23974539184983293730e-9, 2.65806974686737550832e-6, 3.01581553508235416007e-4,
		1.23716634817820021358e-2, 2.01485389549179081538e-1, 1.33303460815807542389e0,
		3.93881025292474443415e0, 6.91522889068984211695e0, 3.23774891776946035970e0)
	q2 := horner(r, 6.79019408009981274425e-9, 2.89247864745380683936e-6, 3.28014464682127739104e-4,
		1.34204006088543189037e-2, 2.16236993594496635890e-1, 1.37702099489081330271e0,
		3.67983563856160859403e0, 6.02427039364742014255e0, 1)
	x1 := Where(z.LtScalar(8), r.Mul(p1).Div(q1), r.Mul(p2).Div(q2))
	tail := x0.Sub(x1)
	tail = Where(upper, tail, tail.Neg())
	v := Where(mid, central, tail)
	// -Inf at 0 and +Inf at 1 with torch's gradients (+Inf, its formula's
	// √(2π)·exp(ndtri²/2)) from ln y and -ln(1 - y); NaN (and a NaN
	// gradient) outside [0, 1] from √(y(1 - y)). Each branch's argument is
	// harmless where it is not taken.
	half := y.scalarLike(op, 0.5)
	y0 := Where(y.EqScalar(0), y.AddScalar(0), half) // -0 as +0
	y1 := Where(y.EqScalar(1), y, half)
	out := y.GtScalar(1).LogicalOr(y.LtScalar(0)).LogicalOr(y.IsNaN())
	yo := Where(out, y, half)
	edge := Where(y.EqScalar(0), y0.Log(), Where(y.EqScalar(1), y1.Neg().AddScalar(1).Log().Neg(), yo.Mul(yo.Neg().AddScalar(1)).Sqrt()))
	return Where(inside, v, edge)
}

// Erfcx is the scaled complementary error function exp(x²)·erfc(x), as
// torch.special.erfcx: accurate where exp(x²) overflows and erfc(x)
// underflows (erfcx(1e10) is 5.6e-11, and 0 at +Inf); +Inf where exp(x²)
// overflows for negative x (x < -26.6 in float64, -9.4 in float32) and
// at -Inf. Its gradient is 2x·erfcx(x) - 2/√π. Dtypes as Ndtr's.
func (x *Tensor) Erfcx() *Tensor { return x.special(opErfcx) }

// Entr is the elementwise entropy -x·ln x, as torch.special.entr: 0 at 0,
// -Inf below 0, NaN at NaN. Its gradient is -(1 + ln x) above 0 (NaN at
// NaN, as torch's); at and below 0 it is 0, where torch's formula gives
// +Inf at 0 and NaN below, and at +Inf it is NaN (torch's -Inf). Dtypes
// as Ndtr's.
func (x *Tensor) Entr() *Tensor { return x.special(opEntr) }

// Ndtr is the standard normal distribution function ∫_{-∞}^x e^(-t²/2)
// dt/√(2π), as torch.special.ndtr, computed as erfc(-x/√2)/2 so that the
// left tail keeps its digits (ndtr(-30) is 4.9e-198 in float64), which
// torch 1.13's (1 + erf(x/√2))/2 loses (0 from -9.3 in float64; 4% off at
// -5 in float32). Integers
// and bool are promoted to float32, as torch's; float16 and bfloat16 are
// computed in float32 and rounded once (torch's cpu refuses float16).
func (x *Tensor) Ndtr() *Tensor { return x.special(opNdtr) }

// LogNdtr is the log of Ndtr, as torch.special.log_ndtr, accurate far in
// the left tail (log_ndtr(-1e3) is -500007.83, where the log of Ndtr would
// be -Inf): log(erfcx(-x/√2)/2) - x²/2 below -1, log1p(-erfc(x/√2)/2)
// above, torch's formula. Dtypes as Ndtr's.
func (x *Tensor) LogNdtr() *Tensor { return x.special(opLogNdtr) }

// Ndtri is the inverse of Ndtr on (0, 1), as torch.special.ndtri (Cephes's
// ndtri): -Inf at 0, +Inf at 1, NaN outside [0, 1]. Its gradient is
// √(2π)·exp(ndtri(p)²/2), from the rational fits differentiated. Above
// 1 - e^-2 it works from 1 - p, as torch's, so that p near 1 has the
// digits that 1 - p keeps. Dtypes as Ndtr's.
func (x *Tensor) Ndtri() *Tensor { return x.special(opNdtri) }

// SphericalBesselJ0 is the spherical Bessel function of the first kind
// of order 0, sin(x)/x (1 at 0, 0 at ±Inf), as
// torch.special.spherical_bessel_j0. Unlike torch's, which records no
// gradient, it is differentiable. Dtypes as Ndtr's.
func (x *Tensor) SphericalBesselJ0() *Tensor { return x.special(opSphericalBesselJ0) }

// nextafterParams are a float dtype's precision (significant bits with the
// implicit one), least subnormal and largest finite value.
func nextafterParams(dt DType) (p, least, largest float64) {
	switch dt {
	case Float64:
		return 53, math.SmallestNonzeroFloat64, math.MaxFloat64
	case Float16:
		return 11, math.Ldexp(1, -24), 65504
	case BFloat16:
		return 8, math.Ldexp(1, -133), math.Ldexp(255, 120)
	}
	return 24, math.SmallestNonzeroFloat32, math.MaxFloat32
}

// opNextafter steps x one value of its dtype towards y: ±ulp(x), half that
// where x is a power of 2 stepped towards 0, at least the least subnormal,
// each of which x + step holds exactly. A 16-bit x is stepped in float32
// with its own dtype's ulp, which float32 holds exactly.
var opNextafter = binaryMath("nextafter", []string{"x", "other"}, false, func(x, y *Tensor) *Tensor {
	const op = "nextafter"
	dt := x.DType()
	p, least, largest := nextafterParams(dt)
	x, y = detached(x), detached(y) // no gradient, as torch's
	if dt == Float16 || dt == BFloat16 {
		x, y = x.Cast(Float32), y.Cast(Float32)
	}
	m, e := frexp(x)
	ef := e.Cast(x.DType())
	up := y.Gt(x)
	two := x.scalarLike(op, 2)
	step := two.Pow(ef.SubScalar(p))
	towardZero := x.GtScalar(0).LogicalXor(up)
	step = Where(towardZero.LogicalAnd(m.Abs().EqScalar(0.5)), step.MulScalar(0.5), step)
	step = step.Maximum(x.scalarLike(op, least))
	sgn := Where(up, x.scalarLike(op, 1), x.scalarLike(op, -1))
	v := x.Add(sgn.Mul(step))
	v = Where(v.EqScalar(0), x.MulScalar(0), v) // from -least up: -0, as torch's
	v = Where(x.EqScalar(0), sgn.MulScalar(least), v)
	v = Where(x.IsInf(), x.Sign().MulScalar(largest), v)
	v = Where(x.Eq(y), y, v)
	v = Where(x.IsNaN().LogicalOr(y.IsNaN()), x.Add(y), v)
	return v.Cast(dt)
})

// Nextafter is the next value of x's dtype after x towards other, as
// torch.nextafter(x, other): other where they are equal, NaN where either
// is, ±the least subnormal from 0, ±the largest finite value from ±Inf.
// Bit-exact in float32 and float64; float16 and bfloat16 step by their
// own dtype's ulp (torch's cpu refuses float16). Broadcast and promoted
// as Div; integers and bool alone are ErrDType, as torch's. It has no
// gradient (torch's refuses one). On a device that flushes subnormals
// (some GPUs, lavapipe), steps into or through the subnormals give 0.
func (x *Tensor) Nextafter(other *Tensor) *Tensor {
	const op = "nextafter"
	dt, err := mathPair(op, "other", x, other, ops.Div)
	if err != nil {
		return failed(err)
	}
	if !x.t.DType.IsFloat() && !other.t.DType.IsFloat() {
		return failed(errorf(op, ErrDType, "x", "is "+x.t.DType.String()+" and other "+other.t.DType.String()+
			", but nextafter steps between float values (torch's refuses integers)", "cast one of them with .Cast(lathe.Float32) first"))
	}
	return apply(opNextafter, dt, x, other)
}
