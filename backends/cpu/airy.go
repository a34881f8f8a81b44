package cpu

import "math"

// airyAi is Ai(x) (dispatch/ops/airy.go), as cuda's airy.cuh and wgpu's
// airy.wgsl compute it: the modulus and phase forms below -2.09, the
// Maclaurin series up to 2.09 and the rational form in 1/ζ from there,
// with Cephes's tables (airy_tables.go, monic where Cephes's are).
func airyAi(x float64) float64 { v, _ := airy(x); return v }

// airyAiPrime is Ai'(x), the same forms differentiated.
func airyAiPrime(x float64) float64 { _, d := airy(x); return d }

// airy is Ai(x) and Ai'(x). Each branch's derivative is its form's: the
// series term by term, and the rational forms by the quotient rule on
// their polynomials (hornerD), through ζ' = ±√|x|.
func airy(x float64) (float64, float64) {
	const invSqrtPi = 0.564189583547756286948 // 1/√π
	switch {
	case math.IsNaN(x):
		return x, x
	case x > 103.892: // below the smallest float64 from 103.9; +Inf too
		return 0, 0
	case x < -2.09:
		u := -x
		zeta := 2 * u * math.Sqrt(u) / 3
		if zeta >= 0x1p52 { // the phase ζ + π/4 keeps no digit: from x = -2.6e10, -Inf too
			return 0, 0
		}
		// Ai = a·(sin θ·U - cos θ·V), a = u^-1/4/√π, θ = ζ + π/4,
		// U = 1 + z²·F(z²), V = z·G(z²), z = 1/ζ; d/dx: ζ' = θ' = -√u,
		// z' = √u·z², a' = a/(4u).
		z := 1 / zeta
		zz := z * z
		fn, dfn := hornerD(airyAFN[:], zz)
		fd, dfd := hornerD(airyAFD[:], zz)
		gn, dgn := hornerD(airyAGN[:], zz)
		gd, dgd := hornerD(airyAGD[:], zz)
		f, g := fn/fd, gn/gd
		df, dg := (dfn*fd-fn*dfd)/(fd*fd), (dgn*gd-gn*dgd)/(gd*gd)
		up, vp := 1+zz*f, z*g
		dz := math.Sqrt(u) * zz
		dzz := 2 * z * dz
		dup, dvp := (f+zz*df)*dzz, g*dz+z*dg*dzz
		a := invSqrtPi / math.Sqrt(math.Sqrt(u))
		s, c := math.Sincos(zeta + math.Pi/4)
		v := a * (s*up - c*vp)
		return v, v/(4*u) + a*(-math.Sqrt(u)*(c*up+s*vp)+s*dup-c*dvp)
	case x >= 2.09:
		// Ai = R(w)·x^-1/4·e^-ζ/(2√π), R = AN/AD, w = 1/ζ; Ai'/Ai =
		// -(R'/R)·√x·w² - 1/(4x) - √x.
		zeta := 2 * x * math.Sqrt(x) / 3
		w := 1 / zeta
		an, dan := hornerD(airyAN[:], w)
		ad, dad := hornerD(airyAD[:], w)
		v := invSqrtPi * (an / ad) / (2 * math.Sqrt(math.Sqrt(x)) * math.Exp(zeta))
		rx := math.Sqrt(x)
		return v, v * (-(dan/an-dad/ad)*rx*w*w - 1/(4*x) - rx)
	}
	// Ai(x) = Ai(0)·f(x) + Ai'(0)·g(x), f and g the series of 1 and x in
	// x³, to float64's resolution: 20 terms at most for |x| < 2.09. Their
	// derivatives' terms are the terms before them times x²/(3j-1) and
	// x²/(3j).
	f, g, m, n, k := 1.0, x, 1.0, x, 1.0
	df, dg := 0.0, 1.0
	z, xx := x*x*x, x*x
	for i := 0; i < 40 && math.Abs(m/f) > 0x1p-53; i++ {
		df += m * xx / (k + 1)
		dg += n * xx / (k + 2)
		m *= z / ((k + 1) * (k + 2))
		n *= z / ((k + 2) * (k + 3))
		f += m
		g += n
		k += 3
	}
	const ai0, aip0 = 0.355028053887817239260, 0.258819403792806798405 // Ai(0), -Ai'(0)
	return ai0*f - aip0*g, ai0*df - aip0*dg
}

// hornerD is the polynomial with coefficients c, highest power first, at
// z, and its derivative.
func hornerD(c []float64, z float64) (float64, float64) {
	r, d := 0.0, 0.0
	for _, v := range c {
		d = d*z + r
		r = r*z + v
	}
	return r, d
}
