package cpu

import "math"

// The regularized incomplete gamma functions P(a, x) = γ(a, x)/Γ(a)
// (torch's igamma, special.gammainc) and Q(a, x) = 1 - P (igammac,
// special.gammaincc), in float64, which float32 and the 16-bit floats are
// computed in and rounded from once. The algorithm is torch's (SciPy's,
// from Cephes's igam.c and Boost's Lanczos sum), as the cuda
// (kernels/cuda/igamma.cuh) and wgpu (kernels/wgsl/igamma.wgsl) kernels
// write it: Temme's uniform expansion where a is large and x near it, else
// a power series or a continued fraction, whichever converges and does not
// cancel, each bounded at 2000 terms.

// The constants of the choice between methods and of their stopping rule.
const (
	igammaMachEp   = 1.11022302462515654042e-16 // 2^-53
	igammaMaxIter  = 2000
	temmeSmallA    = 20.0  // Temme's expansion for 20 < a < 200 ...
	temmeLargeA    = 200.0 // ... where |x - a|/a < 0.3,
	temmeNear      = 0.3   // and for a > 200 where
	temmeLargeNear = 4.5   // |x - a|/a < 4.5/√a
	lanczosG       = 6.024680040776729583740234375
)

// igamma is P(a, x).
func igamma(a, x float64) float64 { return incompleteGamma(a, x, false) }

// igammac is Q(a, x).
func igammac(a, x float64) float64 { return incompleteGamma(a, x, true) }

// incompleteGamma is Q(a, x) if upper, else P(a, x). Its values at the
// edges of the domain are torch's: NaN for a < 0 or x < 0, and where a and
// x are both 0 or both +Inf; P(0, x > 0) = 1; P(a, 0) = 0; P(+Inf, x) = 0;
// P(a, +Inf) = 1 (Q the complement of each).
func incompleteGamma(a, x float64, upper bool) float64 {
	p := func(v float64) float64 { // v as P, returned as the function asked for
		if upper {
			return 1 - v
		}
		return v
	}
	switch {
	case math.IsNaN(a) || math.IsNaN(x) || a < 0 || x < 0:
		return math.NaN()
	case a == 0:
		if x > 0 {
			return p(1)
		}
		return math.NaN()
	case x == 0:
		return p(0)
	case math.IsInf(a, 1):
		if math.IsInf(x, 1) {
			return math.NaN()
		}
		return p(0)
	case math.IsInf(x, 1):
		return p(1)
	}
	var v float64
	switch near := math.Abs(x-a) / a; {
	case (a > temmeSmallA && a < temmeLargeA && near < temmeNear) || (a > temmeLargeA && near < temmeLargeNear/math.Sqrt(a)):
		v = temmeExpansion(a, x, upper)
	case upper:
		v = upperGamma(a, x)
	case x > 1 && x > a:
		v = 1 - upperGamma(a, x)
	default:
		v = lowerSeries(a, x)
	}
	// A probability: the sums' last rounding can pass 1 by an ulp
	// (P(1e-300, 1)), or a difference fall below 0 by one.
	return math.Max(0, math.Min(v, 1))
}

// upperGamma is Q(a, x) outside Temme's region: the continued fraction
// where x is large beside a, the series of Q itself where x is small (so
// that 1 - P does not cancel), and 1 - P's series elsewhere.
func upperGamma(a, x float64) float64 {
	var fromP bool
	switch {
	case x > 1.1:
		if x >= a {
			return upperContinuedFraction(a, x)
		}
		fromP = true
	case x <= 0.5:
		fromP = -0.4/math.Log(x) < a
	default:
		fromP = x*1.1 < a
	}
	if fromP {
		return 1 - lowerSeries(a, x)
	}
	return upperSeries(a, x)
}

// lowerSeries is P(a, x) = x^a e^-x/Γ(a+1) · Σ_n x^n/((a+1)...(a+n))
// (DLMF 8.11.4).
func lowerSeries(a, x float64) float64 {
	// x^a e^-x/Γ(a+1): where x is far from a, through lgamma1p, which keeps
	// the digits of Γ(1 + a) for a tiny a that Γ(a)·a would lose.
	var f float64
	if math.Abs(a-x) > 0.4*a {
		f = expFar(a*math.Log(x) - x - lgamma1p(a))
	} else {
		f = powerFactor(a, x) / a
	}
	if f == 0 {
		return 0
	}
	r, c, sum := a, 1.0, 1.0
	for range igammaMaxIter {
		r++
		c *= x / r
		sum += c
		if c <= igammaMachEp*sum {
			break
		}
	}
	return sum * f
}

