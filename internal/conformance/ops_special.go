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
	"special_erfcx":                     unary((*lathe.Tensor).Erfcx),
	"special_entr":                      unary((*lathe.Tensor).Entr),
	"special_ndtr":                      unary((*lathe.Tensor).Ndtr),
	"special_log_ndtr":                  unary((*lathe.Tensor).LogNdtr),
	"special_ndtri":                     unary((*lathe.Tensor).Ndtri),
	"special_spherical_bessel_j0":       unary((*lathe.Tensor).SphericalBesselJ0),
	"special_zeta":                      binary(lathe.Zeta),
	"igamma":                            binary(lathe.Gammainc),
	"special_modified_bessel_k0":        unary((*lathe.Tensor).ModifiedBesselK0),
	"special_bessel_j0":                 unary((*lathe.Tensor).BesselJ0),
	"special_bessel_j1":                 unary((*lathe.Tensor).BesselJ1),
	"special_bessel_y0":                 unary((*lathe.Tensor).BesselY0),
	"special_bessel_y1":                 unary((*lathe.Tensor).BesselY1),
	"special_modified_bessel_k1":        unary((*lathe.Tensor).ModifiedBesselK1),
	"special_scaled_modified_bessel_k0": unary((*lathe.Tensor).ScaledModifiedBesselK0),
	"special_scaled_modified_bessel_k1": unary((*lathe.Tensor).ScaledModifiedBesselK1),
	"igammac":                           binary(lathe.Gammaincc),
	"nextafter":                         binary((*lathe.Tensor).Nextafter),
	"polygamma": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Polygamma(a.Int("n")))
	},
	"special_multigammaln": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Multigammaln(a.Int("p")))
	},
}
