package cpu

import "math"

// A float32 erf for the cpu's float32 kernels (erf, gelu and, through erf,
// gelu's gradient). math.Erf is a float64 routine with an exp inside; in
// float32 GELU it was about a quarter of a GPT training step. Here erf is
// x·p(|x| - mid), p one of four degree-10 polynomials picked by int(|x|)
// (build/erf32/fit.py), evaluated in float64 with a relative error under
// 1.2e-10, far below float32's half ulp: rounded to float32 it is within
// 1 ulp of float64 math.Erf rounded to float32, over every float32 input
// (erf32_test.go). The piece is an index, not a branch, and Estrin's
// scheme keeps the dependency chain short: on data of both signs and
// several sizes, branches and a long Horner chain cost more than the
// arithmetic. Runs go through the same arithmetic in C (shim.c) where the
// machine has AVX2: the Go loop, a call per element without FMA, is about
// 5× slower. float64 keeps math.Erf.

// erfPiece is one polynomial; shim.c reads the table as 12 doubles a piece.
type erfPiece struct {
	mid float64
	c   [11]float64 // lowest power first
}

// erf64Poly is erf(x) from the fitted polynomials, in float64, for the
// float32 kernels that go on computing in float64 (gelu).
func erf64Poly(x float64) float64 {
	a := math.Abs(x)
	if !(a < erf32Saturate) { // rare on real data, so well predicted
		if a != a {
			return x // NaN
		}
		return math.Copysign(1, x)
	}
	p := &erf32Pieces[int(a)]
	t := a - p.mid
	c := &p.c
	t2 := t * t
	t4 := t2 * t2
	lo := (c[0] + c[1]*t) + (c[2]+c[3]*t)*t2 + ((c[4]+c[5]*t)+(c[6]+c[7]*t)*t2)*t4
	hi := (c[8] + c[9]*t) + c[10]*t2
	return x * (lo + hi*(t4*t4))
}

func erf32(x float32) float32 { return float32(erf64Poly(float64(x))) }

// sqrt32 is float64's square root rounded to float32, which is float32's
// correctly rounded one: sqrtRows' C loop gives the same bits.
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// exp32f is e^x in float64, rounded once: the short runs' and machines
// without AVX2. Longer runs take shim.c's expf8, float32 lanes within 2
// ulps of it (TestExpRows).
func exp32f(x float32) float32 { return float32(math.Exp(float64(x))) }

// gelu32 is x·Φ(x) = x/2·erfc(-x/√2) in float64, rounded once: the short
// runs' and machines without AVX2. (1 + erf(x/√2) is 0 in float64 below
// x ≈ -8.3 and in float32's erf below -5.54, where GELU is still a normal
// float32.) Longer runs take shim.c's gelu8, in float32 lanes from the
// normal tail, within a few ulps of this (TestGeluRows states the bound).
func gelu32(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * math.Erfc(-v*(1/math.Sqrt2)))
}

// The float32 row loops: the C loop where it runs (long runs, on a machine
// with AVX2), the per-element function otherwise.
var (
	erfRows  = rowsOf(func(dst, src []float32) bool { return erfRowFloat32(dst, src, false) }, erf32)
	geluRows = rowsOf(func(dst, src []float32) bool { return erfRowFloat32(dst, src, true) }, gelu32)
	expRows  = rowsOf(expFloat32, exp32f)
	sqrtRows = rowsOf(sqrtFloat32, sqrt32)
)

// rowsOf is a row loop: vec, which reports whether it ran, else f per
// element.
func rowsOf(vec func(dst, src []float32) bool, f func(float32) float32) func(dst, src []float32) {
	return func(dst, src []float32) {
		if vec(dst, src) {
			return
		}
		src = src[:len(dst)]
		for i, v := range src {
			dst[i] = f(v)
		}
	}
}

// Coefficients: the output of build/erf32/fit.py.

// erf32Saturate: float32 erf(x) rounds to ±1 from here on.
const erf32Saturate = 3.9192058434061727

// erf32Pieces: erf(a)/a on [i, i+1) (the last ends at erf32Saturate).
var erf32Pieces = [...]erfPiece{
	{mid: 0.5, c: [11]float64{ // relative error 1.1e-10
		1.0409997556337747,
		-0.3244343511276068,
		-0.22991387439236927,
		0.1669000371563776,
		0.032359075891940856,
		-0.05006749600360001,
		5.7774348558289077e-05,
		0.01065376904883998,
		-0.0012734473523434767,
		-0.0016074624800828559,
		0.000330169086303099,
	}},
	{mid: 1.5, c: [11]float64{ // relative error 2.4e-11
		0.6440700976462533,
		-0.3500932054306069,
		0.11446518232821212,
		0.016191200055183323,
		-0.04052676912150524,
		0.017107302294438964,
		0.0014803915196838833,
		-0.0041516762885540496,
		0.0011833810744852535,
		0.00036057841516254845,
		-0.00026739953256085184,
	}},
	{mid: 2.5, c: [11]float64{ // relative error 1.9e-11
		0.3998372191930631,
		-0.15906357412286062,
		0.06144714535230929,
		-0.021238811257276603,
		0.005046579399131153,
		0.00042805828731246986,
		-0.00129072691520489,
		0.0007355552562559208,
		-0.00018898279997090565,
		-3.389939379276826e-05,
		4.121649306188992e-05,
	}},
	{mid: 3.46, c: [11]float64{ // relative error 7.1e-13
		0.2890170542771022,
		-0.08352887905795288,
		0.02413416180435187,
		-0.006959426048532128,
		0.0019864977622877965,
		-0.0005443932439402411,
		0.0001296940138016101,
		-1.7353894890976502e-05,
		-6.59979158367091e-06,
		7.472350002397862e-06,
		-3.437952395787524e-06,
	}},
}