// upperSeries is Q(a, x) as 1 - x^a/Γ(a+1) + x^a/Γ(a) · Σ_{n≥1} (-x)^n/(n!(a+n))
// (DLMF 8.7.3), its first part by expm1 so that a small x keeps its digits.
func upperSeries(a, x float64) float64 {
	fac, sum := 1.0, 0.0
	for n := 1.0; n < igammaMaxIter; n++ {
		fac *= -x / n
		term := fac / (a + n)
		sum += term
		if math.Abs(term) <= igammaMachEp*math.Abs(sum) {
			break
		}
	}
	logx := math.Log(x)
	return -math.Expm1(a*logx-lgamma1p(a)) - math.Exp(a*logx-lgammaF(a))*sum
}

// lgamma1p is ln Γ(1 + a) for a ≥ 0, by its Taylor series -γa + Σ_{k≥2}
// (-1)^k ζ(k)/k·a^k where a < 1/100 (to a^8, 2e-17 of the value), where
// 1 + a would round a's digits away (torch's lgamma(1 + a) is 0 at a =
// 1e-300, which makes Q(1e-300, 1) 3.6 times too large).
func lgamma1p(a float64) float64 {
	if a >= 0.01 {
		return lgammaF(1 + a)
	}
	// ζ(k)/k for k = 8 down to 2, then γ.
	const z8, z7, z6, z5, z4, z3, z2 = 1.0040773561979443 / 8, 1.0083492773819228 / 7, 1.0173430619844491 / 6,
		1.0369277551433699 / 5, 1.0823232337111382 / 4, 1.2020569031595943 / 3, 1.6449340668482264 / 2
	return a * (-0.5772156649015329 + a*(z2+a*(-z3+a*(z4+a*(-z5+a*(z6+a*(-z7+a*z8)))))))
}

// log1pmx is ln(1 + s) - s, which cancels where s is small: there (|s| <
// 0.3, where Temme's expansion and the Lanczos form use it) its series
// -s²/2 + s³/3 - ..., whose terms fall below 2^-53 of the sum within 40.
func log1pmx(s float64) float64 {
	if math.Abs(s) >= 0.3 {
		return math.Log1p(s) - s
	}
	power, sum := s, 0.0
	for n := 2.0; n <= 40; n++ {
		power *= -s
		term := power / n
		sum += term
		if math.Abs(term) < igammaMachEp*math.Abs(sum) {
			break
		}
	}
	return sum
}

// upperContinuedFraction is Q(a, x) by the continued fraction of
// Γ(a, x) (DLMF 8.9.2), as Cephes's igamc evaluates it: the convergents'
// numerators and denominators by their recurrence, rescaled together
// when they grow past 2^52.
func upperContinuedFraction(a, x float64) float64 {
	const big, bigInv = 4.503599627370496e15, 2.22044604925031308085e-16
	f := powerFactor(a, x)
	if f == 0 {
		return 0
	}
	y := 1 - a
	z := x + y + 1
	c := 0.0
	pkm2, qkm2 := 1.0, x
	pkm1, qkm1 := x+1, z*x
	ans := pkm1 / qkm1
	for range igammaMaxIter {
		c++
		y++
		z += 2
		yc := y * c
		pk := pkm1*z - pkm2*yc
		qk := qkm1*z - qkm2*yc
		t := 1.0
		if qk != 0 {
			r := pk / qk
			t = math.Abs((ans - r) / r)
			ans = r
		}
		pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
		if math.Abs(pk) > big {
			pkm2 *= bigInv
			pkm1 *= bigInv
			qkm2 *= bigInv
			qkm1 *= bigInv
		}
		if t <= igammaMachEp {
			break
		}
	}
	return ans * f
}

