package cpu

import "math"

// airyAi is Ai(x) (dispatch/ops/airy.go), as cuda's airy.cuh and wgpu's
// airy.wgsl compute it: the modulus and phase forms below -2.09, the
// Maclaurin series up to 2.09 and the rational form in 1/ζ from there,
// with Cephes's tables (airy_tables.go, monic where Cephes's are).
func airyAi(x float64) float64 {
	const invSqrtPi = 0.564189583547756286948 // 1/√π
	switch {
	case math.IsNaN(x):
		return x
	case x > 103.892: // below the smallest float64 from 103.9; +Inf too
		return 0
	case x < -2.09:
		zeta := -2 * x * math.Sqrt(-x) / 3
		if zeta >= 0x1p52 { // the phase ζ + π/4 keeps no digit: from x = -2.6e10, -Inf too
			return 0
		}
		z := 1 / zeta
		zz := z * z
		uf := 1 + zz*horner(airyAFN[:], zz)/horner(airyAFD[:], zz)
		ug := z * horner(airyAGN[:], zz) / horner(airyAGD[:], zz)
		t := zeta + math.Pi/4
		return invSqrtPi / math.Sqrt(math.Sqrt(-x)) * (math.Sin(t)*uf - math.Cos(t)*ug)
	case x >= 2.09:
		zeta := 2 * x * math.Sqrt(x) / 3
		r := horner(airyAN[:], 1/zeta) / horner(airyAD[:], 1/zeta)
		return invSqrtPi * r / (2 * math.Sqrt(math.Sqrt(x)) * math.Exp(zeta))
	}
	// Ai(x) = Ai(0)·f(x) + Ai'(0)·g(x), f and g the series of 1 and x in
	// x³, to float64's resolution: 20 terms at most for |x| < 2.09.
	f, g, m, n, k := 1.0, x, 1.0, x, 1.0
	z := x * x * x
	for i := 0; i < 40 && math.Abs(m/f) > 0x1p-53; i++ {
		m *= z / ((k + 1) * (k + 2))
		n *= z / ((k + 2) * (k + 3))
		f += m
		g += n
		k += 3
	}
	return 0.355028053887817239260*f - 0.258819403792806798405*g
}

// horner is the polynomial with coefficients c, highest power first, at z.
func horner(c []float64, z float64) float64 {
	r := 0.0
	for _, v := range c {
		r = r*z + v
	}
	return r
}
