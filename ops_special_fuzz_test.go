package lathe

import (
	"math"
	"strconv"
	"testing"
)

// FuzzSpecialLinalg is FuzzMathMore for the functions added after it: the
// torch.special ones (erfcx to zeta, the Bessel functions, polygamma and
// multigammaln, whose order is drawn from the parameter, NaN and huge
// ones too) and the LU family with the other newer linear algebra (pdist
// to lstsq with a driver). Its oracle is FuzzMathMore's: nothing panics, an
// error is a *lathe.Error of one of the kinds, wgpu:0 refuses what the
// cpu refuses and gives its values for moderate operands of the
// elementwise functions; the linear algebra is held to the first promise
// on each device alone.
func FuzzSpecialLinalg(f *testing.F) {
	f.Add([]byte{0, 0, 3, 2, 2, 1, 0, 7, 19, 40, 3, 12, 9, 0, 1, 0})
	f.Add([]byte{0, 1, 2, 3, 0, 3, 9, 33, 2, 61, 17, 5, 8, 44, 0, 2, 1, 1})
	f.Add([]byte{0, 0, 1, 1, 3, 1, 11, 1, 12, 250, 7, 3, 29, 5})
	f.Add([]byte{1, 0, 3, 0, 2, 1, 0, 5, 22, 14, 1, 0, 3, 9, 2, 8, 41, 1, 0})
	f.Add([]byte{1, 1, 2, 1, 1, 0, 3, 17, 4, 36, 2, 1, 7, 0, 4, 1, 3, 2, 2})
	f.Add([]byte{1, 2, 4, 0, 1, 1, 1, 9, 2, 8, 1, 7, 0, 9, 3, 4, 5, 6, 7})
	f.Add([]byte{1, 3, 3, 1, 0, 0, 2, 3, 4, 5, 6, 1, 10, 11, 12, 13, 0, 0})
	fzGPUFor(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		if r.intn(2) == 0 {
			fuzzElementwise(t, r, fzSpecialUnary, fzSpecialBinary)
			return
		}
		fuzzLinalgNewer(t, r)
	})
}

// order is a function's integer order from a drawn parameter, whatever
// the float: Go's conversion of NaN or of one past int's range gives an
// int all the same, which the function must refuse or compute.
func order(p float64) int { return int(p) }

var fzSpecialUnary = []fzUnary{
	{"erfcx", func(x *Tensor, _ float64) *Tensor { return x.Erfcx() }},
	{"entr", func(x *Tensor, _ float64) *Tensor { return x.Entr() }},
	{"ndtr", func(x *Tensor, _ float64) *Tensor { return x.Ndtr() }},
	{"log_ndtr", func(x *Tensor, _ float64) *Tensor { return x.LogNdtr() }},
	{"ndtri", func(x *Tensor, _ float64) *Tensor { return x.Ndtri() }},
	{"spherical_bessel_j0", func(x *Tensor, _ float64) *Tensor { return x.SphericalBesselJ0() }},
	{"i0", func(x *Tensor, _ float64) *Tensor { return x.I0() }},
	{"i0e", func(x *Tensor, _ float64) *Tensor { return x.I0e() }},
	{"i1", func(x *Tensor, _ float64) *Tensor { return x.I1() }},
	{"i1e", func(x *Tensor, _ float64) *Tensor { return x.I1e() }},
	{"polygamma", func(x *Tensor, p float64) *Tensor { return x.Polygamma(order(p)) }},
	{"multigammaln", func(x *Tensor, p float64) *Tensor { return x.Multigammaln(order(p)) }},
	{"modified_bessel_k0", func(x *Tensor, _ float64) *Tensor { return x.ModifiedBesselK0() }},
	{"modified_bessel_k1", func(x *Tensor, _ float64) *Tensor { return x.ModifiedBesselK1() }},
	{"scaled_modified_bessel_k0", func(x *Tensor, _ float64) *Tensor { return x.ScaledModifiedBesselK0() }},
	{"scaled_modified_bessel_k1", func(x *Tensor, _ float64) *Tensor { return x.ScaledModifiedBesselK1() }},
	{"bessel_j0", func(x *Tensor, _ float64) *Tensor { return x.BesselJ0() }},
	{"bessel_j1", func(x *Tensor, _ float64) *Tensor { return x.BesselJ1() }},
	{"bessel_y0", func(x *Tensor, _ float64) *Tensor { return x.BesselY0() }},
	{"bessel_y1", func(x *Tensor, _ float64) *Tensor { return x.BesselY1() }},
	{"chebyshev_polynomial_t", polyFuzz((*Tensor).ChebyshevPolynomialT)},
	{"chebyshev_polynomial_u", polyFuzz((*Tensor).ChebyshevPolynomialU)},
	{"chebyshev_polynomial_v", polyFuzz((*Tensor).ChebyshevPolynomialV)},
	{"chebyshev_polynomial_w", polyFuzz((*Tensor).ChebyshevPolynomialW)},
	{"shifted_chebyshev_polynomial_t", polyFuzz((*Tensor).ShiftedChebyshevPolynomialT)},
	{"shifted_chebyshev_polynomial_u", polyFuzz((*Tensor).ShiftedChebyshevPolynomialU)},
	{"shifted_chebyshev_polynomial_v", polyFuzz((*Tensor).ShiftedChebyshevPolynomialV)},
	{"shifted_chebyshev_polynomial_w", polyFuzz((*Tensor).ShiftedChebyshevPolynomialW)},
	{"hermite_polynomial_h", polyFuzz((*Tensor).HermitePolynomialH)},
	{"hermite_polynomial_he", polyFuzz((*Tensor).HermitePolynomialHe)},
	{"laguerre_polynomial_l", polyFuzz((*Tensor).LaguerrePolynomialL)},
	{"legendre_polynomial_p", polyFuzz((*Tensor).LegendrePolynomialP)},
	{"airy_ai", func(x *Tensor, _ float64) *Tensor { return x.AiryAi() }},
}