// powerFactor is x^a e^-x/Γ(a), the factor both methods share. Where x is
// near a, x^a e^-x and Γ(a) are each far past float64's range for a large
// a while their quotient is not: there it is Boost's form with the
// Lanczos sum, √((a+g-½)/e)/L(a) · e^(a-x)·(x/(a+g-½))^a, and past 200
// that last product as one exponential through log1p.
func powerFactor(a, x float64) float64 {
	if math.Abs(a-x) > 0.4*a {
		return expFar(a*math.Log(x) - x - lgammaF(a))
	}
	fac := a + lanczosG - 0.5
	res := math.Sqrt(fac/math.E) / lanczosSumExpGScaled(a)
	if a < 200 && x < 200 {
		return res * math.Exp(a-x) * math.Pow(x/fac, a)
	}
	num := (x - a - lanczosG + 0.5) / fac
	return res * math.Exp(a*log1pmx(num)+x*(0.5-lanczosG)/fac)
}

// expFar is e^e for the exponent a·ln x - x - ln Γ(a) (or Γ(a+1)) where
// x is far from a: 0 where it is Inf - Inf, as for an a near the dtype's
// largest and an x above 1, whose a·ln x and ln Γ(a) both overflow while
// the factor itself is far below the smallest float (torch's is NaN there).
func expFar(e float64) float64 {
	if math.IsNaN(e) {
		return 0
	}
	return math.Exp(e)
}

// The Lanczos sum's rational function, scaled by e^g (Boost's
// lanczos13m53, as SciPy's lanczos_sum_expg_scaled), highest degree first: the
// denominator is a(a+1)...(a+11).
var (
	lanczosNum = [13]float64{0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
		19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
		6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
		601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
		14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
		86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
		56906521.91347156388090791033559122686859}
	lanczosDenom = [13]float64{1, 66, 1925, 32670, 357423, 2637558, 13339535, 45995730, 105258076, 150917976,
		120543840, 39916800, 0}
)

// lanczosSumExpGScaled is that rational function at a > 0: in a where
// a ≤ 1, else in 1/a (numerator and denominator have the same degree, so
// no power of a is left over).
func lanczosSumExpGScaled(a float64) float64 {
	var num, den float64
	if a <= 1 {
		for i := range lanczosNum {
			num = num*a + lanczosNum[i]
			den = den*a + lanczosDenom[i]
		}
		return num / den
	}
	y := 1 / a
	for i := len(lanczosNum) - 1; i >= 0; i-- {
		num = num*y + lanczosNum[i]
		den = den*y + lanczosDenom[i]
	}
	return num / den
}

// temmeExpansion is Q(a, x) (P if !upper) by Temme's uniform expansion
// (DLMF 8.12.3, 8.12.4): erfc(±η√(a/2))/2 ∓ e^(-aη²/2)/√(2πa) · Σ_k
// c_k(η)/a^k, with η²/2 = λ - 1 - ln λ, λ = x/a, and c_k(η) = Σ_n
// temme[k][n]·η^n (igamma_temme.go, build/igamma/temme.py). Each sum stops
// where its terms fall below the rounding; the outer one also where they
// start to grow, as an asymptotic series must.
func temmeExpansion(a, x float64, upper bool) float64 {
	sign := 1.0
	if !upper {
		sign = -1
	}
	sigma := (x - a) / a
	eta := math.Sqrt(-2 * log1pmx(sigma))
	if x < a {
		eta = -eta
	}
	sum, scale, last := 0.0, 1.0, math.Inf(1)
	for k := range temme {
		ck, power := temme[k][0], 1.0
		for n := 1; n < len(temme[k]); n++ {
			power *= eta
			term := temme[k][n] * power
			ck += term
			if math.Abs(term) < igammaMachEp*math.Abs(ck) {
				break
			}
		}
		term := ck * scale
		if math.Abs(term) > last {
			break
		}
		sum += term
		if math.Abs(term) < igammaMachEp*math.Abs(sum) {
			break
		}
		last = math.Abs(term)
		scale /= a
	}
	return 0.5*math.Erfc(sign*eta*math.Sqrt(a/2)) + sign*math.Exp(-0.5*a*eta*eta)*sum/math.Sqrt(2*math.Pi*a)
}
