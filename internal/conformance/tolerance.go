package conformance

import "math"

// Tol is how close a float result must be to PyTorch's: |got-want| ≤
// ATol + RTol·|want|. NaN must meet NaN and an infinity the same infinity,
// whatever the tolerance; integers and bools must be equal.
type Tol struct{ RTol, ATol float64 }

// Tolerances, all in one place.
//
// The defaults allow a few ulp: lathe's CPU computes float32 elementwise ops
// in float64 and rounds once, while torch uses float32 (SLEEF) routines good
// to about 1 ulp, so the two differ by an ulp or two and never more.
//
// Ops that add many terms (reductions, matmul, softmax, norms, losses) sum
// in an order that differs from torch's vectorised, pairwise one; their
// rounding error grows with the number of terms and with cancellation, so
// their atol is set against the size of the terms (inputs here are O(1) and
// at most 64 terms), not the size of the result.
var (
	//
	// The 16-bit floats: lathe and torch both compute in float32 and round
	// the result once, so they agree unless their float32 results (an ulp
	// or two apart, as above) straddle a rounding boundary of the 16-bit
	// format: then they are one 16-bit ulp apart, at most 2^-10 of the
	// value for float16 and 2^-7 for bfloat16. The atol covers results
	// near zero, whose spacing is finer than the rtol says. A sum of up to
	// 64 terms of O(1) (reductions, matmul, softmax, conv) is rounded once
	// as well, from float32 sums in another order: one ulp of the result,
	// with an atol of one ulp of the terms for cancellation.
	defaultTol = map[string]Tol{
		"float32":  {RTol: 1e-5, ATol: 1e-6},
		"float64":  {RTol: 1e-12, ATol: 1e-12},
		"float16":  {RTol: 1e-3, ATol: 1e-6},
		"bfloat16": {RTol: 8e-3, ATol: 1e-6},
	}

	accumulating     = Tol{RTol: 1e-5, ATol: 1e-5}   // float32
	accumulating64   = Tol{RTol: 1e-12, ATol: 1e-12} // float64: 64 terms of O(1) stay far below this
	accumulatingHalf = map[string]Tol{
		"float16":  {RTol: 1e-3, ATol: 1e-3},
		"bfloat16": {RTol: 8e-3, ATol: 8e-3},
	}

	opTol = map[string]map[string]Tol{
		// Variance subtracts the mean: cancellation costs digits.
		"var": {"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-10, ATol: 1e-12}},
		"std": {"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-10, ATol: 1e-12}},
		// Layer norm is a variance, then a division by it.
		"layer_norm": {"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-10, ATol: 1e-12}},
		// So are batch and group norm; their running statistics are a variance.
		"batch_norm":       {"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-10, ATol: 1e-12}},
		"batch_norm_stats": {"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-10, ATol: 1e-12}},
		"group_norm":       {"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-10, ATol: 1e-12}},
		// Solves and factorizations (linalg.json) lose digits in proportion
		// to the condition number: lathe's elimination and LAPACK's blocked
		// one round differently, each within about cond·ε of the exact
		// result. The float32 cases have condition numbers below about 50,
		// the float64 ones up to 4.8e5 (the Hilbert matrix of order 5).
		"cholesky":         linalgTol,
		"solve_triangular": linalgTol,
		"cholesky_solve":   linalgTol,
		"solve":            linalgTol,
		"inv":              linalgTol,
		"det":              linalgTol,
		"slogdet":          linalgTol,
		"qr":               linalgTol,
		// Jacobi's rotations (linalg2.json) round differently from
		// LAPACK's: each result within a few n·ε of the exact one, and
		// the eigenvectors of close eigenvalues (1e-3 apart) lose digits
		// in proportion to 1/gap.
		"eigh": linalgTol, "eigh_inv": linalgTol, "eigvalsh": linalgTol, "svd": linalgTol, "svd_inv": linalgTol,
		"svdvals": linalgTol, "pinv": linalgTol, "matrix_rank": linalgTol, "cond": linalgTol, "matrix_norm": linalgTol,
		"matrix_power": linalgTol, "multi_dot": linalgTol, "matrix_exp": linalgTol, "lstsq": linalgTol,
		// polygamma(1, x) is trigamma, whose float64 digits torch's
		// calc_trigamma does not have: its series stops at 1/(42x⁷) from
		// x = 6 on, up to 2e-8 of the value off, where lathe's goes on to
		// 10 and 1/x¹⁵ (ops_gamma_test.go checks it against mpmath).
		"polygamma": {"float64": {RTol: 5e-8, ATol: 1e-12}},
		// torch's Temme expansion divides by √(2πa) with π in float32,
		// 1.4e-8 of the expansion's sum off (4e-10 of P at a = 25), where
		// lathe's agrees with mpmath to 1e-14 (ops_igamma_test.go).
		"igamma": {"float64": {RTol: 1e-9, ATol: 1e-9}}, "igammac": {"float64": {RTol: 1e-9, ATol: 1e-9}},
	}
	linalgTol = map[string]Tol{"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-9, ATol: 1e-12}}
	// An orthogonal polynomial of degree n in float32 (wgpu's and cuda's
	// arithmetic, as torch's cuda) is up to about n·κ·ε off, κ its
	// condition at x: the Chebyshev kinds' closed forms multiply acos's
	// last bit by n and divide by sin or cos of θ/2, small near ±1 (V_11
	// at -0.96 is 1.3e-5 of its value off on wgpu:0); ops_orthopoly_test.go
	// holds every device to exact values in those terms.
	polyTol = map[string]Tol{"float32": {RTol: 1e-4, ATol: 1e-5}}
)

func init() {
	for _, op := range []string{"chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
		"shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
		"shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"} {
		opTol["special_"+op] = polyTol
	}
}

// halfVariance are the ops of opTol whose 16-bit results take the
// accumulating tolerance: a variance (or a convolution, a sum of many
// products) is rounded once from float32 too.
var halfVariance = map[string]bool{"var": true, "std": true, "layer_norm": true, "conv2d": true, "avg_pool2d": true}

// accumulatingOps are the ops whose results are sums of many terms.
var accumulatingOps = map[string]bool{
	"sum": true, "mean": true, "prod": true, "logsumexp": true, "cumsum": true, "matmul": true,
	"cumprod": true, "logcumsumexp": true,
	"softmax": true, "log_softmax": true, "cross_entropy": true, "nll_loss": true, "mse_loss": true,
	"nansum": true, "nanmean": true, "softmin": true, "tensordot": true,
}

// Tolerance is the tolerance for op's results of dtype dt.
func Tolerance(op, dt string) Tol {
	if t, ok := opTol[op][dt]; ok {
		return t
	}
	if accumulatingOps[op] {
		switch dt {
		case "float32":
			return accumulating
		case "float16", "bfloat16":
			return accumulatingHalf[dt]
		}
		return accumulating64
	}
	if halfVariance[op] {
		if t, ok := accumulatingHalf[dt]; ok {
			return t
		}
	}
	return defaultTol[dt]
}

// Close reports whether got is within tol of want, with NaN equal to NaN and
// infinities exact.
func (tol Tol) Close(got, want float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	return math.Abs(got-want) <= tol.ATol+tol.RTol*math.Abs(want)
}

// Gradient tolerances, all in one place.
//
// A gradient is several ops applied to the upstream gradient (the rule's
// formula, then the sums that undo broadcasting), computed in another order
// than torch's, and the rules of reductions, matmul and the nn composites
// sum up to 64 terms and cancel (var, layer_norm): so the float64 rtol is
// the forward var/layer_norm one (1e-10), and float32 the forward
// layer_norm one. An op that needs more goes in gradOpTol. A Hessian-vector
// product is a gradient of a gradient: twice the ops, the allowance doubled.
//
// A finite difference is checked against the analytic gradient with its
// own, much looser tolerance: a central difference with step h = 1e-6 has a
// truncation error of about h²·f‴ (1e-12 here) and a rounding error of about
// ε·Σ|out·upstream|/h, a few 1e-9 for these O(1)-to-O(100) values (the
// largest seen over all cases is 8e-9, for expm1). Its atol is a decade above.
//
// Measured on the CPU with the elementwise rules: float64 gradients within
// 7e-15 of torch's, float32 ones within 1e-6.
//
// The 16-bit cases (grad_narrow.json) hold torch's float32 gradients
// rounded once, while lathe's rule is several ops that each round to the
// dtype (reciprocal's -g/x² is three): measured on the cpu and wgpu:0,
// float16 gradients are within one float16 ulp (2^-10 relative; the atol
// is one ulp of the O(1) terms that cancel in softmax's rule), bfloat16
// ones within two bfloat16 ulps (2^-7 each; one ulp failed reciprocal's
// and a broadcast division's).
var (
	gradTol = map[string]Tol{
		"float32":  {RTol: 1e-4, ATol: 1e-5},
		"float64":  {RTol: 1e-10, ATol: 1e-12},
		"float16":  {RTol: 1e-3, ATol: 5e-4},
		"bfloat16": {RTol: 1.6e-2, ATol: 8e-3},
	}
	hvpTol = map[string]Tol{
		"float32": {RTol: 2e-4, ATol: 2e-5},
		"float64": {RTol: 2e-10, ATol: 2e-12},
	}
	// Per-op overrides of gradTol, for rules that accumulate or cancel more
	// than a few ops do, or whose reference is torch's own approximation:
	// digamma's gradient and lgamma's second derivative are torch's
	// trigamma (calc_trigamma), whose asymptotic series stops at 1/(42x⁷)
	// from x = 6 on, 1/(30x⁹) short: up to 3.3e-9 at 6, 2e-8 of the value,
	// where lathe's trigamma kernel (to 10 and 1/x¹⁵) agrees with finite
	// differences and with mpmath. So are polygamma's (n = 0: digamma's
	// gradient) and multigammaln's second derivative (lgamma's).
	gradOpTol = map[string]map[string]Tol{"digamma": {"float64": {RTol: 1e-7, ATol: 1e-9}},
		"polygamma": {"float64": {RTol: 1e-7, ATol: 1e-9}}}
	hvpOpTol = map[string]map[string]Tol{"lgamma": {"float64": {RTol: 1e-7, ATol: 1e-9}},
		"polygamma": {"float64": {RTol: 1e-7, ATol: 1e-9}}, "special_multigammaln": {"float64": {RTol: 1e-7, ATol: 1e-9}}}

	fdTol = Tol{RTol: 1e-6, ATol: 1e-7}
)

// NarrowedTolerance is for a float64 case run in float32 (Case.Narrow) and
// compared with the float64 reference: the inputs are rounded to float32
// (2^-24 relative) and every op after rounds again, so results move by a
// few float32 ulp times the op's condition; second derivatives chain twice
// as many ops. rtol 1e-5 is about 170 ulp; the atol covers cancellation.
//
// Measured on wgpu:0 (lavapipe) over every narrowed case, the largest
// atol needed beside rtol 1e-5: forward results 3e-7 (conv1d; matmul 5e-8,
// softmax and log_softmax 4e-8 with the stress cases' rows 1000 apart and
// 3000 long), gradients 3e-7 (conv2d), Hessian-vector products 6e-7
// (batch_norm) and 3e-7 (silu); interpolation, whose bicubic taps cancel,
// 1.4e-6 forward, 5e-7 for gradients and 9e-7 for Hessian-vector products;
// grid sampling, whose second derivative in the grid scales a difference of
// pixels by two slopes, 2.3e-6 for a bilinear Hessian-vector product (3-d,
// border) and 3.7e-5 for a bicubic one, whose 16 taps' second derivatives
// (up to 7.5·scale² each) cancel to a result near 0.2.
// Each allowance below is about three times the largest it covers.
func NarrowedTolerance(op string, hvp bool) Tol {
	if t, ok := narrowedOpTol[op]; ok {
		return t
	}
	if hvp {
		return Tol{RTol: 1e-5, ATol: 2e-6}
	}
	return Tol{RTol: 1e-5, ATol: 1e-6}
}

// narrowedOpTol are the ops whose narrowed results need more than the
// default (forward, gradient and second order alike).
var narrowedOpTol = map[string]Tol{
	// cdist's matrix-product form (p = 2, more than 25 rows) cancels
	// |x|² + |y|² - 2x·y, as torch's does: its Hessian-vector product in
	// float32 was 6.7e-6 off the float64 one on wgpu:0.
	"cdist":           {RTol: 1e-5, ATol: 2e-5},
	"interpolate":     {RTol: 1e-5, ATol: 4e-6},
	"interpolate_sq":  {RTol: 1e-5, ATol: 4e-6},
	"interpolate_vjp": {RTol: 1e-5, ATol: 4e-6},
	"grid_sample":     {RTol: 1e-5, ATol: 1.2e-4},
	"stn":             {RTol: 1e-5, ATol: 7e-6},
	// mish's second derivative sums terms of x·sigmoid(x) (up to ±8 here)
	// in float32 through the composite's softplus, tanh and product
	// rules: 3.2e-6 off the float64 value near its zero crossing.
	"mish": {RTol: 1e-5, ATol: 1e-5},
	// The derivatives of singular vectors divide by s_j² - s_i² (and
	// their second derivatives by its square), which multiplies float32's
	// rounding of the Jacobi results: svd_uvh's Hessian-vector product in
	// float32 was 1.8e-4 of the value off the float64 one, on the cpu and
	// wgpu:0 alike (with other inputs, singular values 0.3 apart, svd_uu's
	// was 2e-3 off: the allowance is for these cases' inputs).
	"svd_uvh": linalgNarrowed, "svd_uu": linalgNarrowed, "svd_vv": linalgNarrowed, "svd_full_uu": linalgNarrowed,
	// matrix_exp's squarings double the relative rounding each: its
	// Hessian-vector product (‖A‖₁ about 5, one squaring) was 2.7e-5 off.
	"matrix_exp": {RTol: 1e-4, ATol: 1e-5},
	"svdvals":    linalgNarrowed, "eigh_vv": linalgNarrowed, "pinv": linalgNarrowed, "cond": linalgNarrowed,
}

var linalgNarrowed = Tol{RTol: 6e-4, ATol: 1e-5}

// FiniteDiffStep is the step h of the central differences.
const FiniteDiffStep = 1e-6

// GradTolerance is the tolerance for op's gradients of dtype dt.
func GradTolerance(op, dt string) Tol {
	if t, ok := gradOpTol[op][dt]; ok {
		return t
	}
	return gradTol[dt]
}

// HVPTolerance is the tolerance for op's Hessian-vector products of dtype dt.
func HVPTolerance(op, dt string) Tol {
	if t, ok := hvpOpTol[op][dt]; ok {
		return t
	}
	return hvpTol[dt]
}

// FiniteDiffTolerance is how close a float64 gradient must be to its central
// difference.
func FiniteDiffTolerance(op string) Tol { return fdTol }
