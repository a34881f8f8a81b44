package conformance

import "github.com/lathe-ml/lathe"

// The table entries of torch.special's functions that lathe builds as
// composites (special.json and grad_special.json, made by
// build/torchref/special.py): erfcx, entr, ndtr, log_ndtr, ndtri,
// spherical_bessel_j0, zeta, polygamma (attribute n), multigammaln
// (attribute p) and nextafter.

func init() {
	for k, f := range specialOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_special.go and another table")
		}
		ops[k] = f
	}
}

var specialOps = map[string]opFunc{
	"special_erfcx":                          unary((*lathe.Tensor).Erfcx),
	"special_entr":                           unary((*lathe.Tensor).Entr),
	"special_ndtr":                           unary((*lathe.Tensor).Ndtr),
	"special_log_ndtr":                       unary((*lathe.Tensor).LogNdtr),
	"special_ndtri":                          unary((*lathe.Tensor).Ndtri),
	"special_spherical_bessel_j0":            unary((*lathe.Tensor).SphericalBesselJ0),
	"special_zeta":                           binary(lathe.Zeta),
	"igamma":                                 binary(lathe.Gammainc),
	"special_modified_bessel_k0":             unary((*lathe.Tensor).ModifiedBesselK0),
	"special_bessel_j0":                      unary((*lathe.Tensor).BesselJ0),
	"special_bessel_j1":                      unary((*lathe.Tensor).BesselJ1),
	"special_bessel_y0":                      unary((*lathe.Tensor).BesselY0),
	"special_bessel_y1":                      unary((*lathe.Tensor).BesselY1),
	"special_modified_bessel_k1":             unary((*lathe.Tensor).ModifiedBesselK1),
	"special_scaled_modified_bessel_k0":      unary((*lathe.Tensor).ScaledModifiedBesselK0),
	"special_scaled_modified_bessel_k1":      unary((*lathe.Tensor).ScaledModifiedBesselK1),
	"igammac":                                binary(lathe.Gammaincc),
	"nextafter":                              binary((*lathe.Tensor).Nextafter),
	"special_airy_ai":                        unary((*lathe.Tensor).AiryAi),
	"special_chebyshev_polynomial_t":         degree((*lathe.Tensor).ChebyshevPolynomialT),
	"special_chebyshev_polynomial_u":         degree((*lathe.Tensor).ChebyshevPolynomialU),
	"special_chebyshev_polynomial_v":         degree((*lathe.Tensor).ChebyshevPolynomialV),
	"special_chebyshev_polynomial_w":         degree((*lathe.Tensor).ChebyshevPolynomialW),
	"special_shifted_chebyshev_polynomial_t": degree((*lathe.Tensor).ShiftedChebyshevPolynomialT),
	"special_shifted_chebyshev_polynomial_u": degree((*lathe.Tensor).ShiftedChebyshevPolynomialU),
	"special_shifted_chebyshev_polynomial_v": degree((*lathe.Tensor).ShiftedChebyshevPolynomialV),
	"special_shifted_chebyshev_polynomial_w": degree((*lathe.Tensor).ShiftedChebyshevPolynomialW),
	"special_hermite_polynomial_h":           degree((*lathe.Tensor).HermitePolynomialH),
	"special_hermite_polynomial_he":          degree((*lathe.Tensor).HermitePolynomialHe),
	"special_laguerre_polynomial_l":          degree((*lathe.Tensor).LaguerrePolynomialL),
	"special_legendre_polynomial_p":          degree((*lathe.Tensor).LegendrePolynomialP),
	"polygamma": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Polygamma(a.Int("n")))
	},
	"special_multigammaln": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Multigammaln(a.Int("p")))
	},
}

// degree is an orthogonal polynomial's op, of degree attribute n.
func degree(f func(*lathe.Tensor, int) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(f(in[0], a.Int("n"))) }
}
