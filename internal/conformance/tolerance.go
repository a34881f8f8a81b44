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
	defaultTol = map[string]Tol{
		"float32": {RTol: 1e-5, ATol: 1e-6},
		"float64": {RTol: 1e-12, ATol: 1e-12},
	}

	accumulating   = Tol{RTol: 1e-5, ATol: 1e-5}   // float32
	accumulating64 = Tol{RTol: 1e-12, ATol: 1e-12} // float64: 64 terms of O(1) stay far below this

	opTol = map[string]map[string]Tol{
		// Variance subtracts the mean: cancellation costs digits.
		"var": {"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-10, ATol: 1e-12}},
		"std": {"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-10, ATol: 1e-12}},
		// Layer norm is a variance, then a division by it.
		"layer_norm": {"float32": {RTol: 1e-4, ATol: 1e-5}, "float64": {RTol: 1e-10, ATol: 1e-12}},
	}
)

// accumulatingOps are the ops whose results are sums of many terms.
var accumulatingOps = map[string]bool{
	"sum": true, "mean": true, "prod": true, "logsumexp": true, "cumsum": true, "matmul": true,
	"softmax": true, "log_softmax": true, "cross_entropy": true, "nll_loss": true, "mse_loss": true,
}

// Tolerance is the tolerance for op's results of dtype dt.
func Tolerance(op, dt string) Tol {
	if t, ok := opTol[op][dt]; ok {
		return t
	}
	if accumulatingOps[op] {
		if dt == "float32" {
			return accumulating
		}
		return accumulating64
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
