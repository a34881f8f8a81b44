package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The gamma family and the Hurwitz zeta function run as one kernel per
// function on every backend (dispatch/ops/gamma.go), each differentiable
// to any order by its rule: lgamma's gradient is digamma, digamma's
// polygamma(1, x), polygamma(n, x)'s polygamma(n + 1, x), zeta(x, q)'s
// (in q) -x·zeta(x + 1, q). float16 and bfloat16 are computed in float32
// and rounded once.

// Lgamma is ln|Γ(x)|, as torch.lgamma: +Inf at 0, at the negative integers
// and at ±Inf. Its gradient is Digamma. Floats only.
func (x *Tensor) Lgamma() *Tensor { return x.floatKernel(ops.Lgamma) }

// Digamma is ψ(x) = Γ'(x)/Γ(x), the derivative of Lgamma, as
// torch.digamma: -Inf at +0, +Inf at -0, NaN at the negative integers
// and at -Inf. Its gradient is Polygamma(1, x). Floats only.
func (x *Tensor) Digamma() *Tensor { return x.floatKernel(ops.Digamma) }

// Polygamma is the n-th derivative of the digamma function, as
// torch.polygamma(n, x): Digamma for n = 0, then torch's trigamma formula
// for n = 1 and (-1)^(n+1)·n!·Zeta(n + 1, x) for n ≥ 2, with its values at
// the poles (0 and the negative integers: +Inf, -Inf or NaN as torch's
// formula gives) and at ±Inf. Its gradient is Polygamma(n + 1, x).
// Integers and bool are promoted to float32. A negative n is ErrValue.
//
// Trigamma (n = 1) is good to float64's digits, where torch's formula is
// up to 2e-8 off; its reflection below 1/2 is in x's dtype, as torch's,
// so that float32 keeps torch's finite values at the poles. From n = 2
// the cpu computes float32 in float64, as torch's cpu does; cuda and wgpu
// compute it in float32, as torch's cuda, which loses digits where a
// negative x's regrouped sums cancel (at a half-integer they cancel
// exactly: polygamma(4, -1.5) to 3e-8, polygamma(8, -3.5) to 2e-7).
func (x *Tensor) Polygamma(n int) *Tensor {
	const op = "polygamma"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if n < 0 {
		return failed(errorf(op, ErrValue, "n", "is "+strconv.Itoa(n)+", but polygamma(n, x) is the n-th derivative of digamma (as torch's, no negative n)",
			"give n ≥ 0 (0 is Digamma)"))
	}
	if !x.t.DType.IsFloat() {
		return apply(opPolygammaPromoted, n, x)
	}
	return polygamma(x, n)
}

// polygamma is Polygamma of a float x.
func polygamma(x *Tensor, n int) *Tensor {
	if n == 0 {
		return unary(ops.Digamma, x)
	}
	return apply(ops.Polygamma, ops.PolygammaOf(n), x)
}

// opPolygammaPromoted is Polygamma of integers or bool, cast to float32.
var opPolygammaPromoted = compositeVariant("polygamma", "promoted", []string{"x"}, func(in []*Tensor, n int) *Tensor {
	return polygamma(in[0].Cast(Float32), n)
})

// floatKernel runs the unary kernel op on x, a float tensor (integers
// are refused with lathe's own message, not promoted).
func (x *Tensor) floatKernel(op *dispatch.Op[ops.Params]) *Tensor {
	if err := x.floatsOnly(op.Name); err != nil {
		return failed(err)
	}
	return unary(op, x)
}

// Zeta is the Hurwitz zeta function Σ_{k≥0} (q + k)^-x, as
// torch.special.zeta(x, q) (zeta(x, 1) is Riemann's): x and q broadcast,
// integers promoted to float32 (as Div's). +Inf at x = 1 and where q is 0
// or a negative integer; NaN for x < 1, and where q < 0 and x is not an
// integer. Its gradient is q's, -x·zeta(x + 1, q); x gets none (torch's
// refuses to differentiate x).
//
// The sum is torch's (Cephes's): ten terms, then the Euler–Maclaurin tail
// with twelve Bernoulli terms; where Cephes sums as many terms as a
// negative q is far below 0, lathe regroups them into three sums of a
// positive q (the same terms), so that every element takes the same
// bounded work. Both lose the digits that the cancelling terms of a q far
// below 0 share. The cpu computes float32 in float64, as torch's cpu
// does; cuda and wgpu compute it in float32, as torch's cuda, which loses
// more there, except at a half-integer q, where zeta(x, r) and zeta(x, 1 -
// r) are one sum and cancel exactly, and where the terms fall below
// float32's normal range (zeta(5, 1e8): 5e-6).
func Zeta(x, q *Tensor) *Tensor {
	if err := x.CheckArg(ops.Zeta.Name, "x"); err != nil {
		return failed(err)
	}
	return binary(ops.Zeta, x, q)
}
