package lathe

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Gammainc is the regularized lower incomplete gamma function P(a, x) =
// γ(a, x)/Γ(a), the probability that a gamma variable of shape a and scale
// 1 is below x, as torch.special.gammainc(a, x) (torch.igamma): a and x
// broadcast and promote as Add's, and must be floats, as torch's. Its
// values at the domain's edges are torch's: NaN where a or x is negative
// or NaN, and where both are 0 or both +Inf; 1 for a = 0 and x > 0; 0 for
// x = 0 and for a = +Inf; 1 for x = +Inf.
//
// Its gradient is x's, x^(a-1)·e^-x/Γ(a), whose own gradients (in x and,
// through Γ(a), in a) follow; a gets none, as torch's refuses to
// differentiate a (its derivative in a has no closed form).
//
// The algorithm is torch's (SciPy's): Temme's uniform expansion where a
// is past 20 and x near it, else a power series or a continued fraction,
// each at most 2000 terms. Two places keep digits torch loses: ln Γ(1 + a)
// for a tiny a, and ln(1 + s) - s for a small s, each by its series
// (torch's Q(1e-300, 1) is 3.6 times too large, its Q(1e8, 1.0002e8) 2e-12
// off; lathe's are within 2e-14), and P and Q are kept within [0, 1]
// (torch's P(1e-300, 1) is 1 + 2e-14). The cpu computes float32 in float64; cuda and
// wgpu compute it in float32, as torch's cuda; float16 and bfloat16 are
// computed in float32 and rounded once.
func Gammainc(a, x *Tensor) *Tensor { return incompleteGamma(ops.Igamma, a, x) }

// Gammaincc is the regularized upper incomplete gamma function Q(a, x) =
// 1 - P(a, x), as torch.special.gammaincc(a, x) (torch.igammac), computed
// for itself where 1 - P would cancel, so that its tail keeps its digits
// (Q(1.5, 40) = 3.07e-17). Its gradient is minus Gammainc's; the rest is
// as Gammainc.
func Gammaincc(a, x *Tensor) *Tensor { return incompleteGamma(ops.Igammac, a, x) }

func incompleteGamma(op *dispatch.Op[dispatch.None], a, x *Tensor) *Tensor {
	if err := a.floatsOnlyArg(op.Name, "a"); err != nil {
		return failed(err)
	}
	if err := x.floatsOnlyArg(op.Name, "x"); err != nil {
		return failed(err)
	}
	return binary(op, a, x)
}