// polyFuzz is a polynomial of a degree from -1 to 12 that p picks: the
// devices agree to the fuzzer's tolerance there, where at a degree of
// thousands float32's closed forms keep few of float64's digits (the
// degrees past the limits are TestOrthoPolyHostile's).
func polyFuzz(f func(*Tensor, int) *Tensor) func(*Tensor, float64) *Tensor {
	return func(x *Tensor, p float64) *Tensor {
		n := 3
		if !math.IsNaN(p) && !math.IsInf(p, 0) {
			n = int(math.Mod(math.Abs(p)*7, 14)) - 1
		}
		return f(x, n)
	}
}

var fzSpecialBinary = []fzBinary{
	{"zeta", Zeta},
	{"nextafter", (*Tensor).Nextafter},
	{"xlog1py", (*Tensor).Xlog1py},
	{"gammainc", Gammainc},
	{"gammaincc", Gammaincc},
}

func fuzzLinalgNewer(t *testing.T, r *fzReader) {
	a, b, label, upper := linalgOperands(r)
	var call func(a, b *Tensor) *Tensor
	switch r.intn(14) {
	case 0:
		p := []float64{2, 1, 0, 3, 0.5}[r.intn(5)]
		if r.intn(4) == 0 {
			p = r.value()
		}
		label, call = "pdist "+strconv.FormatFloat(p, 'g', -1, 64)+"/"+label, func(a, _ *Tensor) *Tensor { return a.Pdist(p) }
	case 1:
		label, call = "solve left "+strconv.FormatBool(upper)+"/"+label, func(a, b *Tensor) *Tensor { return a.SolveSide(b, upper) }
	case 2:
		driver := []string{"", "gels", "gelsy", "gelsd", "gelss", "gesv"}[r.intn(6)]
		label, call = "lstsq "+driver+"/"+label, func(a, b *Tensor) *Tensor {
			x, res, rank, sv := a.LstsqFull(b, driver)
			return pairOf(pairOf(x, res), pairOf(rank, sv))
		}
	case 3:
		label, call = "lu_factor/"+label, func(a, _ *Tensor) *Tensor { lu, piv := a.LUFactor(); return pairOf(lu, piv) }
	case 4:
		label, call = "lu_factor_ex/"+label, func(a, _ *Tensor) *Tensor {
			lu, piv, info := a.LUFactorEx()
			return pairOf(pairOf(lu, piv), info)
		}
	case 5:
		label, call = "lu/"+label, func(a, _ *Tensor) *Tensor { p, l, u := a.LU(); return pairOf(pairOf(p, l), u) }
	case 6:
		adjoint := r.intn(2) == 0
		label, call = "lu_solve adjoint "+strconv.FormatBool(adjoint)+"/"+label, func(a, b *Tensor) *Tensor {
			lu, piv, _ := a.LUFactorEx()
			return LUSolve(lu, piv, b, upper, adjoint)
		}
	case 7:
		label, call = "lu_unpack/"+label, func(a, _ *Tensor) *Tensor {
			lu, piv, _ := a.LUFactorEx()
			p, l, u := LUUnpack(lu, piv)
			return pairOf(pairOf(p, l), u)
		}
	case 8:
		label, call = "logdet/"+label, func(a, _ *Tensor) *Tensor { return a.LogDet() }
	case 9:
		label, call = "cholesky_inverse/"+label, func(a, _ *Tensor) *Tensor { return a.CholeskyInverse(upper) }
	case 10:
		label, call = "cholesky_ex/"+label, func(a, _ *Tensor) *Tensor { l, info := a.CholeskyEx(upper); return pairOf(l, info) }
	case 11:
		label, call = "inv_ex/"+label, func(a, _ *Tensor) *Tensor { inv, info := a.InvEx(); return pairOf(inv, info) }
	case 12:
		dim := r.dim(a.Rank())
		label, call = "vecdot "+strconv.Itoa(dim)+"/"+label, func(a, b *Tensor) *Tensor { return a.Vecdot(b, dim) }
	default:
		dim := r.dim(a.Rank())
		label, call = "unique_consecutive "+strconv.Itoa(dim)+"/"+label, func(a, _ *Tensor) *Tensor {
			v, inv, counts := a.UniqueConsecutiveDim(dim, true, upper)
			if counts == nil { // not asked for
				return pairOf(v, inv)
			}
			return pairOf(pairOf(v, inv), counts)
		}
	}
	fzEachDevice(t, label, call, a, b)
}
